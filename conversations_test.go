package agentctx

import (
	"cmp"
	"fmt"
	"testing"
	"time"

	"github.com/agentctx/agentctx/internal/memo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestConfigConversations checks Config.Conversations and Config.MemoBytes: their bounds, and
// that a Pipeline serving more conversations than the old default of 8, in turn, keeps a memo
// of each by default, of as many as it is told to keep, or of the last one served when the
// bytes allow no more, with the requests of a fresh Pipeline either way.
func TestConfigConversations(t *testing.T) {
	for _, n := range []int{-1, MaxConversations + 1} {
		_, err := New(Config{Model: "claude-sonnet-4-5", Conversations: n})
		assert.ErrorContains(t, err, "Conversations", "%d", n)
	}
	_, err := New(Config{Model: "claude-sonnet-4-5", MemoBytes: -1})
	assert.ErrorContains(t, err, "MemoBytes")
	now := time.Date(2026, 1, 2, 5, 0, 0, 0, time.UTC)
	const convs = memo.ConvEntries + 12
	for _, tt := range []struct {
		conversations int
		bytes         int64
		kept          int
	}{{0, 0, convs}, {5, 0, 5}, {convs, 0, convs}, {0, 1, 1}} {
		cfg := Config{Model: "claude-sonnet-4-5", ContextWindow: 1_000_000, Conversations: tt.conversations, MemoBytes: tt.bytes}
		p := newTestPipeline(t, cfg, now)
		kits := make([]*tk, convs)
		for turn := range 3 {
			for c := range convs {
				if kits[c] == nil {
					kits[c] = newTK()
					kits[c].n = 1000 * c // uuids of its own
				}
				k := kits[c]
				k.user(fmt.Sprintf("conversation %d, question %d", c, turn))
				k.assistant(text(fmt.Sprintf("answer %d", turn)))
				got, err := p.Prepare(t.Context(), Input{Records: k.recs})
				require.NoError(t, err)
				want, err := newTestPipeline(t, cfg, now).Prepare(t.Context(), Input{Records: k.recs})
				require.NoError(t, err)
				assert.Equal(t, string(requestBytes(t, want.Request)), string(requestBytes(t, got.Request)), "conversation %d turn %d", c, turn)
			}
		}
		assert.Equal(t, tt.kept, p.gauge.calib.Len(), "Conversations %d: calibration memo", tt.conversations)
		assert.Equal(t, tt.kept, p.stages.normalize.prefixes.Len(), "Conversations %d: settled prefixes", tt.conversations)
		st := p.MemoStats()
		assert.Equal(t, tt.kept, st.Conversations, "Conversations %d: MemoStats", tt.conversations)
		assert.Equal(t, tt.kept < convs, st.Evictions > 0, "Conversations %d: evictions %d", tt.conversations, st.Evictions)
		assert.Equal(t, cmp.Or(tt.bytes, defaultMemoBytes), st.Limit)
	}
}
