package agentctx_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/testkit"
)

var benchNow = time.Date(2026, 1, 2, 3, 30, 0, 0, time.UTC)

func benchPipeline(b *testing.B, tc agentctx.TokenCounter) *agentctx.Pipeline {
	b.Helper()
	p, err := agentctx.New(agentctx.Config{
		Model: "claude-sonnet-4-5",
		// A window the 2,000-turn history (779k tokens) never reaches: this benchmark measures
		// the stages on a growing session; BenchmarkCompact measures the compacted one.
		ContextWindow: 4_000_000,
		Tokens:        tc,
		Budget:        agentctx.BudgetConfig{Store: &agentctx.MapStore{}},
		Now:           func() time.Time { return benchNow },
	})
	if err != nil {
		b.Fatal(err)
	}
	return p
}

// BenchmarkPrepare measures one turn at 10, 200 and 2,000 turns of history, side by side:
//
//   - cold: a new Pipeline, so every block is counted (the first turn after a process start);
//   - steady: a warm Pipeline and one new exchange per turn (what a live session pays);
//   - marshal: json.Marshal of the same request, the floor any request builder pays.
//
// Counting uses the default tiktoken counter.
func BenchmarkPrepare(b *testing.B) {
	tc := agentctx.DefaultTokenCounter()
	for _, turns := range []int{10, 200, 2000} {
		recs := testkit.Generate(turns, testkit.Options{Seed: 1})
		in := agentctx.Input{Records: recs}
		b.Run(fmt.Sprintf("turns=%d/cold", turns), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				p := benchPipeline(b, agentctx.NewCounter(tc).TokenCounter())
				if _, err := p.Prepare(b.Context(), in); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("turns=%d/steady", turns), func(b *testing.B) {
			p := benchPipeline(b, tc)
			if _, err := p.Prepare(b.Context(), in); err != nil {
				b.Fatal(err)
			}
			// Each iteration is a new turn: the history plus one new exchange the memo has
			// not seen.
			last := recs[len(recs)-1]
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i++
				turn := agentctx.Input{Records: append(recs[:len(recs):len(recs)], testkit.Prompt("bench", i, last.UUID))}
				res, err := p.Prepare(b.Context(), turn)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(res.Report.InputTokens), "tokens/op")
			}
		})
		b.Run(fmt.Sprintf("turns=%d/marshal", turns), func(b *testing.B) {
			res, err := benchPipeline(b, tc).Prepare(b.Context(), in)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := json.Marshal(res.Request); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
