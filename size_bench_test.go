package agentctx_test

import (
	"testing"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/testkit"
)

// BenchmarkSteadySize measures the sizing of a steady turn's request alone (the count, the
// pressure figure and its calibration, max_tokens, the body size) and the memoized encoding of
// that request, on the generated 2,000-turn session with the Pipeline warm.
func BenchmarkSteadySize(b *testing.B) {
	recs := testkit.Generate(2000, testkit.Options{Seed: 1})
	p, err := agentctx.New(agentctx.Config{Model: "claude-sonnet-4-5", ContextWindow: 40_000_000,
		Budget: agentctx.BudgetConfig{Store: &agentctx.MapStore{}}, Now: func() time.Time { return benchNow }})
	if err != nil {
		b.Fatal(err)
	}
	size, encode, err := agentctx.SteadySizer(b.Context(), p, agentctx.Input{Records: recs})
	if err != nil {
		b.Fatal(err)
	}
	size()
	if err := encode(); err != nil {
		b.Fatal(err)
	}
	b.Run("turns=2000/size", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			size()
		}
	})
	b.Run("turns=2000/encode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := encode(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
