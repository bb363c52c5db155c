package provider

import "github.com/agentctx/agentctx/internal/jsonobj"

// StubTool is the definition agentctx's normalize declares for a tool the history uses but
// Input.Tools lacks: an empty schema and a description telling the model not to call it. A caller that
// declares such tools up front with it (as the simulator does) keeps the tool list, the start
// of the cached prefix, the same from turn to turn, and gets the request normalize would have
// built. It is the JSON jsonobj.Marshal gives for the object {name, description,
// input_schema}, written directly: a turn declares its stubs anew.
func StubTool(name string) Tool {
	def := make([]byte, 0, len(`{"name":`)+len(name)+2+len(stubToolRest))
	def = append(def, `{"name":`...)
	def = jsonobj.AppendString(def, name)
	def = append(def, stubToolRest...)
	return Tool{Name: name, Definition: def}
}

// stubToolRest is what follows a stub's name in its definition.
var stubToolRest = string(jsonobj.AppendString([]byte(`,"description":`), stubToolDescription)) + `,"input_schema":{"type":"object"}}`

// stubToolDescription tells the model a stub is not to be called.
const stubToolDescription = "Not available in this session: declared only because earlier messages of the conversation call it. Do not call it."
