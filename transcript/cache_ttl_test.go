package transcript

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// ttlSession returns scanMixed(turns, seed) with idle gaps between its records (a few
// seconds, 5 to 60 minutes, or hours) and prompt sizes on its responses that grow and drop,
// so that every case of ChooseCacheTTL's weighing comes up on both threads.
func ttlSession(turns int, seed uint64) []Record {
	return withTTLGaps(scanMixed(turns, seed), seed)
}

// withTTLGaps sets idle gaps between recs (a few seconds, 5 to 60 minutes, or hours) and
// prompt sizes on their responses that grow and drop, and returns recs.
func withTTLGaps(recs []Record, seed uint64) []Record {
	rng := rand.New(rand.NewPCG(seed, 0x771))
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	size := 1000
	for i := range recs {
		at = at.Add([]time.Duration{3 * time.Second, 20 * time.Second, 12 * time.Minute, 50 * time.Minute, 3 * time.Hour}[rng.IntN(4+int(seed%2))])
		recs[i].Timestamp = at.Format("2006-01-02T15:04:05.000Z")
		if m := recs[i].Message; m != nil && m.Usage != nil {
			if rng.IntN(6) == 0 {
				size /= 3 // a compaction
			}
			size += rng.IntN(4000)
			u, c := *m.Usage, *m
			u.InputTokens, u.CacheReadInputTokens = size/2, size-size/2
			c.Usage = &u
			recs[i].Message = &c
		}
	}
	return recs
}

// TestScanKept checks that what the index keeps for its readers gives what a pass over every
// record gives, turn by turn as a session grows, through rewinds that drop responses it
// passed and another slice read again: the choice of the cache TTL on either thread, which a
// steady turn takes from the pass the index keeps, and the pinned records.
func TestScanKept(t *testing.T) {
	ttls := map[string]bool{}
	for _, seed := range []uint64{1, 2, 3} {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			recs := ttlSession(60, seed)
			memo := &ChainCache{}
			buf := make([]Record, 0, len(recs)+64)
			kept := 0
			for n := range recs {
				buf = append(buf, recs[n])
				if n%23 == 22 { // a rewind: the last two records written again under new uuids
					buf = buf[:len(buf)-2]
					for j := range 2 {
						r := recs[n-1+j]
						r.UUID = fmt.Sprintf("rewound-%d-%d", n, j)
						if m := r.Message; m != nil && m.Usage != nil { // another response
							u, c := *m.Usage, *m
							u.InputTokens += 5000
							c.ID, c.Usage = r.UUID, &u
							r.Message = &c
						}
						buf = append(buf, r)
					}
				}
				if n == len(recs)/2 { // another slice: the same records read again
					buf = append(make([]Record, 0, cap(buf)), buf...)
				}
				ix := memo.index(buf)
				sc := ix.scan
				memo.keep(ix)
				uuids, pos := Pinned(buf)
				gotUUIDs, gotPos := sc.Pinned(buf)
				require.Equal(t, uuids, gotUUIDs, "record %d", n)
				require.Equal(t, pos, gotPos, "record %d", n)
				if sc.ttl.upTo == sc.n {
					kept++
				}
				for _, side := range []bool{false, true} {
					leaf := &Record{IsSidechain: side}
					want := ChooseCacheTTL(buf, leaf, 0.1, 1.25, 2)
					ttls[want.TTL] = true
					require.Equal(t, want, sc.ChooseCacheTTL(buf, leaf, 0.1, 1.25, 2), "record %d, sidechain %v", n, side)
					require.Equal(t, want, (&Scan{}).ChooseCacheTTL(buf, leaf, 0.1, 1.25, 2), "record %d without an index", n)
				}
			}
			require.Greater(t, kept, len(recs)*3/4, "the index's pass served too few turns")
		})
	}
	require.Len(t, ttls, 2, "the sessions never chose one of the TTLs")
}
