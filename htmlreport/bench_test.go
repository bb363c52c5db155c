package htmlreport

import (
	"fmt"
	"io"
	"testing"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/testkit"
	"github.com/agentctx/agentctx/simulate"
)

// BenchmarkBuild measures a page beside its floor, the bare replay (simulate.Run), on the
// same generated session: what the page adds is what it keeps of each turn and the writing.
func BenchmarkBuild(b *testing.B) {
	for _, turns := range []int{200, 2000} {
		records := testkit.Generate(turns, testkit.Options{Seed: 1})
		cfg := agentctx.Config{Model: "claude-sonnet-4-5", ContextWindow: 200_000}
		b.Run(fmt.Sprintf("turns=%d/simulate", turns), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := simulate.Run(b.Context(), records, cfg, simulate.Options{}); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("turns=%d/page", turns), func(b *testing.B) {
			b.ReportAllocs()
			var n int64
			for b.Loop() {
				p, err := Build(b.Context(), records, cfg, Options{})
				if err != nil {
					b.Fatal(err)
				}
				if n, err = p.WriteTo(io.Discard); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n), "page-bytes")
		})
	}
}
