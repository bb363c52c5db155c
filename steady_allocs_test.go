package agentctx_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/testkit"
	"github.com/agentctx/agentctx/transcript"
)

// steadyPrepareMargin is how many more allocations a steady turn at 2,000 turns may make
// than one at 200. A steady turn's work is the new exchange; what may still follow the
// history's size is the few slices sized to it (the chain's records and positions, the
// view's items, normalize's messages), one allocation each, and the maps sized to it, which
// Go builds of groups of 1,024 slots: a map of the history grows by about 8 tables from 200
// to 2,000 turns (6,700 records). 64 covers a handful of each.
const steadyPrepareMargin = 64

// TestPrepareSteadyAllocs checks that a steady turn (the Pipeline warm, the previous records
// and one new prompt) allocates about as much at 2,000 turns as at 200: its allocations follow
// the new exchange, not the history (issue 12).
func TestPrepareSteadyAllocs(t *testing.T) {
	if testing.Short() || agentctx.RaceDetector {
		t.Skip("prepares a 2,000-turn session; under the race detector sync.Pool drops some of what is put back")
	}
	allocs := map[int]float64{}
	for _, turns := range []int{200, 2000} {
		recs := testkit.Generate(turns, testkit.Options{Seed: 1})
		p, err := agentctx.New(agentctx.Config{
			Model: "claude-sonnet-4-5", ContextWindow: 40_000_000,
			Budget: agentctx.BudgetConfig{Store: &agentctx.MapStore{}},
			Now:    func() time.Time { return time.Date(2026, 1, 2, 3, 30, 0, 0, time.UTC) },
		})
		require.NoError(t, err)
		input := append(make([]transcript.Record, 0, len(recs)+1), recs...)
		i := 0
		next := func() agentctx.Input {
			i++
			return agentctx.Input{Records: append(input[:len(recs)], testkit.Prompt("steady", i, recs[len(recs)-1].UUID))}
		}
		_, err = p.Prepare(t.Context(), next()) // the Pipeline warm
		require.NoError(t, err)
		allocs[turns] = testing.AllocsPerRun(5, func() {
			if _, err := p.Prepare(t.Context(), next()); err != nil {
				t.Fatal(err)
			}
		})
	}
	t.Logf("allocations of a steady Prepare: %v", allocs)
	require.LessOrEqual(t, allocs[2000], allocs[200]+steadyPrepareMargin,
		"a steady turn's allocations grow with the history: %v", allocs)
}
