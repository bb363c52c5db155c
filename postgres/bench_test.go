package postgres_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentctx/agentctx/internal/storetest"
	"github.com/agentctx/agentctx/internal/testkit"
	"github.com/agentctx/agentctx/transcript"
)

// BenchmarkLoad loads the generated 2,000-turn session (and the 200-turn one) from its JSONL
// file and from PostgreSQL, side by side: the file is the floor. The session has no compact
// boundary, so a load asking for the tail (postgres-tail) loads it whole, as postgres does.
func BenchmarkLoad(b *testing.B) {
	s := openStore(b)
	for _, turns := range []int{200, 2000} {
		path := filepath.Join(b.TempDir(), "session.jsonl")
		if err := transcript.AppendFile(path, transcript.AppendOptions{}, testkit.Generate(turns, testkit.Options{Seed: 1})...); err != nil {
			b.Fatal(err)
		}
		tr, err := transcript.ReadFile(path, transcript.ReadOptions{})
		if err != nil {
			b.Fatal(err)
		}
		file, err := os.ReadFile(path)
		if err != nil {
			b.Fatal(err)
		}
		session := storetest.Session(b, "load")
		if _, err := s.Import(b.Context(), session, bytes.NewReader(file)); err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("turns=%d/file", turns), func(b *testing.B) {
			b.SetBytes(int64(len(file)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := transcript.ReadFile(path, transcript.ReadOptions{}); err != nil {
					b.Fatal(err)
				}
			}
		})
		for _, load := range []struct {
			name string
			opts transcript.ReadOptions
		}{{"postgres", transcript.ReadOptions{}}, {"postgres-tail", transcript.ReadOptions{TailMinBytes: 1}}} {
			b.Run(fmt.Sprintf("turns=%d/%s", turns, load.name), func(b *testing.B) {
				b.SetBytes(int64(len(file)))
				b.ReportAllocs()
				for b.Loop() {
					got, err := s.Load(b.Context(), session, load.opts)
					if err != nil {
						b.Fatal(err)
					}
					if got.Len() != tr.Len() {
						b.Fatalf("%d records loaded, want %d", got.Len(), tr.Len())
					}
				}
			})
		}
	}
}

// BenchmarkAppendConcurrent measures positioned appends of one record by 32 writers on 200
// sessions (the concurrent test's shape), to a DirStore (the floor: one file per session on
// the local disk) and to PostgreSQL, side by side. Each writer keeps the position it last
// saw of each session and, on a conflict, reads the session again and retries; appends/s
// counts acknowledged appends, conflicts/op the retries each cost.
func BenchmarkAppendConcurrent(b *testing.B) {
	stores := []struct {
		name  string
		store transcript.Store
	}{
		{"dirstore", transcript.DirStore{Root: b.TempDir()}},
		{"postgres", openStore(b)},
	}
	for _, st := range stores {
		b.Run(st.name, func(b *testing.B) {
			prefix := storetest.Session(b, "")
			var conflicts, writer atomic.Int64
			b.SetParallelism(16) // 32 goroutines on 2 cores
			b.ReportAllocs()
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				w := writer.Add(1)
				seen := map[string]int{}
				for n := 0; pb.Next(); n++ {
					s := fmt.Sprintf("%s%03d", prefix, (int(w)*7+n*13)%200)
					r := storetest.Record(s, fmt.Sprintf("w%02d-n%07d", w, n), "a prompt of a typical length, about one line of text")
					for {
						end, err := st.store.Append(b.Context(), s, seen[s], r)
						if err == nil {
							seen[s] = end
							break
						}
						conflicts.Add(1)
						tr, err := st.store.Load(b.Context(), s, transcript.ReadOptions{})
						if err != nil {
							b.Error(err)
							return
						}
						seen[s] = tr.End
					}
				}
			})
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "appends/s")
			b.ReportMetric(float64(conflicts.Load())/float64(b.N), "conflicts/op")
		})
	}
}
