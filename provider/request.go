package provider

import (
	"bytes"
	"encoding/json"
	"io"

	"github.com/agentctx/agentctx/transcript"

	"github.com/agentctx/agentctx/internal/jsonobj"
)

// Request is a provider-ready Anthropic Messages API request body. [Request.MarshalJSON]
// writes exactly the wire shape, with a fixed key order, so that the same Request always gives
// the same bytes.
type Request struct {
	Model      string
	MaxTokens  int
	System     []*transcript.Text
	Messages   []Message
	Tools      []Tool
	ToolChoice *ToolChoice
	Thinking   *Thinking
	// Betas are the anthropic-beta header values the request needs, e.g. cache editing when
	// it carries cache_edits (see [github.com/agentctx/agentctx.MicrocompactConfig.CacheEditingBeta]). They travel as an
	// HTTP header, not in the body: MarshalJSON leaves them out.
	Betas []string
	// ContextManagement is the request's "context_management": what the provider manages
	// on its side ([github.com/agentctx/agentctx.ProviderContextConfig]), as raw JSON; nil sends none.
	ContextManagement json.RawMessage

	// Memo is the encode memo MarshalJSON and WriteTo copy the parts they encoded before
	// from (nil: every part is encoded). A Pipeline sets its own on the requests it builds;
	// a caller that builds the requests of a conversation itself can share one the same way.
	Memo *EncodeMemo
}

// ToolChoice is the request's "tool_choice": "auto", "any", "tool" (with Name) or "none".
type ToolChoice struct {
	Type string `json:"type"`
	Name string `json:"name,omitempty"`
}

// Message is one message of a request. Content blocks carry no transcript-only fields.
type Message struct {
	Role    transcript.Role
	Content []transcript.Block
}

// Tool is a tool definition as the caller declares it to the provider. Definition is the
// tool's JSON object ({"name","description","input_schema"} or a server tool such as
// {"type":"web_search_20250305","name":"web_search"}); Name must match its "name".
type Tool struct {
	Name         string
	Definition   json.RawMessage
	CacheControl *transcript.CacheControl
}

// Thinking is the request's "thinking" setting.
type Thinking struct {
	Type         string `json:"type"` // "enabled", "disabled" or "adaptive"
	BudgetTokens int    `json:"budget_tokens,omitempty"`
}

// Enabled reports whether thinking blocks are requested.
func (t *Thinking) Enabled() bool {
	return t != nil && (t.Type == "enabled" || t.Type == "adaptive")
}

// MarshalJSON writes the request body: model, max_tokens, system, messages, tools,
// tool_choice, thinking, context_management. A request built by [github.com/agentctx/agentctx.Pipeline.Prepare] is encoded with the
// Pipeline's memo: each message (and the system prompt and the tools) whose content the
// Pipeline has encoded before is copied, not encoded again, so a steady turn encodes only its
// new exchange. The bytes are the same either way.
func (r Request) MarshalJSON() ([]byte, error) {
	return encodeRequest(&r, r.Memo)
}

// AppendJSON appends the bytes [Request.MarshalJSON] returns to dst and returns the extended
// buffer; on an error, dst as it was. It lets a caller keep one buffer for a conversation's
// bodies: once the provider has read a turn's body, body[:0] takes the next one, so that a
// steady turn encodes into memory it already has instead of a new body the size of the
// request, and adds no garbage for the collector to find. The memo is used as MarshalJSON
// uses it.
func (r Request) AppendJSON(dst []byte) ([]byte, error) {
	return appendRequest(dst, &r, r.Memo)
}

// WriteTo writes the bytes [Request.MarshalJSON] returns to w, in pieces of about 64 KB,
// without ever holding the whole body. Like MarshalJSON it copies the parts the Pipeline's
// memo holds, but it stores none of the parts it encodes: it suits a process that builds one
// request and exits (the agentctx CLI), whereas a caller that prepares the conversation's next
// turn too should use MarshalJSON, which keeps each part's encoding for that turn. On an
// error (w's, or a block that does not encode) the pieces written before it stay written, and
// the count says how many bytes they hold.
func (r Request) WriteTo(w io.Writer) (int64, error) {
	return encodeTo(w, &r, r.Memo)
}

func marshalRequestBlock(b transcript.Block) ([]byte, error) {
	if ce, ok := b.(*transcript.CacheEdits); ok {
		edits, err := jsonobj.Marshal(ce.Edits)
		if err != nil {
			return nil, err
		}
		return append(append([]byte(`{"type":"cache_edits","edits":`), edits...), '}'), nil
	}
	return transcript.MarshalBlock(b)
}

func (t Tool) marshal() ([]byte, error) {
	if t.CacheControl == nil {
		var buf bytes.Buffer
		if err := json.Compact(&buf, t.Definition); err != nil {
			return nil, err
		}
		return buf.Bytes(), nil
	}
	var def map[string]json.RawMessage
	if err := json.Unmarshal(t.Definition, &def); err != nil {
		return nil, err
	}
	cc, err := jsonobj.Marshal(t.CacheControl)
	if err != nil {
		return nil, err
	}
	def["cache_control"] = cc
	return jsonobj.Marshal(def)
}

// Indent returns the request body indented for humans (CLI output, golden files).
func (r Request) Indent() ([]byte, error) {
	b, err := r.MarshalJSON()
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, b, "", "  "); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}
