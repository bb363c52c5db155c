package transcript

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestScanPinnedRewind checks the pin list through a rewind that drops the record a pin
// names but keeps the pin: a pin written before the record it names (a transcript may hold
// one) finds it once written, and loses it again when a rewind drops it.
func TestScanPinnedRewind(t *testing.T) {
	k := linearSession(3)
	pin := Record{Type: TypeSystem, Subtype: SubtypePin, UUID: "pin", Pin: &PinDecision{UUIDs: []string{"later"}}}
	k.decision(pin)
	k.user("more")
	later := k.user("the pinned prompt")
	later.UUID = "later"
	memo := &ChainCache{}
	buf := append(make([]Record, 0, len(k.recs)+4), k.recs...)
	for _, tc := range []struct {
		n   int
		pos int
	}{{len(buf) - 2, -1}, {len(buf), len(buf) - 1}, {len(buf) - 1, -1}} {
		ix := memo.index(buf[:tc.n])
		sc := ix.scan
		memo.keep(ix)
		uuids, pos := sc.Pinned(buf[:tc.n])
		require.Equal(t, []string{"later"}, uuids, "%d records", tc.n)
		require.Equal(t, []int{tc.pos}, pos, "%d records", tc.n)
		wantUUIDs, wantPos := Pinned(buf[:tc.n])
		require.Equal(t, wantUUIDs, uuids)
		require.Equal(t, wantPos, pos)
	}
}
