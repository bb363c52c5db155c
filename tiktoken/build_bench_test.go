package tiktoken

import (
	"runtime"
	"testing"
)

// BenchmarkTokenCounterBuild builds each encoding's counter, and tiktoken-go's encoder as the
// library built it before, and reports the heap the built value keeps (heap-MB, measured after
// GC with runtime.ReadMemStats, outside the timed part).
func BenchmarkTokenCounterBuild(b *testing.B) {
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	for _, name := range []string{CL100K, O200K} {
		for _, mode := range []struct {
			name  string
			build func() (any, error)
		}{
			{"new", func() (any, error) { return New(name) }},
			{"reference", func() (any, error) { return buildReference(name) }},
		} {
			b.Run(name+"/"+mode.name, func(b *testing.B) {
				b.ReportAllocs()
				var kept int64
				for b.Loop() {
					b.StopTimer()
					before := heap()
					b.StartTimer()
					v, err := mode.build()
					if err != nil {
						b.Fatal(err)
					}
					b.StopTimer()
					kept = int64(heap() - before)
					runtime.KeepAlive(v)
					b.StartTimer()
				}
				b.ReportMetric(float64(kept)/(1<<20), "heap-MB")
			})
		}
	}
}
