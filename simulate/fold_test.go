package simulate_test

import (
	"flag"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/simulate"
	"github.com/agentctx/agentctx/summarize"
	"github.com/agentctx/agentctx/transcript"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var foldCompare = flag.Bool("fold", false, "TestFoldCompactions: replay the long corpus sessions at a 40,000-token window with and without the collapse producer")

// TestFoldCompactions counts, on each Claude Code session of the corpus with 100 turns or
// more, replayed under the policy (--replay policy) at a 40,000-token window with the
// extractive summarizer, the full compactions made without the collapse producer and with
// [agentctx.FoldOldest], and the folds the producer committed; no prefix break goes
// unexplained, no turn fails and no session compacts more with the producer. Run with
//
//	go test -run TestFoldCompactions -v -timeout 60m ./simulate -args -fold
//
// (BENCHMARKS.md holds the table); it skips without the flag or the corpus.
func TestFoldCompactions(t *testing.T) {
	if !*foldCompare {
		t.Skip("pass -fold: it replays the long corpus sessions twice")
	}
	var sum struct{ turns, off, on, folds, failures int }
	for _, f := range corpusFiles(t, 1) {
		tr, err := transcript.ReadFile(f, transcript.ReadOptions{})
		require.NoError(t, err)
		row := []string{filepath.Base(f)}
		var turns, counts, peaks, over, errs [2]int
		folds, failures := 0, 0
		for i, producer := range []agentctx.CollapseProducer{nil, agentctx.FoldOldest{}} {
			cfg := agentctx.Config{Model: sessionModel(tr.Records), ContextWindow: 40_000,
				Compact:  agentctx.CompactConfig{Summarizer: summarize.Extractive{}, Rehydrate: agentctx.RehydrateConfig{DisableFiles: true}},
				Collapse: agentctx.CollapseConfig{Producer: producer}}
			sim, err := simulate.Run(t.Context(), tr.Records, cfg, simulate.Options{Replay: simulate.ReplayPolicy, Observe: func(s *simulate.Step) {
				if producer == nil {
					return
				}
				for _, r := range s.Result.Append {
					switch {
					case r.Subtype == transcript.SubtypeCollapseCommit:
						folds++
					case r.CompactFailure != nil && r.CompactFailure.Trigger == transcript.TriggerCollapse:
						failures++
					}
				}
			}})
			require.NoError(t, err, f)
			assert.Zero(t, sim.Totals.Unexplained, "%s: every prefix break is explained by a record", f)
			turns[i], counts[i], peaks[i] = len(sim.Turns), sim.Totals.Compactions, sim.Totals.PeakTokens
			p, err := agentctx.New(cfg)
			require.NoError(t, err)
			threshold := p.Levels().Threshold
			for _, tn := range sim.Turns {
				if tn.Pressure >= threshold {
					over[i]++
				}
				if tn.Error != "" {
					errs[i]++
				}
			}
		}
		if turns[0] < 100 {
			// Too short to fill a 40,000-token window often.
			continue
		}
		row = append(row, fmt.Sprint(turns[0]), fmt.Sprint(counts[0]), fmt.Sprint(counts[1]), fmt.Sprint(folds), fmt.Sprint(failures),
			fmt.Sprintf("peak %d/%d, over %d/%d, errors %d/%d", peaks[0], peaks[1], over[0], over[1], errs[0], errs[1]))
		t.Log(strings.Join(row, " | "))
		assert.LessOrEqual(t, counts[1], counts[0], "%s: folding never adds a compaction", f)
		assert.Zero(t, errs[1], "%s: no turn fails with the producer", f)
		sum.turns += turns[0]
		sum.off += counts[0]
		sum.on += counts[1]
		sum.folds += folds
		sum.failures += failures
	}
	t.Logf("total: %d turns, %d compactions without the producer, %d with it (%d folds, %d failed)", sum.turns, sum.off, sum.on, sum.folds, sum.failures)
}
