package provider

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentctx/agentctx/internal/jsonobj"
)

// TestStubToolBytes checks the stub definitions normalize writes directly against
// jsonobj.Marshal of the same object, for names that need every kind of escape.
func TestStubToolBytes(t *testing.T) {
	for _, name := range []string{
		"Bash", "mcp__github__create_pull_request", "", `quote " and \ backslash`, "<html> & ampersand",
		"tab\tnewline\ncontrol\x01", "naïve ünïcode 工具", "invalid \xff utf-8", "separators \u2028 \u2029",
	} {
		want, err := jsonobj.Marshal(struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			InputSchema json.RawMessage `json:"input_schema"`
		}{name, stubToolDescription, json.RawMessage(`{"type":"object"}`)})
		require.NoError(t, err)
		got := StubTool(name)
		assert.Equal(t, string(want), string(got.Definition), "%q", name)
		assert.Equal(t, name, got.Name)
	}
}
