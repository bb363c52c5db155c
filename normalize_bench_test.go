package agentctx

import (
	"fmt"
	"testing"

	"github.com/agentctx/agentctx/transcript"
)

// BenchmarkNormalizeSteady measures the normalize stage alone on a steady turn: the Pipeline
// has normalized the same view before (its memo is warm) and the turn is built outside the
// timer. The session is memoSession's: a prompt, thinking, text, a tool call, its result and
// an answer per turn.
func BenchmarkNormalizeSteady(b *testing.B) {
	for _, turns := range []int{200, 2000} {
		b.Run(fmt.Sprintf("turns=%d", turns), func(b *testing.B) {
			recs := memoSession(turns)
			p := newTestPipeline(b, Config{ContextWindow: 40_000_000}, normNow)
			chain, err := transcript.BuildChain(recs, transcript.ChainOptions{})
			if err != nil {
				b.Fatal(err)
			}
			newTurn := func() *turn {
				t := p.newTurn(b.Context(), &Input{Records: recs}, chain)
				t.report.stage("normalize")
				return t
			}
			if err := p.stages.normalize.run(newTurn()); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				t := newTurn()
				b.StartTimer()
				if err := p.stages.normalize.run(t); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
