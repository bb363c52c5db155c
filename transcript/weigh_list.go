package transcript

import (
	"cmp"
	"slices"
	"strings"
)

// threadResponse is a response before a tail read's cut, as the cache TTL's weighing reads
// it, with its thread (see thread).
type threadResponse struct {
	weighedResponse
	thread uint8
	// dup is set by weighList.tally on a record of a message an earlier record holds too.
	dup bool
}

// weighListChunk is how many responses a chunk of a weighList holds.
const weighListChunk = 4096

// weighList holds the responses a reverse scan passes before a tail read's cut, last first,
// in chunks, so that it grows without copying what it holds.
type weighList struct {
	chunks [][]threadResponse
}

// add adds w, the response before the ones added so far. When the one added last (the next
// in the file) is of the same message and thread, w takes its place: only the first record
// of a message counts.
func (l *weighList) add(w threadResponse) {
	if p := l.last(); p != nil && w.id != "" && p.id == w.id && p.thread == w.thread {
		*p = w
		return
	}
	if n := len(l.chunks); n == 0 || len(l.chunks[n-1]) == cap(l.chunks[n-1]) {
		l.chunks = append(l.chunks, make([]threadResponse, 0, weighListChunk))
	}
	c := &l.chunks[len(l.chunks)-1]
	*c = append(*c, w)
}

// last returns the response added last, nil when none.
func (l *weighList) last() *threadResponse {
	if n := len(l.chunks); n > 0 {
		c := l.chunks[n-1]
		return &c[len(c)-1]
	}
	return nil
}

// lastID returns the message id of the response added last, "" when none.
func (l *weighList) lastID() string {
	if p := l.last(); p != nil {
		return p.id
	}
	return ""
}

// at returns the response added i-th (0: the first, the last in the file).
func (l *weighList) at(i int) *threadResponse {
	return &l.chunks[i/weighListChunk][i%weighListChunk]
}

// len returns how many responses l holds.
func (l *weighList) len() int {
	if n := len(l.chunks); n > 0 {
		return (n-1)*weighListChunk + len(l.chunks[n-1])
	}
	return 0
}

// tally weighs the responses of each thread in file order, each message once (its first
// record), as [ChooseCacheTTL] weighs a whole read's, and returns where each thread's
// weighing stands (nil: nothing counted). The records of a message are found by sorting
// the responses by thread, message id and place in the file, not through a map of every id.
func (l *weighList) tally() [2]*CacheTTLTally {
	n := l.len()
	order := make([]int32, n)
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int {
		wa, wb := l.at(int(a)), l.at(int(b))
		if c := cmp.Compare(wa.thread, wb.thread); c != 0 {
			return c
		}
		if c := strings.Compare(wa.id, wb.id); c != 0 {
			return c
		}
		return cmp.Compare(b, a) // added later: earlier in the file
	})
	for k := 1; k < n; k++ {
		prev, w := l.at(int(order[k-1])), l.at(int(order[k]))
		w.dup = w.id != "" && w.id == prev.id && w.thread == prev.thread
	}
	var f [2]ttlFold
	for i := n - 1; i >= 0; i-- {
		if w := l.at(i); !w.dup {
			f[w.thread].count(w.weighedResponse)
		}
	}
	return [2]*CacheTTLTally{f[0].tally(), f[1].tally()}
}
