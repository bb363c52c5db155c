package agentctx

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentctx/agentctx/summarize"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTurnScratchNotInResult checks that a Result's request shares no memory a later turn
// writes (emit's arrays, the blocks normalize makes): conversations run turn by turn on one
// Pipeline from several goroutines, some of them compacting, and every Result kept from the
// first turn on still encodes to the bytes it had when Prepare returned it. The working
// memory a turn gives back for the next one (the view's items, normalize's messages) is
// reachable from no Result, so what this test can add about it is under -race: an array given
// back while a turn still uses it, or to two turns at once, is a data race the detector reports.
func TestTurnScratchNotInResult(t *testing.T) {
	p := newTestPipeline(t, Config{Model: "claude-sonnet-4-5", ContextWindow: 40_000, Compact: CompactConfig{Summarizer: summarize.Extractive{}}},
		time.Date(2026, 1, 2, 3, 8, 0, 0, time.UTC))
	type kept struct {
		res  Result
		body string
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var all []kept
	compacted := 0
	for c := range 4 {
		wg.Go(func() {
			k := newTK()
			for turn := range 16 {
				k.user(fmt.Sprintf("conversation %d, question %d", c, turn))
				tu := toolUse(fmt.Sprintf("toolu_%d_%d", c, turn), "Bash")
				k.assistant(text("Let me look."), tu)
				k.results(result(tu.ID, strings.Repeat(fmt.Sprintf("line %d of conversation %d\n", turn, c), 400)))
				k.assistant(text(fmt.Sprintf("Done with %d.", turn)))
				res, err := p.Prepare(t.Context(), Input{Records: k.recs})
				if !assert.NoError(t, err) {
					return
				}
				body, err := res.Request.MarshalJSON()
				if !assert.NoError(t, err) {
					return
				}
				k.recs = append(k.recs, res.Append...)
				mu.Lock()
				all = append(all, kept{res, string(body)})
				if res.Report.Compaction != nil && res.Report.Compaction.Outcome == CompactCompacted {
					compacted++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	require.Len(t, all, 4*16)
	require.Positive(t, compacted, "some turns compact, so that both of their views go back")
	for i, k := range all {
		ref, err := plainEncoding(k.res.Request)
		require.NoError(t, err)
		require.Equal(t, k.body, string(ref), "result %d changed after later turns", i)
	}
}
