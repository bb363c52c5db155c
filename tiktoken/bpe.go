package tiktoken

import (
	"math"
	"unicode/utf8"
)

// bpeTable is the rank table of a tiktoken encoding (token bytes → rank; a lower rank merges
// first) with the pre-tokenizer of its pattern. It counts tokens exactly as tiktoken-go's
// EncodeOrdinary does, without building tiktoken-go's CoreBPE.
type bpeTable struct {
	ranks *rankTable
	// pieceEnd returns the end of the pre-tokenizer piece that starts at i (see
	// pieceEndCL100K).
	pieceEnd func(s string, i int) int
}

// countChunk returns the number of tokens of text, pre-tokenized and merged as one unit.
//
// tiktoken-go runs its pattern on []rune(text) and encodes string(runes[a:b]) for each match,
// so every byte of an invalid UTF-8 sequence becomes U+FFFD before it is encoded. Text that is
// not valid UTF-8 is converted the same way first (the only allocation on this path, rare).
func (t *bpeTable) countChunk(text string) int {
	if !utf8.ValidString(text) {
		text = string([]rune(text))
	}
	n := 0
	for i := 0; i < len(text); {
		j := t.pieceEnd(text, i)
		n += t.countPiece(text[i:j])
		i = j
	}
	return n
}

// countPiece returns the number of tokens of one pre-tokenizer piece: one when the piece is a
// token (most are), else the number of parts the byte-pair merge leaves.
func (t *bpeTable) countPiece(piece string) int {
	if len(piece) == 1 {
		return 1
	}
	if _, ok := t.ranks.rank(piece); ok {
		return 1
	}
	return t.mergeCount(piece)
}

// Merge scratch sizes, in parts (a piece of n bytes needs n+1). Go zeroes a stack array on
// every call, so the common short piece gets a small array, and mergeLong a larger one only
// when it is called. Longer pieces (long runs of spaces, of one letter, of dashes: the
// splitter no longer cuts them) go to mergeHeap, which allocates.
const (
	bpeShortParts = 64
	bpeLongParts  = 256
)

// bpePart is one part of a piece during the merge: its start offset and the rank of the pair
// it forms with the next part (noRank when that pair is no token).
type bpePart struct {
	start, rank int32
}

// noRank marks a pair of parts that is no token.
const noRank = math.MaxInt32

// mergeCount runs the byte-pair merge of tiktoken (as tiktoken-go's bytePairMerge does it):
// start from single bytes; repeatedly merge the adjacent pair with the lowest rank, the
// leftmost one on a tie; stop when no adjacent pair is a token. It returns the number of
// parts left, which is the number of tokens.
func (t *bpeTable) mergeCount(piece string) int {
	n := len(piece) + 1
	if n > bpeShortParts {
		return t.mergeLong(piece)
	}
	var stack [bpeShortParts]bpePart
	return t.merge(piece, stack[:n])
}

// mergeLong is mergeCount for pieces longer than bpeShortParts-1 bytes.
//
//go:noinline
func (t *bpeTable) mergeLong(piece string) int {
	n := len(piece) + 1
	if n > bpeLongParts {
		return t.mergeHeap(piece)
	}
	var stack [bpeLongParts]bpePart
	return t.merge(piece, stack[:n])
}

// merge is mergeCount on a scratch slice of len(piece)+1 parts.
func (t *bpeTable) merge(piece string, parts []bpePart) int {
	for i := range parts {
		parts[i] = bpePart{start: int32(i), rank: noRank}
	}
	// rank returns the rank of the bytes spanning parts i..i+skip+1, or noRank.
	rank := func(i, skip int) int32 {
		if i+skip+2 < len(parts) {
			if r, ok := t.ranks.rank(piece[parts[i].start:parts[i+skip+2].start]); ok {
				return int32(r)
			}
		}
		return noRank
	}
	for i := 0; i < len(parts)-2; i++ {
		parts[i].rank = rank(i, 0)
	}
	for len(parts) > 1 {
		minRank, minIdx := int32(noRank), -1
		for i := 0; i < len(parts)-1; i++ {
			if parts[i].rank < minRank {
				minRank, minIdx = parts[i].rank, i
			}
		}
		if minRank == noRank {
			break
		}
		i := minIdx
		parts[i].rank = rank(i, 1)
		if i > 0 {
			parts[i-1].rank = rank(i-1, 1)
		}
		parts = append(parts[:i+1], parts[i+2:]...)
	}
	return len(parts) - 1
}

// mergeHeap is merge for long pieces: the same merges in the same order, but the candidate
// pairs wait in a min-heap keyed by rank then start offset (the leftmost pair on a tie, as
// merge's scan takes it) instead of being rescanned after every merge, so a piece of n bytes
// costs O(n log n) instead of O(n²). Parts are named by their start offset and linked both
// ways; a heap entry is stale when its part has been merged away or the rank of its pair has
// changed since (a part's pair only grows, and distinct byte strings have distinct ranks, so
// a rank names one pair).
func (t *bpeTable) mergeHeap(piece string) int {
	n := int32(len(piece))
	next := make([]int32, n)  // start of the part after the part starting here; n for the last
	prev := make([]int32, n)  // start of the part before; -1 for the first
	ranks := make([]int32, n) // rank of the pair starting here, noRank, or merged for a dead part
	heap := make(pairHeap, 0, n)
	const merged = -1
	pairRank := func(i int32) int32 {
		j := next[i]
		if j == n {
			return noRank
		}
		if r, ok := t.ranks.rank(piece[i:next[j]]); ok {
			return int32(r)
		}
		return noRank
	}
	for i := range n {
		next[i], prev[i] = i+1, i-1
	}
	for i := range n {
		if ranks[i] = pairRank(i); ranks[i] != noRank {
			heap = append(heap, pairKey(ranks[i], i))
		}
	}
	heap.init()
	parts := int(n)
	for len(heap) > 0 {
		r, i := heap.pop()
		if ranks[i] != r {
			continue // stale
		}
		j := next[i] // merge part j into part i
		next[i] = next[j]
		if next[i] != n {
			prev[next[i]] = i
		}
		ranks[j] = merged
		parts--
		if ranks[i] = pairRank(i); ranks[i] != noRank {
			heap.push(pairKey(ranks[i], i))
		}
		if p := prev[i]; p >= 0 {
			if ranks[p] = pairRank(p); ranks[p] != noRank {
				heap.push(pairKey(ranks[p], p))
			}
		}
	}
	return parts
}

// pairHeap is a binary min-heap of pairKey values.
type pairHeap []uint64

// pairKey orders pairs by rank, then by start offset.
func pairKey(rank, start int32) uint64 { return uint64(rank)<<32 | uint64(start) }

func (h pairHeap) init() {
	for i := len(h)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h *pairHeap) push(k uint64) {
	*h = append(*h, k)
	s := *h
	for i := len(s) - 1; i > 0; {
		p := (i - 1) / 2
		if s[p] <= s[i] {
			break
		}
		s[p], s[i] = s[i], s[p]
		i = p
	}
}

// pop removes the least key and returns its rank and start.
func (h *pairHeap) pop() (rank, start int32) {
	s := *h
	k := s[0]
	last := len(s) - 1
	s[0] = s[last]
	*h = s[:last]
	h.down(0)
	return int32(k >> 32), int32(uint32(k))
}

func (h pairHeap) down(i int) {
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		m := l
		if r := l + 1; r < len(h) && h[r] < h[l] {
			m = r
		}
		if h[i] <= h[m] {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}
