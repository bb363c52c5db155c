package transcript

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCutHistoryCacheTTL chains two cuts over ttlSession's records: the history of the
// second, written from a read that stopped at the first, carries the weighing of the cache TTL
// a whole read gives and the latest TTL decision of the main thread; and the weighing of a read
// that stopped at the second, with and without the index, is the whole read's at every record
// after it.
func TestCutHistoryCacheTTL(t *testing.T) {
	const read, write5m, write1h = 0.1, 1.25, 2.0
	leaf := &Record{} // the main thread
	tests := []struct {
		seed   uint64
		c1, c2 int // the cuts: a boundary before records[c1] and one before records[c2]
	}{
		{1, 40, 150},
		{2, 90, 91},
		{3, 12, 230},
		{4, 100, 260},
		{5, 53, 94}, // both cuts between two records of one response
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.seed), func(t *testing.T) {
			k := newTK()
			k.readTurns(70)
			for i := range k.recs { // one turn in five on the sidechain
				k.recs[i].IsSidechain = i/5%5 == 4
			}
			recs := withTTLGaps(k.recs, tt.seed)
			decision := func(uuid, ttl string, side bool) Record {
				return Record{Type: TypeSystem, Subtype: SubtypeCacheTTL, UUID: uuid, IsMeta: true, IsSidechain: side,
					CacheTTL: &CacheTTLDecision{TTL: ttl}}
			}
			// The main thread's latest decision before the first cut, and a sidechain's after it.
			recs = slices.Insert(recs, tt.c1-1, decision("ttl-main", "1h", false), decision("ttl-side", "5m", true))
			boundary := func(uuid string, h *History, cut bool) Record {
				return Record{Type: TypeSystem, Subtype: SubtypeCompactBoundary, UUID: uuid, History: h, Cut: cut}
			}
			// whole is the transcript with both boundaries; tail reads stop at each cut.
			tailAt := func(pre []Record, uuid string) ([]Record, *History) {
				h, err := CutHistory(pre, len(pre), leaf)
				require.NoError(t, err)
				b, err := json.Marshal(boundary(uuid, h, false))
				require.NoError(t, err)
				var bd Record
				require.NoError(t, json.Unmarshal(b, &bd))
				require.NoError(t, bd.History.Check(), "the history reads back")
				bd.Cut = true
				carried, err := bd.History.Carried()
				require.NoError(t, err)
				return append(carried, bd), bd.History
			}
			b1 := boundary("b1", nil, false)
			whole1 := slices.Concat(recs[:tt.c1], []Record{b1}, recs[tt.c1:tt.c2]) // up to the second cut
			whole := slices.Concat(whole1, []Record{boundary("b2", nil, false)}, recs[tt.c2:])
			head1, h1 := tailAt(recs[:tt.c1], "b1")
			tail1 := slices.Concat(head1, recs[tt.c1:tt.c2])
			head2, h2 := tailAt(tail1, "b2")

			var f ttlFold
			for i := range whole1 {
				if r := &whole1[i]; !OtherThread(r, leaf) {
					f.add(i, r)
				}
			}
			require.NotNil(t, h1.CacheTTL)
			hw, err := CutHistory(whole1, len(whole1), leaf)
			require.NoError(t, err)
			assert.Equal(t, f.tally(), h2.CacheTTL, "the tally through two cuts is a pass over every record")
			assert.Equal(t, hw.CacheTTL, h2.CacheTTL, "the tally through two cuts is the whole read's")
			assert.Equal(t, hw.Records, h2.Records, "the records carried through two cuts are the whole read's")
			assert.Positive(t, h2.CacheTTL.Gaps)
			uuids := func(rs []Record) (out []string) {
				for _, r := range rs {
					if r.Subtype == SubtypeCacheTTL {
						out = append(out, r.UUID)
					}
				}
				return out
			}
			assert.Equal(t, []string{"ttl-main"}, uuids(head2[:len(head2)-1]), "the main thread's latest TTL decision is carried")

			tail2 := slices.Concat(head2, recs[tt.c2:])
			memo := &ChainCache{}
			at := len(whole) - len(tail2) // whole[i+at] is tail2[i] after the cut
			for n := len(head2); n <= len(tail2); n++ {
				want := ChooseCacheTTL(whole[:n+at], leaf, read, write5m, write1h)
				require.Equal(t, want, ChooseCacheTTL(tail2[:n], leaf, read, write5m, write1h), "record %d", n)
				ix := memo.index(tail2[:n])
				sc := ix.scan
				memo.keep(ix)
				require.Equal(t, want, sc.ChooseCacheTTL(tail2[:n], leaf, read, write5m, write1h), "record %d through the index", n)
			}
		})
	}
}
