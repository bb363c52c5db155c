package liveloop

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// producersTurns is the turns of each run of TestProducers: 200, or 120 with -short.
func producersTurns() int {
	if testing.Short() {
		return 120
	}
	return 200
}

// TestProducers checks the two claims of BENCHMARKS.md's comparison of the collapse producer
// and session memory at a small cost: at each window of ProducerWindows, with the extractive
// summarizer and facts planted, the run with both on compacts less often per 100 turns than
// the run with neither, and keeps at least as large a share of the planted facts, with no
// terminal error or invalid body either way. It logs the table (cmd/liveloop -producers
// prints the whole comparison, each producer alone included).
func TestProducers(t *testing.T) {
	if raceEnabled {
		t.Skip("the claims are counts the race detector does not change, and the runs take ten times as long under it; TestMatrix runs the loop under it")
	}
	turns := producersTurns()
	began := time.Now()
	var cells []Scenario
	for _, sc := range Producers(SummarizerExtractive, turns) {
		if sc.Fold == sc.Memory {
			cells = append(cells, sc)
		}
	}
	ms := make([]*Metrics, len(cells))
	t.Run("runs", func(t *testing.T) {
		for i, sc := range cells {
			t.Run(sc.label(), func(t *testing.T) {
				t.Parallel()
				m, err := Run(t.Context(), sc)
				require.NoError(t, err)
				assert.Empty(t, m.Failures())
				ms[i] = m
			})
		}
	})
	rows := make([]string, 0, len(ms))
	byName := map[string]*Metrics{}
	for _, m := range ms {
		require.NotNil(t, m)
		rows = append(rows, m.ProducersRow())
		byName[m.Scenario.Name] = m
	}
	t.Logf("%d turns a run, %s in all\n%s\n%s", turns, time.Since(began).Round(100*time.Millisecond), ProducersHeader(), strings.Join(rows, "\n"))
	for _, w := range ProducerWindows {
		off := byName[fmt.Sprintf("%d/%s/off", w, SummarizerExtractive)]
		on := byName[fmt.Sprintf("%d/%s/fold+memory", w, SummarizerExtractive)]
		require.Positive(t, off.FactChecks, "window %d: the run with neither compacts after the facts are planted", w)
		assert.Less(t, on.PerHundred(), off.PerHundred(), "window %d: compactions per 100 turns", w)
		assert.Positive(t, on.FactChecks, "window %d: requests checked with the producers on", w)
		assert.GreaterOrEqual(t, on.Retention(), off.Retention(), "window %d: planted facts kept", w)
	}
}
