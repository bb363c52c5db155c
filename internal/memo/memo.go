// Package memo holds the two memo shapes a Pipeline keeps from one turn to the next: [Conv],
// one entry per conversation for the conversations served last, and [Gen], a map bounded in
// entries that keeps a turn's working set across turns.
package memo

import (
	"slices"
	"sync"
)

// ConvEntries is how many conversations' entries a [Conv] keeps by default: the ones served
// last. Each entry is the size of its own conversation.
const ConvEntries = 8

// MaxConvEntries is the most entries [Conv.SetLimit] allows.
const MaxConvEntries = 4096

// Conv keeps one entry per conversation for the last conversations served, most recently used
// first. An entry is taken out while a turn uses it, so that conversations served concurrently
// never share one, and put back afterwards. Its zero value is empty and ready; it is safe for
// concurrent use.
type Conv[E any] struct {
	mu      sync.Mutex
	entries []*E
	sizes   []int64 // the bytes of each entry as it was kept (see [Sizer]), parallel to entries
	bytes   int64   // the sum of sizes
	limit   int     // entries kept; 0: ConvEntries
	// byteLimit is the most bytes the entries kept hold together (0: no bound); the most
	// recently used entry is kept whatever its size.
	byteLimit int64
	evictions int64
}

// Sizer is an entry that estimates the bytes it holds: the memos that bound their bytes ask
// their entries. An entry that is no Sizer counts for nothing.
type Sizer interface {
	Bytes() int64
}

// Stats reports what a memo holds: its entries, the bytes they hold by their estimate, and
// how many entries it has dropped to stay within its bounds.
type Stats struct {
	Entries   int
	Bytes     int64
	Evictions int64
}

// SetLimit sets how many entries m keeps, 1 to MaxConvEntries (0: ConvEntries), before it is
// used.
func (m *Conv[E]) SetLimit(n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.limit = min(max(n, 0), MaxConvEntries)
}

// SetBytes bounds the bytes the entries m keeps hold together, by their estimate ([Sizer]);
// 0: no bound. The most recently used entry is kept whatever its size.
func (m *Conv[E]) SetBytes(n int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.byteLimit = max(n, 0)
}

// maxEntries returns how many entries m keeps. The caller locks.
func (m *Conv[E]) maxEntries() int {
	if m.limit > 0 {
		return m.limit
	}
	return ConvEntries
}

// Take removes and returns the kept entry mine picks, or, when the memo is full, the least
// recently used one for its storage (reused is then true), or nil.
func (m *Conv[E]) Take(mine func(*E) bool) (e *E, reused bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, e := range m.entries {
		if mine(e) {
			m.remove(k)
			return e, false
		}
	}
	if n := len(m.entries); n >= m.maxEntries() {
		e := m.entries[n-1]
		m.remove(n - 1)
		m.evictions++
		return e, true
	}
	return nil, false
}

// remove takes entry k out. The caller locks.
func (m *Conv[E]) remove(k int) {
	m.bytes -= m.sizes[k]
	m.entries = slices.Delete(m.entries, k, k+1)
	m.sizes = slices.Delete(m.sizes, k, k+1)
}

// Keep puts e back as the most recently used entry, dropping the least recently used ones
// beyond the limit.
func (m *Conv[E]) Keep(e *E) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var size int64
	if s, ok := any(e).(Sizer); ok {
		size = s.Bytes()
	}
	m.entries = slices.Insert(m.entries, 0, e)
	m.sizes = slices.Insert(m.sizes, 0, size)
	m.bytes += size
	for n := len(m.entries); n > m.maxEntries() || (m.byteLimit > 0 && m.bytes > m.byteLimit && n > 1); n-- {
		m.remove(n - 1)
		m.evictions++
	}
}

// Stats returns what m holds; the bytes are those of its entries as they were kept, and an
// entry in use (taken out) counts for nothing.
func (m *Conv[E]) Stats() Stats {
	m.mu.Lock()
	defer m.mu.Unlock()
	return Stats{Entries: len(m.entries), Bytes: m.bytes, Evictions: m.evictions}
}

// Len returns how many entries m holds.
func (m *Conv[E]) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.entries)
}

// Gen is a memo of two generations bounded in entries: Put starts a new generation when the
// current one holds Bound entries, dropping the previous one; Get finds an entry in either and
// moves one of the previous generation into the current one. It holds at most 2×Bound entries.
// The caller locks.
type Gen[K comparable, V any] struct {
	cur, prev map[K]V
	bound     int
	// moved counts the entries of prev found and put in cur, and evictions the entries of
	// the generations dropped that had not moved.
	moved, evictions int
}

// NewGen returns an empty memo bounded at bound entries per generation.
func NewGen[K comparable, V any](bound int) Gen[K, V] {
	return Gen[K, V]{cur: map[K]V{}, bound: bound}
}

// Get returns the value kept for k, and whether there is one.
func (m *Gen[K, V]) Get(k K) (V, bool) {
	if v, ok := m.cur[k]; ok {
		return v, true
	}
	v, ok := m.prev[k]
	if ok {
		m.Put(k, v)
		m.moved++
	}
	return v, ok
}

// Put keeps v for k in the current generation.
func (m *Gen[K, V]) Put(k K, v V) {
	if len(m.cur) >= m.bound {
		m.evictions += max(len(m.prev)-m.moved, 0)
		m.prev, m.cur, m.moved = m.cur, make(map[K]V, len(m.cur)), 0
	}
	m.cur[k] = v
}

// All calls f for each entry m holds in either generation (an entry in both once per
// generation), for a caller that sizes the values.
func (m *Gen[K, V]) All(f func(V)) {
	for _, v := range m.cur {
		f(v)
	}
	for _, v := range m.prev {
		f(v)
	}
}

// Len returns how many entries m holds in both generations.
func (m *Gen[K, V]) Len() int { return len(m.cur) + len(m.prev) }

// Bound returns the entries a generation holds before the next one starts.
func (m *Gen[K, V]) Bound() int { return m.bound }

// Reserve raises the bound to n entries, up to limit; it never raises it above limit, and
// lowers it to limit when it is above.
func (m *Gen[K, V]) Reserve(n, limit int) {
	m.bound = min(max(m.bound, n), limit)
}

// Entry returns the i-th most recently used entry m holds, or nil when it holds no more
// than i; the entry stays kept. Tests read a memo's state through it.
func (m *Conv[E]) Entry(i int) *E {
	m.mu.Lock()
	defer m.mu.Unlock()
	if i < 0 || i >= len(m.entries) {
		return nil
	}
	return m.entries[i]
}
