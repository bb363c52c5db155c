package liveloop

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestServerStrategy runs the server strategy against the fake Anthropic server, which
// compacts when the prompt passes the request's compact_20260112 trigger, at a 200,000-token
// window: 1,000 turns (matrixTurns), and 500 with pause_after_compaction (the provider's
// first two compactions come by then), each with 0 terminal errors, 0 invalid bodies, the
// provider compacting, and the pinned rule in the request after every compaction. The two
// run in parallel: about 60 s of wall time and 35 s of CPU on 2 shared cores.
func TestServerStrategy(t *testing.T) {
	turns := matrixTurns()
	for _, sc := range []Scenario{ServerStrategy(turns, false), ServerStrategy(min(turns, 500), true)} {
		t.Run(sc.label(), func(t *testing.T) {
			t.Parallel()
			began := time.Now()
			m, err := Run(t.Context(), sc)
			require.NoError(t, err)
			t.Logf("%d turns in %s: %d server compactions (%d paused), %d client compactions, the pinned rule in %d of %d requests after a compaction\n%s\n%s",
				sc.Turns, time.Since(began).Round(100*time.Millisecond), m.ServerCompactions, m.Paused, m.Compactions,
				m.PinnedChecked-m.PinnedMissing, m.PinnedChecked, TableHeader(), m.Row())
			assert.Empty(t, m.Failures())
			assert.Equal(t, sc.Turns, m.Turns)
			if sc.Turns >= 500 {
				assert.GreaterOrEqual(t, m.ServerCompactions, 2, "the provider compacts")
			}
			assert.Equal(t, m.ServerCompactions+m.Compactions, m.PinnedChecked, "every compaction is checked")
			if sc.PauseAfterCompaction {
				assert.Equal(t, m.ServerCompactions, m.Paused)
			}
		})
	}
}
