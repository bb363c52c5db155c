package transcript_test

import (
	"path/filepath"
	"testing"

	"github.com/agentctx/agentctx/internal/testkit"
	"github.com/agentctx/agentctx/internal/testkit/compacted"
	"github.com/agentctx/agentctx/transcript"
)

// BenchmarkReadTail reads a generated session the library compacted at a 100,000-token
// window (2,000 turns) from its active tail, stopping at the cut on the latest boundary's
// history, side by side with a whole read of the same file (the peer).
func BenchmarkReadTail(b *testing.B) {
	records, _, err := compacted.Replay(b.Context(), testkit.Generate(2000, testkit.Options{Seed: 1}), 100_000)
	if err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(b.TempDir(), "session.jsonl")
	if err := transcript.AppendFile(path, transcript.AppendOptions{}, records...); err != nil {
		b.Fatal(err)
	}
	for _, read := range []struct {
		name string
		opts transcript.ReadOptions
	}{{"whole", transcript.ReadOptions{}}, {"tail", transcript.ReadOptions{TailMinBytes: 1}}} {
		b.Run(read.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				tr, err := transcript.ReadFile(path, read.opts)
				if err != nil {
					b.Fatal(err)
				}
				if read.opts.TailMinBytes > 0 && (tr.Tail == nil || !tr.Tail.Digest) {
					b.Fatal("the tail read did not stop at the cut")
				}
			}
		})
	}
}
