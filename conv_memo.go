package agentctx

import (
	"slices"
	"sync"
)

// convMemoEntries is how many conversations' entries a memo of a Pipeline keeps: the ones it
// served last. Each entry is the size of its own conversation.
const convMemoEntries = 8

// convMemo keeps one entry per conversation for the last conversations a Pipeline served, most
// recently used first. An entry is taken out while a turn uses it, so that conversations served
// concurrently never share one, and put back afterwards.
type convMemo[E any] struct {
	mu      sync.Mutex
	entries []*E
}

// take removes and returns the kept entry mine picks, or, when the memo is full, the least
// recently used one for its storage (reused is then true), or nil.
func (m *convMemo[E]) take(mine func(*E) bool) (e *E, reused bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, e := range m.entries {
		if mine(e) {
			m.entries = slices.Delete(m.entries, k, k+1)
			return e, false
		}
	}
	if n := len(m.entries); n == convMemoEntries {
		e := m.entries[n-1]
		m.entries = m.entries[:n-1]
		return e, true
	}
	return nil, false
}

// keep puts e back as the most recently used entry, dropping the least recently used one
// beyond convMemoEntries.
func (m *convMemo[E]) keep(e *E) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.entries = slices.Insert(m.entries, 0, e)
	if len(m.entries) > convMemoEntries {
		m.entries[len(m.entries)-1] = nil
		m.entries = m.entries[:convMemoEntries]
	}
}

// len returns how many entries m holds.
func (m *convMemo[E]) len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.entries)
}
