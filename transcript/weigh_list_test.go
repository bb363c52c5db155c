package transcript

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestWeighListTally adds random responses to a weighList last first, as the reverse scan
// does (messages of several records, adjacent or not, ids left empty, both threads, times
// with gaps of seconds to hours, some missing, sizes that drop), past a chunk's length, and
// checks its tally against the forward fold ChooseCacheTTL runs on a whole read.
func TestWeighListTally(t *testing.T) {
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, 7))
		n := rng.IntN(3 * weighListChunk)
		if seed < 8 {
			n = int(seed) // the short lists: none, one, a few
		}
		ids := 1 + rng.IntN(n+1)
		file := make([]threadResponse, n)
		at := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
		for i := range file {
			at = at.Add(time.Duration(rng.IntN(90)) * time.Minute / time.Duration(1+rng.IntN(20)))
			w := threadResponse{weighedResponse: weighedResponse{at: at, size: rng.IntN(200_000)}, thread: uint8(rng.IntN(4) / 3)}
			switch k := rng.IntN(10); {
			case k == 0:
				// no message id
			case k < 3 && i > 0:
				w.id = file[i-1].id // a message's next record
			default:
				w.id = fmt.Sprintf("msg_%d", rng.IntN(ids))
			}
			if rng.IntN(50) == 0 {
				w.at = time.Time{}
			}
			file[i] = w
		}
		var l weighList
		for i := n - 1; i >= 0; i-- {
			l.add(file[i])
		}
		var want [2]ttlFold
		for _, w := range file {
			want[w.thread].response(w.weighedResponse)
		}
		require.Equal(t, [2]*CacheTTLTally{want[0].tally(), want[1].tally()}, l.tally(), "seed %d, %d responses", seed, n)
	}
}
