package simulate

import (
	"strings"
	"testing"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/transcript"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSessionToolsAreNormalizeStubs: the tools a simulation declares up front are, byte for
// byte, the stubs normalize declares for the tools a history calls without a definition, so
// that declaring them changes no request.
func TestSessionToolsAreNormalizeStubs(t *testing.T) {
	const session = `{"type":"user","uuid":"u1","parentUuid":null,"message":{"role":"user","content":"Look around."}}
{"type":"assistant","uuid":"a1","parentUuid":"u1","message":{"id":"m1","role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Grep","input":{}},{"type":"tool_use","id":"t2","name":"mcp__github__search_issues","input":{}}]}}
{"type":"user","uuid":"u2","parentUuid":"a1","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"none"},{"type":"tool_result","tool_use_id":"t2","content":"none"}]}}
`
	tr, err := transcript.Read(strings.NewReader(session), "tools.jsonl", transcript.ReadOptions{})
	require.NoError(t, err)
	p, err := agentctx.New(agentctx.Config{Model: "claude-sonnet-4-5", Tokens: agentctx.EstimateCounter{}})
	require.NoError(t, err)
	res, err := p.Prepare(t.Context(), agentctx.Input{Records: tr.Records})
	require.NoError(t, err)
	declared := sessionTools(tr.Records)
	require.Len(t, declared, 2)
	got := map[string]string{}
	for _, tool := range res.Request.Tools {
		got[tool.Name] = string(tool.Definition)
	}
	for _, tool := range declared {
		assert.Equal(t, got[tool.Name], string(tool.Definition), tool.Name)
	}
}
