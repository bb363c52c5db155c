package agentctx

import (
	"slices"
	"sync"
)

// chainIndex maps each uuid of a transcript to the position of its first occurrence, the index
// [BuildChain] starts from. A steady turn's records are the previous turn's plus the ones
// written since, so a Pipeline keeps the index of each conversation it serves and extends it
// by the new records instead of hashing every uuid again (see [chainMemo]).
type chainIndex struct {
	// uuids is the uuid of each record indexed, in file order: what the index was built from.
	uuids    []string
	byUUID   map[string]int
	withUUID int // the records indexed that have a uuid
}

// newChainIndex returns an empty index with room for n records.
func newChainIndex(n int) *chainIndex {
	return &chainIndex{uuids: make([]string, 0, n), byUUID: make(map[string]int, n)}
}

// indexes reports whether records begin with the records ix was built from: the same uuid at
// every position. Nothing else of a record goes into the index. A string the caller kept
// from the previous turn compares at its address (the index holds it, so the address cannot
// be reused for other bytes); a uuid decoded again compares by its bytes.
func (ix *chainIndex) indexes(records []Record) bool {
	if len(records) < len(ix.uuids) {
		return false
	}
	for i, u := range ix.uuids {
		if records[i].UUID != u {
			return false
		}
	}
	return true
}

// extend indexes the records after the ones ix holds.
func (ix *chainIndex) extend(records []Record) {
	for i := len(ix.uuids); i < len(records); i++ {
		u := records[i].UUID
		ix.uuids = append(ix.uuids, u)
		if u == "" {
			continue
		}
		ix.withUUID++
		if _, ok := ix.byUUID[u]; !ok {
			ix.byUUID[u] = i
		}
	}
}

// reset empties ix for a transcript of n records, keeping its storage unless it is far larger
// than n needs.
func (ix *chainIndex) reset(n int) {
	if cap(ix.uuids) > 4*n+1024 {
		*ix = *newChainIndex(n)
		return
	}
	clear(ix.uuids)
	ix.uuids = ix.uuids[:0]
	clear(ix.byUUID)
	ix.withUUID = 0
}

// chainMemoEntries is how many conversations' indexes a Pipeline keeps: the ones it served
// last. Each entry is the size of its own transcript.
const chainMemoEntries = 8

// chainMemo holds the uuid indexes of the conversations a Pipeline served last. An index is
// taken out while a turn uses it, so that conversations served concurrently never share
// one, and put back afterwards. It changes only time: an index is used only when it
// indexes a prefix of the records given, and then extended by the rest.
type chainMemo struct {
	mu      sync.Mutex
	entries []*chainIndex // most recently used first
}

// index returns the uuid index of records: a kept one extended by the records written since
// it was built, or a new one. m may be nil: the index is then new and not kept.
func (m *chainMemo) index(records []Record) *chainIndex {
	if m == nil {
		ix := newChainIndex(len(records))
		ix.extend(records)
		return ix
	}
	ix := m.take(records)
	switch {
	case ix == nil:
		ix = newChainIndex(len(records))
	case !ix.indexes(records):
		ix.reset(len(records))
	}
	ix.extend(records)
	return ix
}

// take removes and returns the kept index most likely to index a prefix of records (it
// starts with the same uuid and holds no more records), or the least recently used one for
// its storage when there are as many as the memo keeps, or nil.
func (m *chainMemo) take(records []Record) *chainIndex {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, ix := range m.entries {
		if len(ix.uuids) > 0 && len(ix.uuids) <= len(records) && ix.uuids[0] == records[0].UUID {
			m.entries = slices.Delete(m.entries, k, k+1)
			return ix
		}
	}
	if n := len(m.entries); n == chainMemoEntries {
		ix := m.entries[n-1]
		m.entries = m.entries[:n-1]
		return ix
	}
	return nil
}

// keep puts ix back as the most recently used index. m may be nil.
func (m *chainMemo) keep(ix *chainIndex) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.entries = slices.Insert(m.entries, 0, ix)
	if len(m.entries) > chainMemoEntries {
		m.entries[len(m.entries)-1] = nil
		m.entries = m.entries[:chainMemoEntries]
	}
}

// chainScratch is the working memory of one [BuildChain] call, reused across calls (see
// chainScratchPool): none of it outlives the call.
type chainScratch struct {
	on                    []bool
	path, breaks, targets []int
	msgIDs                map[string]struct{}
	kept                  map[replayKey]int
	toolUses, answered    map[string]int
	results               map[string]struct{}
	size                  int // the most records a call filled the maps for
}

// chainScratchPool holds chainScratch values between calls; a Pipeline serves many
// conversations at once, so each call takes its own.
var chainScratchPool = sync.Pool{New: func() any { return new(chainScratch) }}

// getChainScratch returns scratch for a transcript of n records: empty maps, on all false.
func getChainScratch(n int) *chainScratch {
	s := chainScratchPool.Get().(*chainScratch)
	if s.msgIDs == nil || s.size > 4*n+1024 {
		// New maps, or smaller ones than those a much larger transcript left.
		*s = chainScratch{
			msgIDs: map[string]struct{}{}, kept: map[replayKey]int{},
			toolUses: map[string]int{}, answered: map[string]int{}, results: map[string]struct{}{},
		}
	}
	s.size = max(s.size, n)
	s.on = slices.Grow(s.on[:0], n)[:n]
	clear(s.on)
	return s
}

// putChainScratch empties s, so that it holds none of the caller's strings, and returns it
// to the pool.
func putChainScratch(s *chainScratch) {
	clear(s.msgIDs)
	clear(s.kept)
	clear(s.toolUses)
	clear(s.answered)
	clear(s.results)
	s.path, s.breaks, s.targets = s.path[:0], s.breaks[:0], s.targets[:0]
	chainScratchPool.Put(s)
}
