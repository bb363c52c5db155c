package agentctx

import (
	"fmt"
	"testing"
	"time"

	"github.com/agentctx/agentctx/internal/memo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestConfigConversations checks Config.Conversations: its bounds, and that a Pipeline serving
// more conversations than the default memo holds, in turn, keeps a memo of each when told
// to, with the requests of a fresh Pipeline.
func TestConfigConversations(t *testing.T) {
	for _, n := range []int{-1, MaxConversations + 1} {
		_, err := New(Config{Model: "claude-sonnet-4-5", Conversations: n})
		assert.ErrorContains(t, err, "Conversations", "%d", n)
	}
	now := time.Date(2026, 1, 2, 5, 0, 0, 0, time.UTC)
	const convs = memo.ConvEntries + 12
	for _, tt := range []struct{ conversations, kept int }{{0, memo.ConvEntries}, {convs, convs}} {
		cfg := Config{Model: "claude-sonnet-4-5", ContextWindow: 1_000_000, Conversations: tt.conversations}
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
	}
}
