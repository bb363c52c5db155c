package liveloop

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkLoop runs the agent loop for 100 turns per operation at each window of the
// matrix (anthropic adapter, extractive summarizer), the finished transcript's replay
// included, and reports the turns an operation completed, the time per completed turn and
// the median Prepare.
func BenchmarkLoop(b *testing.B) {
	const turns = 100
	for _, w := range Windows {
		b.Run(fmt.Sprintf("window=%d", w), func(b *testing.B) {
			b.ReportAllocs()
			sc := corpusScenario(AdapterAnthropic, w, SummarizerExtractive, turns)
			done, prepares := 0, []time.Duration{}
			for b.Loop() {
				m, err := Run(b.Context(), sc)
				if err != nil {
					b.Fatal(err)
				}
				done += m.Turns
				prepares = append(prepares, m.Prepare...)
			}
			ops := float64(b.N)
			b.ReportMetric(float64(done)/ops, "turns/op")
			if done > 0 {
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(done), "ns/turn")
			}
			m := Metrics{Prepare: prepares}
			b.ReportMetric(float64(m.PrepareQuantile(0.5).Microseconds()), "prepare-p50-us")
		})
	}
}
