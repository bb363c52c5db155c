package memo

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestConvKeepsTheLastServed(t *testing.T) {
	var m Conv[string]
	for i := range ConvEntries + 3 {
		s := fmt.Sprint("conv-", i)
		e, reused := m.Take(func(e *string) bool { return *e == s })
		assert.Equal(t, i >= ConvEntries, reused, "a full memo gives up its least recently used entry")
		assert.Equal(t, reused, e != nil, "a new conversation finds no entry of its own")
		if reused {
			assert.Equal(t, fmt.Sprint("conv-", i-ConvEntries), *e, "the least recently used")
			assert.Equal(t, ConvEntries-1, m.Len(), "the entry taken is out while in use")
		}
		m.Keep(&s)
	}
	assert.Equal(t, ConvEntries, m.Len())
	last := fmt.Sprint("conv-", ConvEntries+2)
	require.NotNil(t, m.Entry(0))
	assert.Equal(t, last, *m.Entry(0), "most recently used first")
	e, reused := m.Take(func(e *string) bool { return *e == last })
	require.NotNil(t, e)
	assert.False(t, reused)
	assert.Equal(t, last, *e)
	assert.Nil(t, m.Entry(m.Len()), "past the last entry")
	assert.Nil(t, m.Entry(-1))
}

func TestConvLimit(t *testing.T) {
	for _, tt := range []struct{ limit, want int }{{0, ConvEntries}, {3, 3}, {20, 20}, {-1, ConvEntries}, {MaxConvEntries + 1, MaxConvEntries}} {
		var m Conv[int]
		m.SetLimit(tt.limit)
		for i := range tt.want + 5 {
			m.Keep(&i)
		}
		assert.Equal(t, tt.want, m.Len(), "limit %d", tt.limit)
		_, reused := m.Take(func(*int) bool { return false })
		assert.True(t, reused, "limit %d: a full memo gives up an entry", tt.limit)
	}
}

func TestGenBoundsEachGeneration(t *testing.T) {
	tests := []struct {
		name        string
		bound, puts int
		wantLen     int
	}{
		{"under the bound", 4, 3, 3},
		{"one generation full", 4, 4, 4},
		{"a second generation", 4, 6, 6},
		{"the oldest dropped", 4, 9, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := NewGen[int, int](tt.bound)
			for i := range tt.puts {
				m.Put(i, i*i)
			}
			assert.Equal(t, tt.wantLen, m.Len())
			assert.LessOrEqual(t, m.Len(), 2*m.Bound())
			v, ok := m.Get(tt.puts - 1)
			assert.True(t, ok, "the newest entry is kept")
			assert.Equal(t, (tt.puts-1)*(tt.puts-1), v)
		})
	}
}

func TestGenGetMovesAnOldEntryForward(t *testing.T) {
	m := NewGen[string, int](2)
	m.Put("a", 1)
	m.Put("b", 2)
	m.Put("c", 3) // a and b are now the previous generation
	v, ok := m.Get("a")
	require.True(t, ok)
	assert.Equal(t, 1, v)
	m.Put("d", 4) // the current generation {c, a} is full: it becomes the previous one
	_, ok = m.Get("a")
	assert.True(t, ok, "a moved forward and survives the next generation")
	_, ok = m.Get("b")
	assert.False(t, ok, "b stayed behind and is dropped")
}

func TestGenReserveNeverLowers(t *testing.T) {
	m := NewGen[int, int](8)
	m.Reserve(4, 100)
	assert.Equal(t, 8, m.Bound())
	m.Reserve(50, 20)
	assert.Equal(t, 20, m.Bound(), "raised up to the limit")
}

// sized is an entry that reports its bytes.
type sized int64

func (s *sized) Bytes() int64 { return int64(*s) }

func TestConvBytes(t *testing.T) {
	tests := []struct {
		name          string
		limit         int64
		sizes         []int64
		kept          int
		bytes, evicts int64
	}{
		{"no bound", 0, []int64{100, 100, 100}, 3, 300, 0},
		{"within the bound", 300, []int64{100, 100, 100}, 3, 300, 0},
		{"the oldest dropped", 250, []int64{100, 100, 100}, 2, 200, 1},
		{"the newest kept whatever its size", 50, []int64{10, 10, 400}, 1, 400, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var m Conv[sized]
			m.SetLimit(MaxConvEntries)
			m.SetBytes(tt.limit)
			for _, n := range tt.sizes {
				e := sized(n)
				m.Keep(&e)
			}
			assert.Equal(t, Stats{Entries: tt.kept, Bytes: tt.bytes, Evictions: tt.evicts}, m.Stats())
			first := m.Entry(0)
			e, _ := m.Take(func(e *sized) bool { return e == first })
			require.NotNil(t, e)
			assert.Equal(t, tt.bytes-int64(*e), m.Stats().Bytes, "an entry taken out counts for nothing")
		})
	}
}

func TestGenStats(t *testing.T) {
	m := NewGen[int, int](2)
	for i := range 5 { // {0 1} dropped when {4} starts; 2 found again survives
		m.Put(i, i)
		if i == 3 {
			m.Get(2)
		}
	}
	s := m.Stats(10)
	assert.Equal(t, m.Len(), s.Entries)
	assert.Equal(t, MapBytes(s.Entries, 0, 0)+10*int64(s.Entries), s.Bytes)
	assert.Equal(t, int64(2), s.Evictions, "0 and 1 dropped without being found again")
	n := 0
	m.All(func(int) { n++ })
	assert.Equal(t, m.Len(), n)
}
