package tiktoken

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"fmt"
	"io"
	"math/bits"
	"slices"
	"strconv"

	"github.com/agentctx/agentctx/internal/b64"
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
// It is immutable after newRankTableFile and safe for concurrent use.
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

// newRankTableFile builds the table from a .tiktoken file (one line per token: its bytes in
// base64, a space, its rank), as tiktoken-go's offline loader reads them, without building
// the loader's map of 100,000 strings first: only tokens longer than shortMax become strings.
// It reads r twice, a line at a time through one buffer, so that the file is never copied
// whole (an embedded one would be 1.7 MB of garbage at start-up). name names the file in
// errors.
func newRankTableFile(name string, r io.ReadSeeker) (*rankTable, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var readErr error
	lines := func(yield func(n int, line []byte) bool) {
		if _, err := r.Seek(0, io.SeekStart); err != nil {
			readErr = fmt.Errorf("tiktoken: %s: %w", name, err)
			return
		}
		br.Reset(r)
		for n := 1; ; n++ {
			line, err := br.ReadSlice('\n')
			if err == bufio.ErrBufferFull {
				readErr = fmt.Errorf("tiktoken: %s line %d: longer than %d bytes", name, n, br.Size())
				return
			}
			if err != nil && err != io.EOF {
				readErr = fmt.Errorf("tiktoken: %s line %d: %w", name, n, err)
				return
			}
			if line = bytes.TrimSuffix(line, []byte{'\n'}); len(line) > 0 && !yield(n, line) {
				return
			}
			if err == io.EOF {
				return
			}
		}
	}
	// First pass: the sizes, from the base64 lengths.
	nShort, nLong := 0, 0
	for _, line := range lines {
		if tok, _, _ := bytes.Cut(line, []byte{' '}); b64.DecodedLen(tok) <= shortMax {
			nShort++
		} else {
			nLong++
		}
	}
	if readErr != nil {
		return nil, readErr
	}
	t := makeRankTable(nShort, nLong)
	var buf []byte
	var err error
	for n, line := range lines {
		tok, rank, _ := bytes.Cut(line, []byte{' '})
		buf = slices.Grow(buf[:0], base64.StdEncoding.DecodedLen(len(tok)))[:base64.StdEncoding.DecodedLen(len(tok))]
		var k int
		k, err = base64.StdEncoding.Decode(buf, tok)
		if err != nil || k == 0 {
			err = fmt.Errorf("tiktoken: %s line %d: field token: %q is not a token in base64", name, n, tok)
			break
		}
		r, perr := strconv.ParseInt(string(rank), 10, 32)
		if perr != nil || r < 0 {
			err = fmt.Errorf("tiktoken: %s line %d: field rank: %q is not a rank", name, n, rank)
			break
		}
		if b := buf[:k]; k > shortMax {
			t.long[string(b)] = int32(r)
		} else {
			addShort(t, b, int32(r))
		}
	}
	if err == nil {
		err = readErr
	}
	if err != nil {
		return nil, err
	}
	return t, nil
}

// makeRankTable returns an empty table for nShort short and nLong long tokens.
func makeRankTable(nShort, nLong int) *rankTable {
	// A load factor of at most 5/8 keeps linear probing short.
	size := 1 << bits.Len(uint(nShort*8/5))
	t := &rankTable{
		pairs: make([]int32, 1<<16),
		short: make([]rankSlot, size),
		shift: uint(64 - bits.TrailingZeros(uint(size))),
		long:  make(map[string]int32, nLong),
	}
	for i := range t.pairs {
		t.pairs[i] = -1
	}
	return t
}

// addShort adds a token of 1 to shortMax bytes.
func addShort[T string | []byte](t *rankTable, tok T, r int32) {
	if len(tok) == 2 {
		t.pairs[int(tok[0])|int(tok[1])<<8] = r
	}
	key, n := packShort(tok), int32(len(tok))
	for h := hashShort(key, n, t.shift); ; h = (h + 1) & uint64(len(t.short)-1) {
		if t.short[h].n == 0 {
			t.short[h] = rankSlot{key: key, rank: r, n: n}
			return
		}
	}
}

// packShort packs s (at most 8 bytes) into a uint64, little-endian, with two overlapping loads
// (the bytes they share are the same, so OR-ing them is harmless).
func packShort[T string | []byte](s T) uint64 {
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
