package agentctx_test

import (
	"fmt"
	"testing"
)

// BenchmarkFleet measures a steady turn (Prepare and Request.MarshalJSON of one new exchange)
// of N sessions served round-robin, side by side on one shared Pipeline and on one Pipeline
// per session, at the default config but the bytes estimate for counting (a fleet's cold
// turns under tiktoken take minutes at N = 1,000). Each session is testkit.Generate of
// fleetTurns turns with the provider's usage taken out, so that nothing compacts: every view
// is the whole session, about 40,000 tokens. The fleet is set up (a cold turn and two steady
// rounds per session) before the timer starts; each iteration is the next session's turn.
// lib-B/session is what the live heap grew by per session while the fleet was set up (by
// runtime.MemStats after a collection: the library's state), stats-B/session what [agentctx.Pipeline.MemoStats] estimates of it.
// Under -short the sessions are 20 turns and N stops at 100.
func BenchmarkFleet(b *testing.B) {
	turns, sizes := 100, []int{1, 100, 1000}
	if testing.Short() {
		turns, sizes = 20, []int{1, 100}
	}
	for _, n := range sizes {
		for _, shared := range []bool{true, false} {
			mode := "per-session"
			if shared {
				mode = "shared"
			}
			b.Run(fmt.Sprintf("n=%d/%s", n, mode), func(b *testing.B) {
				f := newFleet(b, n, turns, shared, 0)
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					f.turn(b, i%n, true)
					i++
				}
				b.StopTimer()
				b.ReportMetric(float64(f.stats)/float64(n), "stats-B/session")
				b.ReportMetric(f.libBytes/float64(n), "lib-B/session")
			})
		}
	}
}
