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
	limit   int // entries kept; 0: ConvEntries
}

// SetLimit sets how many entries m keeps, 1 to MaxConvEntries (0: ConvEntries), before it is
// used.
func (m *Conv[E]) SetLimit(n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.limit = min(max(n, 0), MaxConvEntries)
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
			m.entries = slices.Delete(m.entries, k, k+1)
			return e, false
		}
	}
	if n := len(m.entries); n >= m.maxEntries() {
		e := m.entries[n-1]
		m.entries = m.entries[:n-1]
		return e, true
	}
	return nil, false
}

// Keep puts e back as the most recently used entry, dropping the least recently used ones
// beyond the limit.
func (m *Conv[E]) Keep(e *E) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.entries = slices.Insert(m.entries, 0, e)
	if n := m.maxEntries(); len(m.entries) > n {
		clear(m.entries[n:])
		m.entries = m.entries[:n]
	}
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
	}
	return v, ok
}

// Put keeps v for k in the current generation.
func (m *Gen[K, V]) Put(k K, v V) {
	if len(m.cur) >= m.bound {
		m.prev, m.cur = m.cur, make(map[K]V, len(m.cur))
	}
	m.cur[k] = v
}

// Len returns how many entries m holds in both generations.
func (m *Gen[K, V]) Len() int { return len(m.cur) + len(m.prev) }

// Bound returns the entries a generation holds before the next one starts.
func (m *Gen[K, V]) Bound() int { return m.bound }

// Reserve raises the bound to n entries, up to limit; it never lowers it.
func (m *Gen[K, V]) Reserve(n, limit int) {
	m.bound = max(m.bound, min(n, limit))
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
