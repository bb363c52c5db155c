package liveloop

import (
	"encoding/json"
	"testing"

	"github.com/agentctx/agentctx/anthropic"
	"github.com/agentctx/agentctx/transcript"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The fake Anthropic server compacts as the provider's documentation says: a request whose
// prompt passes its compact_20260112 trigger gets an answer that opens with a compaction
// block holding the server's summary, which ends the answer with pause_after_compaction; a
// prompt under the trigger, or a request without the edit, gets none.
func TestAnthropicServerCompaction(t *testing.T) {
	tests := []struct {
		name    string
		edit    string
		stream  bool
		compact bool
		paused  bool
	}{
		{name: "no edit"},
		{name: "under the trigger", edit: `{"edits":[{"type":"compact_20260112","trigger":{"type":"input_tokens","value":100000}}]}`},
		{name: "over the trigger", edit: `{"edits":[{"type":"compact_20260112","trigger":{"type":"input_tokens","value":5000}}]}`, compact: true},
		{name: "over the trigger, streamed", edit: `{"edits":[{"type":"compact_20260112","trigger":{"type":"input_tokens","value":5000}}]}`, stream: true, compact: true},
		{name: "paused", edit: `{"edits":[{"type":"compact_20260112","trigger":{"type":"input_tokens","value":5000},"pause_after_compaction":true}]}`, compact: true, paused: true},
		{name: "paused, streamed", edit: `{"edits":[{"type":"compact_20260112","trigger":{"type":"input_tokens","value":5000},"pause_after_compaction":true}]}`, stream: true, compact: true, paused: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, AdapterAnthropic, 50_000)
			req := f.request(20_000, 4096)
			req.ContextManagement = json.RawMessage(tc.edit)
			m, err := f.anthropic().Send(t.Context(), req, anthropic.Options{Stream: tc.stream})
			require.NoError(t, err)
			require.NotEmpty(t, m.Content)
			got := transcript.CompactionOf(m.Content[0])
			if !tc.compact {
				assert.Equal(t, transcript.NotCompaction, got)
				assert.Zero(t, f.pv.snapshot().Compactions)
				return
			}
			assert.Equal(t, transcript.CompactionPoint, got)
			assert.Equal(t, 1, f.pv.snapshot().Compactions)
			raw, err := transcript.MarshalBlock(m.Content[0])
			require.NoError(t, err)
			assert.Contains(t, string(raw), `"content":"1. Intent and constraints:`, "the server's summary, without its draft")
			if tc.paused {
				assert.Equal(t, "compaction", m.StopReason)
				assert.Len(t, m.Content, 1, "the answer ends after the summary")
				return
			}
			assert.Contains(t, []string{"tool_use", "end_turn"}, m.StopReason)
			assert.Greater(t, len(m.Content), 1, "the model answers after the summary")
			assert.Less(t, m.Usage.ContextTokens(), 10_000, "the top-level usage is the message iteration's, from the summary")
		})
	}
}
