package agentctx_test

import (
	"runtime"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentctx/agentctx/transcript"
)

// TestCompactionCostsTheTail checks that a compaction on a long session costs its active tail,
// not every record the caller holds: the post-compact view is built from the records a read
// of the transcript from the new boundary's cut would hold, not from a copy of them all. The
// compacting turn of a session whose records take 7 MB allocates less than that (a copy
// alone would take all of it; 40 % of it now), and its request is the one a resume of the whole
// transcript, the compaction's records appended, builds.
func TestCompactionCostsTheTail(t *testing.T) {
	if testing.Short() {
		t.Skip("generates a 3,000-turn session turn by turn (-short skips)")
	}
	recs, compactions := compactedSession(t, 3000, 30_000, false)
	require.Greater(t, compactions, 5)
	s := &heldSession{recs: recs, window: 30_000, reuse: true}
	s.warm(t)
	held := len(s.recs) * int(unsafe.Sizeof(transcript.Record{}))
	var before, after runtime.MemStats
	for i := 0; ; i++ {
		require.Less(t, i, 2000, "no compaction in 2,000 turns at a 30,000-token window")
		s.exchange()
		runtime.ReadMemStats(&before)
		compacted := s.prepare(t)
		runtime.ReadMemStats(&after)
		if !compacted {
			continue
		}
		alloc := int(after.TotalAlloc - before.TotalAlloc)
		t.Logf("the compacting turn allocated %d bytes; the %d records held take %d", alloc, len(s.recs), held)
		assert.Less(t, alloc, held, "the compacting turn allocates as much as the records held: it copied them")
		break
	}
	// The records written, read again whole by a new Pipeline, give the same request.
	sent := s.body
	assert.Equal(t, string(sent), string(s.warm(t)), "a new Pipeline over every record, the compaction's appended")
}
