package agentctx_test

import (
	"fmt"
	"testing"

	"github.com/agentctx/agentctx/internal/testkit"
	"github.com/agentctx/agentctx/transcript"
)

// BenchmarkBuildChain rebuilds the active chain of a generated session, as every Prepare
// does: the common case, with no damage and no replays.
func BenchmarkBuildChain(b *testing.B) {
	for _, turns := range []int{10, 200, 2000} {
		recs := testkit.Generate(turns, testkit.Options{Seed: 1})
		b.Run(fmt.Sprintf("turns=%d", turns), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := transcript.BuildChain(recs, transcript.ChainOptions{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
