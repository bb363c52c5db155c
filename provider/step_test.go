package provider

import (
	"encoding/json"
	"testing"

	"github.com/agentctx/agentctx/transcript"

	"github.com/stretchr/testify/assert"
)

// TestStepPositions: breakpoints and cache edits by position, in order, and stubs told from a
// caller's tool of the same name by their definition.
func TestStepPositions(t *testing.T) {
	marked := &transcript.Text{Text: "b", CacheControl: transcript.Ephemeral()}
	edits := &transcript.CacheEdits{Edits: []transcript.CacheEdit{{Type: "delete", CacheReference: "t1"}}}
	r := Request{
		Messages: []Message{
			{Role: transcript.RoleUser, Content: []transcript.Block{text("a"), marked}},
			{Role: transcript.RoleAssistant, Content: []transcript.Block{text("c")}},
			{Role: transcript.RoleUser, Content: []transcript.Block{text("d"), edits}},
		},
		Tools: []Tool{
			StubTool("Bash"),
			{Name: "Read", Definition: json.RawMessage(`{"name":"Read","description":"reads","input_schema":{"type":"object"}}`)},
			StubTool("Grep"),
		},
	}
	assert.Equal(t, []Breakpoint{{Position{Message: 0, Block: 1}, marked.CacheControl}}, r.CacheBreakpoints())
	assert.Equal(t, []Position{{Message: 2, Block: 1}}, r.CacheEdits())
	assert.Equal(t, []string{"Bash", "Grep"}, r.Stubs())
	assert.Empty(t, (&Request{}).Stubs())
}
