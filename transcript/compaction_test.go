package transcript

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCompactionOf(t *testing.T) {
	tests := []struct {
		name  string
		block string
		want  Compaction
	}{
		{"anthropic summary", `{"type":"compaction","content":"summary","encrypted_content":"E","signature":"s"}`, CompactionPoint},
		{"anthropic failed", `{"type":"compaction","content":null,"encrypted_content":null}`, CompactionFailed},
		{"anthropic empty", `{"type":"compaction","content":""}`, CompactionFailed},
		{"openai item", `{"type":"compaction","encrypted_content":"gAAAA"}`, CompactionPoint},
		{"early codex item", `{"type":"compaction_summary","encrypted_content":"gAAAA"}`, CompactionPoint},
		{"openai empty item", `{"type":"compaction","encrypted_content":""}`, CompactionFailed},
		{"content not a string", `{"type":"compaction","content":{"text":"x"}}`, CompactionFailed},
		{"text", `{"type":"text","text":"compaction"}`, NotCompaction},
		{"other unknown", `{"type":"web_search_call","id":"ws"}`, NotCompaction},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := UnmarshalBlock([]byte(tc.block))
			require.NoError(t, err)
			assert.Equal(t, tc.want, CompactionOf(b))
		})
	}
	assert.Equal(t, NotCompaction, CompactionOf(nil))
}

func TestClearedInputTokens(t *testing.T) {
	tests := []struct {
		name  string
		extra string
		want  int
	}{
		{"none", ``, 0},
		{"two edits", `{"applied_edits":[{"type":"clear_tool_uses_20250919","cleared_tool_uses":2,"cleared_input_tokens":900},{"type":"clear_thinking_20251015","cleared_thinking_turns":1,"cleared_input_tokens":100}]}`, 1000},
		{"no edit applied", `{"applied_edits":[]}`, 0},
		{"unreadable", `"cleared"`, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := &Message{}
			if tc.extra != "" {
				m.Extra = map[string]json.RawMessage{"context_management": json.RawMessage(tc.extra)}
			}
			assert.Equal(t, tc.want, m.ClearedInputTokens())
		})
	}
	assert.Zero(t, (*Message)(nil).ClearedInputTokens())
}
