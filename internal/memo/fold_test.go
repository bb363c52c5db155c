package memo

import (
	"hash/maphash"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestFold(t *testing.T) {
	seed := maphash.MakeSeed()
	shared := strings.Repeat("x", 8)
	copyOf := strings.Clone(shared)
	key := func(feed func(f *Fold)) [2]uint64 {
		f := NewFold(seed)
		feed(&f)
		h, n := f.Key()
		return [2]uint64{h, uint64(n)}
	}
	tests := []struct {
		name string
		a, b func(f *Fold)
		same bool
	}{
		{"the same words", func(f *Fold) { f.Word(1); f.Word(2) }, func(f *Fold) { f.Word(1); f.Word(2) }, true},
		{"words in another order", func(f *Fold) { f.Word(1); f.Word(2) }, func(f *Fold) { f.Word(2); f.Word(1) }, false},
		{"one string twice", func(f *Fold) { f.Str(shared) }, func(f *Fold) { f.Str(shared) }, true},
		{"equal strings at two addresses", func(f *Fold) { f.Str(shared) }, func(f *Fold) { f.Str(copyOf) }, false},
		{"equal raw JSON at two addresses", func(f *Fold) { f.Raw([]byte(`{"a":1}`)) }, func(f *Fold) { f.Raw([]byte(`{"a":1}`)) }, true},
		{"nil and empty raw JSON", func(f *Fold) { f.Raw(nil) }, func(f *Fold) { f.Raw([]byte{}) }, false},
		{"a flag", func(f *Fold) { f.Flag(true) }, func(f *Fold) { f.Flag(false) }, false},
		{"the empty string and no string", func(f *Fold) { f.Str("") }, func(f *Fold) {}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.same, key(tc.a) == key(tc.b))
		})
	}
}

func TestFoldResetAndKeep(t *testing.T) {
	var kept []string
	f := NewFold(maphash.MakeSeed())
	start, n := f.Key()
	assert.Zero(t, n)
	f.Keep = &kept
	f.Str("abc")
	f.Str("")
	f.Word(7)
	assert.Equal(t, []string{"abc"}, kept, "the non-empty strings folded, for the entry to hold")
	f.Reset()
	h, n := f.Key()
	assert.Equal(t, start, h, "Reset starts a key again")
	assert.Zero(t, n)
	assert.Same(t, &kept, f.Keep, "Reset keeps Keep")
}
