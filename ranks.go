package agentctx

import (
	"fmt"
	"math"
	"math/bits"
)

// rankTable maps the bytes of every token of an encoding to its rank, laid out for the
// counter's lookups, which are mostly short strings that miss or hit at random in a table of
// 100,000 (cl100k) or 200,000 (o200k) tokens. A Go map[string]int pays a few cache misses per
// lookup there (control word, key header, key bytes); this table pays about one:
//
//   - pairs: every two-byte string, indexed directly (the merge starts on byte pairs);
//   - short: tokens of 1 to 8 bytes, packed into a uint64, in an open-addressing table with
//     linear probing, one 16-byte slot per probe;
//   - long: longer tokens, in a Go map.
//
// It is immutable after newRankTable and safe for concurrent use.
type rankTable struct {
	pairs []int32 // [b0 | b1<<8] → rank, or -1
	short []rankSlot
	shift uint // 64 - log2(len(short))
	long  map[string]int32
}

// rankSlot is one slot of rankTable.short; n == 0 marks an empty slot.
type rankSlot struct {
	key  uint64 // the token's bytes, little-endian, zero-padded
	rank int32
	n    int32 // the token's length
}

// shortMax is the longest token kept in rankTable.short.
const shortMax = 8

// newRankTable builds the table from a loader's map of token bytes to ranks.
func newRankTable(ranks map[string]int) (*rankTable, error) {
	nShort := 0
	for tok, r := range ranks {
		if r < 0 || r > math.MaxInt32 || tok == "" {
			return nil, fmt.Errorf("agentctx: rank table: token %q has rank %d", tok, r)
		}
		if len(tok) <= shortMax {
			nShort++
		}
	}
	// A load factor of at most 5/8 keeps linear probing short.
	size := 1 << bits.Len(uint(nShort*8/5))
	t := &rankTable{
		pairs: make([]int32, 1<<16),
		short: make([]rankSlot, size),
		shift: uint(64 - bits.TrailingZeros(uint(size))),
		long:  make(map[string]int32, len(ranks)-nShort),
	}
	for i := range t.pairs {
		t.pairs[i] = -1
	}
	for tok, r := range ranks {
		switch {
		case len(tok) > shortMax:
			t.long[tok] = int32(r)
		default:
			if len(tok) == 2 {
				t.pairs[int(tok[0])|int(tok[1])<<8] = int32(r)
			}
			key, n := packShort(tok), int32(len(tok))
			for h := hashShort(key, n, t.shift); ; h = (h + 1) & uint64(len(t.short)-1) {
				if t.short[h].n == 0 {
					t.short[h] = rankSlot{key: key, rank: int32(r), n: n}
					break
				}
			}
		}
	}
	return t, nil
}

// packShort packs s (at most 8 bytes) into a uint64, little-endian, with two overlapping loads
// (the bytes they share are the same, so OR-ing them is harmless).
func packShort(s string) uint64 {
	switch n := len(s); {
	case n >= 4:
		lo := uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24
		hi := uint64(s[n-4]) | uint64(s[n-3])<<8 | uint64(s[n-2])<<16 | uint64(s[n-1])<<24
		return lo | hi<<(8*(n-4))
	case n >= 2:
		lo := uint64(s[0]) | uint64(s[1])<<8
		hi := uint64(s[n-2]) | uint64(s[n-1])<<8
		return lo | hi<<(8*(n-2))
	case n == 1:
		return uint64(s[0])
	}
	return 0
}

// hashShort is a Fibonacci hash of a packed key and its length, giving a slot index.
func hashShort(key uint64, n int32, shift uint) uint64 {
	return ((key ^ uint64(n)<<59) * 0x9e3779b97f4a7c15) >> shift
}

// rank returns the rank of the token whose bytes are s, and whether s is a token.
func (t *rankTable) rank(s string) (int, bool) {
	switch {
	case len(s) == 2:
		r := t.pairs[int(s[0])|int(s[1])<<8]
		return int(r), r >= 0
	case len(s) > shortMax:
		r, ok := t.long[s]
		return int(r), ok
	case len(s) == 0:
		return 0, false
	}
	key, n := packShort(s), int32(len(s))
	mask := uint64(len(t.short) - 1)
	for h := hashShort(key, n, t.shift); ; h = (h + 1) & mask {
		slot := &t.short[h]
		if slot.n == 0 {
			return 0, false
		}
		if slot.key == key && slot.n == n {
			return int(slot.rank), true
		}
	}
}
