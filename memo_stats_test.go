package agentctx_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestMemoStatsFleet checks Pipeline.MemoStats against the runtime on a fleet of sessions
// served in turn: the bytes it estimates are within a quarter of what the library's live heap
// grows by (from before the Pipelines were made), per session alike on one shared Pipeline and on one each; under a ceiling the
// estimate stays under it and the heap within a quarter more, while every session is
// still served.
func TestMemoStatsFleet(t *testing.T) {
	if testing.Short() {
		t.Skip("sets up fleets of 24 sessions")
	}
	const n, turns = 24, 30
	for _, tt := range []struct {
		name   string
		shared bool
		limit  int64
	}{
		{"one Pipeline each", false, 0},
		{"one shared Pipeline", true, 0},
		{"one shared Pipeline under a ceiling", true, 2 << 20},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFleet(t, n, turns, tt.shared, tt.limit)
			st, est := f.sessions[0].p.MemoStats(), f.stats
			lib := f.libBytes
			ratio := float64(est) / lib
			t.Logf("live heap %.0f B/session, MemoStats %.0f B/session (%.2f)", lib/n, float64(est)/n, ratio)
			if tt.limit == 0 {
				assert.InDelta(t, 1, ratio, 0.25, "estimate ÷ live heap")
				return
			}
			assert.LessOrEqual(t, st.Bytes, tt.limit)
			assert.Less(t, st.Conversations, n, "the ceiling holds fewer conversations than served")
			assert.Positive(t, st.Evictions)
			assert.LessOrEqual(t, lib, 1.25*float64(tt.limit), "live heap under the ceiling")
		})
	}
}
