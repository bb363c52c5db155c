package anthropic_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/anthropic"
	"github.com/agentctx/agentctx/session"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// compactionBlock is a compaction block as the server returns it: the summary, its opaque
// encrypted content and its signature.
const compactionBlock = `{"type":"compaction","content":"The user is building a log parser; parse.go is written, tests are next.","encrypted_content":"EqQBCkYIBxgCKkBjb21wYWN0ZWQ=","signature":"c2lnbmF0dXJlLW9mLXN1bW1hcnk="}`

// compactedAnswer is a non-streamed answer that compacted: the compaction block first.
const compactedAnswer = `{"id":"msg_compact01","type":"message","role":"assistant","model":"claude-sonnet-4-6","content":[` + compactionBlock +
	`,{"type":"text","text":"Writing the tests now."}],"stop_reason":"end_turn","stop_sequence":null,` +
	`"context_management":{"applied_edits":[{"type":"clear_tool_uses_20250919","cleared_tool_uses":2,"cleared_input_tokens":1200}]},` +
	`"usage":{"input_tokens":4100,"output_tokens":300}}`

// pausedAnswer ends after the summary (pause_after_compaction).
const pausedAnswer = `{"id":"msg_compact02","type":"message","role":"assistant","model":"claude-sonnet-4-6","content":[` + compactionBlock +
	`],"stop_reason":"compaction","stop_sequence":null,"usage":{"input_tokens":3900,"output_tokens":250}}`

// failedAnswer holds a compaction that failed (null content): a no-op.
const failedAnswer = `{"id":"msg_compact03","type":"message","role":"assistant","model":"claude-sonnet-4-6","content":[` +
	`{"type":"compaction","content":null,"encrypted_content":null,"signature":null},{"type":"text","text":"Writing the tests now."}],` +
	`"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":4100,"output_tokens":300}}`

// streamedCompaction is compactedAnswer streamed: the compaction block's content and
// encrypted content arrive in one compaction_delta.
var streamedCompaction = []string{
	"message_start", `{"type":"message_start","message":{"id":"msg_compact01","type":"message","role":"assistant","model":"claude-sonnet-4-6","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":4100,"output_tokens":1}}}`,
	"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"compaction","content":null,"encrypted_content":null,"signature":"c2lnbmF0dXJlLW9mLXN1bW1hcnk="}}`,
	"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"compaction_delta","content":"The user is building a log parser; parse.go is written, tests are next.","encrypted_content":"EqQBCkYIBxgCKkBjb21wYWN0ZWQ="}}`,
	"content_block_stop", `{"type":"content_block_stop","index":0}`,
	"content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}`,
	"content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Writing the tests now."}}`,
	"content_block_stop", `{"type":"content_block_stop","index":1}`,
	"message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":300}}`,
	"message_stop", `{"type":"message_stop"}`,
}

// TestServerCompaction runs two turns against a server that compacts as Anthropic's
// documentation says: the first request asks for compaction and context editing with their
// betas, the server answers with a compaction block (or a failed one), and the second
// request starts from the block, sent back byte for byte, with nothing before it.
func TestServerCompaction(t *testing.T) {
	tests := []struct {
		name      string
		stream    bool
		first     func(w http.ResponseWriter)
		wantPoint bool
	}{
		{name: "non-streamed", first: func(w http.ResponseWriter) { writeJSON(w, 200, compactedAnswer) }, wantPoint: true},
		{name: "streamed", stream: true, first: func(w http.ResponseWriter) { sse(w, streamedCompaction...) }, wantPoint: true},
		{name: "paused after compaction", first: func(w http.ResponseWriter) { writeJSON(w, 200, pausedAnswer) }, wantPoint: true},
		{name: "failed compaction", first: func(w http.ResponseWriter) { writeJSON(w, 200, failedAnswer) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var f *fakeAPI
			f = newFakeAPI(t, func(w http.ResponseWriter, _ *http.Request, n int) {
				switch {
				case n == 0:
					tc.first(w)
				case f.bodies[n]["stream"] == true:
					sse(w, streamed...)
				default:
					writeJSON(w, 200, answer)
				}
			})
			p, err := agentctx.New(agentctx.Config{
				Model: "claude-sonnet-4-6", MaxOutputTokens: 4096, Tokens: agentctx.EstimateCounter{},
				Now: func() time.Time { return time.Date(2026, 3, 4, 10, 0, 0, 0, time.UTC) },
				ProviderContext: agentctx.ProviderContextConfig{Strategy: agentctx.CompactAuto, PauseAfterCompaction: true,
					ClearToolUses: &agentctx.ClearToolUses{TriggerTokens: 100_000, Keep: 3}, ClearThinking: &agentctx.ClearThinking{KeepTurns: 1}},
			})
			require.NoError(t, err)
			require.True(t, p.ServerCompaction(), "auto: the model table says claude-sonnet-4-6 compacts on the server")
			sess := session.New(session.Options{})
			c := f.client()
			opts := anthropic.Options{Stream: tc.stream}
			_, err = sess.User("Now add tests for the parser.")
			require.NoError(t, err)
			res, err := sess.Prepare(t.Context(), p, agentctx.Input{})
			require.NoError(t, err)
			held, err := c.Turn(t.Context(), sess, res.Request, opts)
			require.NoError(t, err)

			// The first request asks for it all, with both betas.
			assert.ElementsMatch(t, []string{agentctx.BetaContextManagement, agentctx.BetaCompaction}, f.betas[0])
			assert.Equal(t, map[string]any{"edits": []any{
				map[string]any{"type": "clear_thinking_20251015", "keep": map[string]any{"type": "thinking_turns", "value": 1.0}},
				map[string]any{"type": "clear_tool_uses_20250919", "trigger": map[string]any{"type": "input_tokens", "value": 100000.0}, "keep": map[string]any{"type": "tool_uses", "value": 3.0}},
				map[string]any{"type": "compact_20260112", "trigger": map[string]any{"type": "input_tokens", "value": float64(p.Levels().Threshold)}, "pause_after_compaction": true},
			}}, f.bodies[0]["context_management"])

			_, err = sess.User("Go on.")
			require.NoError(t, err)
			res, err = sess.Prepare(t.Context(), p, agentctx.Input{})
			require.NoError(t, err)
			_, err = c.Turn(t.Context(), sess, res.Request, opts)
			require.NoError(t, err)
			msgs := f.bodies[1]["messages"].([]any)
			first := msgs[0].(map[string]any)
			body, err := res.Request.MarshalJSON()
			require.NoError(t, err)
			if !tc.wantPoint {
				assert.Empty(t, res.Report.ProviderCompaction)
				assert.Equal(t, "user", first["role"])
				assert.NotContains(t, string(body), `"compaction"`, "a failed compaction is a no-op, not sent")
				return
			}
			assert.Equal(t, held.UUID, res.Report.ProviderCompaction)
			assert.Equal(t, "assistant", first["role"], "nothing before the compaction is sent")
			assert.Contains(t, string(body), `"messages":[{"role":"assistant","content":[`+compactionBlock, "the block goes back byte for byte")
			assert.NotContains(t, string(body), "Now add tests for the parser.")
		})
	}
}
