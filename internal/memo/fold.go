package memo

import (
	"hash/maphash"
	"math/bits"
	"unsafe"
)

// Fold hashes the parts of a request by identity, for the memos that key them: a word at a
// time, with lengths and kinds so that different parts cannot feed the same stream; a string
// by its length and the address of its bytes (the memos hold on to the strings they key, so
// an address they know is never reused for other bytes); raw JSON, which a caller could
// rewrite in place, by a hash of its bytes. The encode memo and the counter each walk a
// block's fields with one: the fields that decide its encoding, and those that decide its
// count.
type Fold struct {
	seed  maphash.Seed
	start uint64 // the state a key starts from, derived from seed
	h     uint64
	n     int
	// Keep, when set, receives the non-empty strings Str hashes, for the memo entry to hold.
	Keep *[]string
}

// The odd constants of the fold (wyhash's).
const (
	foldK0 = 0xa0761d6478bd642f
	foldK1 = 0xe7037ed1a0b428db
)

// NewFold returns a Fold whose keys are those of seed.
func NewFold(seed maphash.Seed) Fold {
	s := maphash.Comparable(seed, uint64(foldK1))
	return Fold{seed: seed, start: s, h: s}
}

// Reset starts a new key, keeping the seed and Keep.
func (f *Fold) Reset() { f.h, f.n = f.start, 0 }

// Key returns the key so far: the hash and the number of words folded into it.
func (f *Fold) Key() (hash uint64, n int) { return f.h, f.n }

// Word folds v into the hash: the 128-bit product of the state and v, each mixed with a
// constant, folded to 64 bits.
func (f *Fold) Word(v uint64) {
	hi, lo := bits.Mul64(f.h^foldK0, v^foldK1)
	f.h = hi ^ lo
	f.n++
}

// Flag folds a boolean.
func (f *Fold) Flag(v bool) {
	if v {
		f.Word(1)
	} else {
		f.Word(0)
	}
}

// Str folds s's length and, unless s is empty, the address of its bytes.
func (f *Fold) Str(s string) {
	f.Word(uint64(len(s)))
	if s == "" {
		return
	}
	f.Word(uint64(uintptr(unsafe.Pointer(unsafe.StringData(s)))))
	if f.Keep != nil {
		*f.Keep = append(*f.Keep, s)
	}
}

// Raw folds raw JSON by a hash of its bytes, telling nil from empty (they encode
// differently).
func (f *Fold) Raw(b []byte) {
	if b == nil {
		f.Word(0)
		return
	}
	f.Word(1)
	f.Word(uint64(len(b)))
	if len(b) > 0 {
		f.Word(maphash.Bytes(f.seed, b))
	}
}
