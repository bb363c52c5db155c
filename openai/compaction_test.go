package openai_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/openai"
	"github.com/agentctx/agentctx/session"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// compactionItem is a compaction output item as the Responses API returns it.
const compactionItem = `{"type":"compaction","id":"cmp_01","encrypted_content":"gAAAAB-compacted-context"}`

// TestResponsesServerCompaction: with the server strategy the Responses request asks for
// compaction at the library's threshold; the answer's compaction item starts the next
// request, sent back as it came, with nothing before it.
func TestResponsesServerCompaction(t *testing.T) {
	s := newResponsesServer(t, func(w http.ResponseWriter, _ *http.Request, n int) {
		if n == 0 {
			writeJSON(w, 200, fmt.Sprintf(`{"id":"resp_c1","object":"response","created_at":%d,"status":"completed","model":"gpt-5-mini",`+
				`"output":[%s,{"type":"message","id":"msg_c1","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Compacted; going on.","annotations":[]}]}],`+
				`"error":null,"incomplete_details":null,"parallel_tool_calls":true,"store":false,`+
				`"usage":{"input_tokens":9000,"input_tokens_details":{"cached_tokens":0},"output_tokens":20,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":9020}}`, created, compactionItem))
			return
		}
		writeJSON(w, 200, respAnswer{id: "resp_c2", text: "Done.", status: "completed", input: 9100, output: 3}.json())
	})
	now := func() time.Time { return time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC) }
	p, err := agentctx.New(agentctx.Config{Model: "gpt-5-mini", ContextWindow: 200_000, MaxOutputTokens: 4096, Tokens: agentctx.EstimateCounter{}, Now: now,
		ProviderContext: agentctx.ProviderContextConfig{Strategy: agentctx.CompactServer, ClearThinking: &agentctx.ClearThinking{}}})
	require.NoError(t, err)
	c := openai.NewClient(s.sdkClient())
	sess := session.New(session.Options{ID: "s-compaction", Now: now})
	_, err = sess.User("Refactor the parser.")
	require.NoError(t, err)
	res, err := sess.Prepare(t.Context(), p, agentctx.Input{})
	require.NoError(t, err)
	_, drops, err := openai.ResponsesParams(res.Request, openai.Options{})
	require.NoError(t, err)
	assert.Equal(t, []openai.Drop{{Path: "context_management.edits.0", Kind: "clear_thinking_20251015", Reason: "Anthropic's context editing has no Responses counterpart"}}, drops)
	held, err := c.TurnResponses(t.Context(), sess, res.Request, openai.Options{})
	require.NoError(t, err)
	assert.Equal(t, []any{map[string]any{"type": "compaction", "compact_threshold": float64(p.Levels().Threshold)}}, s.body(0)["context_management"])

	_, err = sess.User("Go on.")
	require.NoError(t, err)
	res, err = sess.Prepare(t.Context(), p, agentctx.Input{})
	require.NoError(t, err)
	assert.Equal(t, held.UUID, res.Report.ProviderCompaction)
	_, err = c.TurnResponses(t.Context(), sess, res.Request, openai.Options{})
	require.NoError(t, err)
	input := s.body(1)["input"].([]any)
	require.Len(t, input, 3)
	assert.Equal(t, map[string]any{"type": "compaction", "id": "cmp_01", "encrypted_content": "gAAAAB-compacted-context"}, input[0], "the item goes back as it came, first")
	assert.NotContains(t, mustJSON(s.body(1)), "Refactor the parser.", "nothing before the compaction is sent")
}
