package transcript

import (
	"slices"
	"sync"
	"weak"

	"github.com/agentctx/agentctx/internal/memo"
)

// chainIndex maps each uuid of a transcript to the position of its first occurrence, the index
// [BuildChain] starts from. A steady turn's records are the previous turn's plus the ones
// written since, so a Pipeline keeps the index of each conversation it serves and extends it
// by the new records instead of hashing every uuid again (see [ChainCache]).
type chainIndex struct {
	// uuids and parents are the uuid and parentUuid of each record indexed, in file order:
	// with boundaries, what the index was built from.
	uuids    []string
	parents  []string
	marks    []indexMark
	byUUID   map[string]int
	withUUID int // the records indexed that have a uuid
	// boundaries lists the positions of the compact boundaries indexed, in file order: where
	// chainBuild.preserved looks for the latest one.
	boundaries []int
	// kids caches the positions of the records whose parentUuid is kidsOf, among the first
	// kidsUpTo records indexed (the children of the latest compaction's anchor, which its
	// kept tail relinks).
	kidsOf   string
	kidsUpTo int
	kids     []int
	// first is the first record of the slice last indexed, weakly: the index does not keep
	// the caller's records alive, and a pointer to records still alive cannot stand for
	// other records.
	first weak.Pointer[Record]
	// scan lists the records the stages look for across the whole transcript; a Pipeline's
	// memo keeps it in step with uuids (see [Scan]).
	scan Scan
	// kept is how many records at the start of the slice last indexed the index held as they
	// were (see common), and same reports that the slice is the one indexed before it (its
	// first record is the one indexed then).
	kept int
	same bool
	// resume is what the last chain built from the index leaves for the next turn's.
	resume chainState
}

// newChainIndex returns an empty index with room for n records.
func newChainIndex(n int) *chainIndex {
	return &chainIndex{uuids: make([]string, 0, n), parents: make([]string, 0, n), marks: make([]indexMark, 0, n), byUUID: make(map[string]int, n)}
}

// indexMark is what the index and its record scan read of a record beside its uuid and
// parentUuid: whether it is a compact boundary, and the kinds the scan lists it under.
type indexMark struct {
	boundary bool
	kinds    ScanSet
}

// markOf returns r's indexMark.
func markOf(r *Record) indexMark { return indexMark{r.IsCompactBoundary(), kindsOf(r)} }

// common returns how many records at the start of records ix indexes as they are: the same
// uuid, parentUuid and indexMark at every position, all the index and its scan are built from
// (nothing else of a record goes into them). A string the caller kept from the previous turn
// compares at its address (the index holds it, so the address cannot be reused for other
// bytes); one decoded again compares by its bytes. When records are the slice ix indexed last,
// only its first record and one of the last few it indexed are compared: the records between
// are the caller's append-only log (see [github.com/agentctx/agentctx.Input.Records]).
func (ix *chainIndex) common(records []Record) int {
	n := min(len(records), len(ix.uuids))
	if n > 0 && ix.first.Value() == &records[0] && ix.sameAt(records, 0) {
		// The slice indexed, its first record the one indexed: the caller's append-only log
		// (see [github.com/agentctx/agentctx.Input.Records]), grown in place, whose records are not replaced but by a
		// rewind, which appends new records (new uuids) from some position on. So a record
		// among the last few indexed that holds its uuid's first occurrence, still there as
		// it was, says that no rewind went back before it (a record without a uuid, or one
		// written again, says nothing). A turn built again puts another last record or two;
		// a rewind further back, or another transcript read into the slice, is found by
		// comparing every position.
		for j := n - 1; j >= max(1, n-rebuiltRecords); j-- {
			if u := ix.uuids[j]; u != "" && ix.byUUID[u] == j && ix.sameAt(records, j) {
				return j + 1
			}
		}
	}
	for i := range n {
		if !ix.sameAt(records, i) {
			return i
		}
	}
	return n
}

// rebuiltRecords is how many records at the end of what the index holds common looks at for
// the last one still indexed, in a slice it indexed before.
const rebuiltRecords = 4

// sameAt reports whether records[i] has the uuid, parentUuid and indexMark ix indexed at
// position i.
func (ix *chainIndex) sameAt(records []Record, i int) bool {
	r := &records[i]
	return r.UUID == ix.uuids[i] && r.ParentUUID == ix.parents[i] && markOf(r) == ix.marks[i]
}

// follow notes that ix now indexes the records of this slice.
func (ix *chainIndex) follow(records []Record) {
	if len(records) > 0 && ix.first.Value() != &records[0] {
		ix.first = weak.Make(&records[0])
	}
}

// truncate drops the records from position n on: ix is then the index of the first n.
func (ix *chainIndex) truncate(n int) {
	for j := len(ix.uuids) - 1; j >= n; j-- {
		u := ix.uuids[j]
		if u == "" {
			continue
		}
		ix.withUUID--
		if ix.byUUID[u] == j {
			delete(ix.byUUID, u) // no earlier record has it
		}
	}
	clear(ix.uuids[n:])
	ix.uuids = ix.uuids[:n]
	clear(ix.parents[n:])
	ix.parents = ix.parents[:n]
	ix.marks = ix.marks[:n]
	ix.boundaries = dropFrom(ix.boundaries, n)
	if ix.kidsUpTo > n {
		ix.kidsUpTo = n
		ix.kids = dropFrom(ix.kids, n)
	}
	ix.scan.truncate(n)
}

// dropFrom returns sorted positions without those from n on.
func dropFrom(pos []int, n int) []int {
	k := len(pos)
	for k > 0 && pos[k-1] >= n {
		k--
	}
	return pos[:k]
}

// children returns the positions of the records whose parentUuid is parent, in file order,
// scanning only the records the cache has not seen when it is parent's.
func (ix *chainIndex) children(records []Record, parent string) []int {
	if ix.kidsOf != parent || ix.kidsUpTo > len(records) {
		ix.kidsOf, ix.kidsUpTo, ix.kids = parent, 0, ix.kids[:0]
	}
	for i := ix.kidsUpTo; i < len(records); i++ {
		if records[i].ParentUUID == parent {
			ix.kids = append(ix.kids, i)
		}
	}
	ix.kidsUpTo = len(records)
	return ix.kids
}

// extend indexes the records after the ones ix holds.
func (ix *chainIndex) extend(records []Record) {
	for i := len(ix.uuids); i < len(records); i++ {
		u := records[i].UUID
		ix.uuids = append(ix.uuids, u)
		ix.parents = append(ix.parents, records[i].ParentUUID)
		ix.marks = append(ix.marks, markOf(&records[i]))
		if records[i].IsCompactBoundary() {
			ix.boundaries = append(ix.boundaries, i)
		}
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
	clear(ix.parents)
	ix.parents = ix.parents[:0]
	ix.marks = ix.marks[:0]
	clear(ix.byUUID)
	ix.withUUID = 0
	ix.boundaries = ix.boundaries[:0]
	ix.kidsOf, ix.kidsUpTo, ix.kids = "", 0, ix.kids[:0]
	ix.first = weak.Pointer[Record]{}
	ix.scan = Scan{} // turns may hold copies of the lists: new ones
	ix.kept, ix.same = 0, false
}

// ChainCache builds chains as [BuildChain] does, keeping the uuid index of the transcripts of
// the last conversations it served (8, or as [NewChainCache] sets) so that the next chain of each is
// built by extending the previous one by the records written since: a steady turn's chain
// costs the records written since, not the file. A Pipeline holds one. The chains are the
// ones BuildChain gives; the cache changes only time. Its zero value is ready, and it is safe
// for concurrent use.
//
// An index keeps only the records at the start of the records given that it indexed as they
// are (see [github.com/agentctx/agentctx.Input.Records] for the append-only log a caller keeps), and is extended by the
// rest; the index does not keep the caller's records alive.
type ChainCache struct {
	ix memo.Conv[chainIndex]
}

// NewChainCache returns a ChainCache that keeps the indexes of the last conversations it
// served, 1 to 4,096 (0: 8, as the zero ChainCache does).
func NewChainCache(conversations int) *ChainCache {
	c := &ChainCache{}
	c.ix.SetLimit(conversations)
	return c
}

// Build returns the chain of records, as [BuildChain] does. c may be nil: the chain is then
// built without a cache.
func (c *ChainCache) Build(records []Record, opts ChainOptions) (*Chain, error) {
	return buildChain(records, opts, c)
}

// index returns the uuid index of records: a kept one extended by the records written since
// it was built, or a new one. m may be nil: the index is then new and not kept.
func (m *ChainCache) index(records []Record) *chainIndex {
	if m == nil {
		ix := newChainIndex(len(records))
		ix.extend(records)
		return ix
	}
	ix := m.take(records)
	if ix == nil {
		ix = newChainIndex(len(records))
	} else if n := ix.common(records); len(ix.uuids)-n > n {
		ix.reset(len(records)) // dropping the records that differ costs more than indexing anew
	} else {
		ix.same = len(records) > 0 && ix.first.Value() == &records[0]
		ix.truncate(n) // another record at the end (a turn built again), a fork, a prefix
		ix.kept = n
	}
	ix.extend(records)
	ix.follow(records)
	ix.scan.update(records)
	ix.listPins(records)
	return ix
}

// take removes and returns the kept index most likely to share a prefix with records (it
// starts with the same uuid), or the least recently used one for its storage when there are
// as many as the memo keeps, or nil.
func (m *ChainCache) take(records []Record) *chainIndex {
	ix, _ := m.ix.Take(func(ix *chainIndex) bool {
		return len(ix.uuids) > 0 && len(records) > 0 && ix.uuids[0] == records[0].UUID
	})
	return ix
}

// keep puts ix back as the most recently used index. m may be nil.
func (m *ChainCache) keep(ix *chainIndex) {
	if m != nil {
		m.ix.Keep(ix)
	}
}

// chainScratch is the working memory of one [BuildChain] call, reused across calls (see
// chainScratchPool), or the one a Pipeline keeps for a conversation's next turn (see
// [chainState]).
type chainScratch struct {
	// on and attached are per record: on the chain; holding results of calls on the chain.
	on, attached          []bool
	path, breaks, targets []int
	// msgs maps each message id on the walk to its entry in heads: the first of its records
	// kept, one per replayKey, listed in keys.
	msgs  map[string]int
	heads []int
	keys  []keptKey
	// calls maps each tool_use id on the chain to its entry in callList, in chain order.
	calls    map[string]int
	callList []chainCall
	// replays lists the records left out as replays (sorted by the record left out once the
	// build is done); nAttached counts the records attached holds.
	replays   []replayAt
	nAttached int
	size      int // the most records a call filled the maps for
}

// keptKey is the first record on a chain with a replayKey: at position pos; next is the entry
// of the next key of the same message id, or -1.
type keptKey struct {
	key       replayKey
	pos, next int
}

// chainCall is a tool_use id on a chain: the position of the first record on the chain holding
// it, and of the first record answering it (-1: none yet).
type chainCall struct {
	id          string
	use, answer int
}

// keptOf returns the position of the record kept for key under message entry m.
func (s *chainScratch) keptOf(m int, key replayKey) (int, bool) {
	for e := s.heads[m]; e >= 0; e = s.keys[e].next {
		if s.keys[e].key == key {
			return s.keys[e].pos, true
		}
	}
	return 0, false
}

// keep records position i as the first record with key under message entry m.
func (s *chainScratch) keep(m int, key replayKey, i int) {
	s.keys = append(s.keys, keptKey{key: key, pos: i, next: s.heads[m]})
	s.heads[m] = len(s.keys) - 1
}

// use records that the record at position i holds tool_use id, unless an earlier one does.
func (s *chainScratch) use(id string, i int) {
	if _, ok := s.calls[id]; !ok {
		s.calls[id] = len(s.callList)
		s.callList = append(s.callList, chainCall{id: id, use: i, answer: -1})
	}
}

// call returns the call of tool_use id on the chain, or nil. The pointer is valid until the
// next use.
func (s *chainScratch) call(id string) *chainCall {
	k, ok := s.calls[id]
	if !ok {
		return nil
	}
	return &s.callList[k]
}

// unanswered lists the tool_use ids of c's records that no record answers, in chain order,
// once each.
func (s *chainScratch) unanswered(c *Chain) []string {
	var out []string
	if !slices.ContainsFunc(s.callList, func(call chainCall) bool { return call.answer < 0 }) {
		return nil // every call answered: the common case, without looking any id up
	}
	if c.Preserved == nil {
		// Calls were met in file order, which is the chain's.
		for _, call := range s.callList {
			if call.answer < 0 {
				out = append(out, call.id)
			}
		}
		return out
	}
	for _, r := range c.Records {
		if r.Type != TypeAssistant || r.Message == nil {
			continue
		}
		for _, b := range r.Message.Content {
			if tu, ok := b.(*ToolUse); ok {
				if call := s.call(tu.ID); call != nil && call.answer == -1 {
					call.answer = -2 // listed once
					out = append(out, tu.ID)
				}
			}
		}
	}
	for _, id := range out {
		s.call(id).answer = -1 // as it was: a kept state goes on from the calls
	}
	return out
}

// chainScratchPool holds chainScratch values between calls; a Pipeline serves many
// conversations at once, so each call takes its own.
var chainScratchPool = sync.Pool{New: func() any { return new(chainScratch) }}

// getChainScratch returns scratch for a transcript of n records: empty maps, on all false.
func getChainScratch(n int) *chainScratch {
	s := chainScratchPool.Get().(*chainScratch)
	if !s.fits(n) {
		*s = newChainScratch()
	}
	s.sized(n)
	return s
}

// putChainScratch empties s, so that it holds none of the caller's strings, and returns it
// to the pool.
func putChainScratch(s *chainScratch) {
	s.empty()
	chainScratchPool.Put(s)
}

// newChainScratch returns scratch with empty maps.
func newChainScratch() chainScratch {
	return chainScratch{msgs: map[string]int{}, calls: map[string]int{}}
}

// fits reports whether s's storage can serve a build over n records: it has maps, and not
// ones a much larger transcript left.
func (s *chainScratch) fits(n int) bool { return s.msgs != nil && s.size <= 4*n+1024 }

// sized gives s room for n records, on and attached all false.
func (s *chainScratch) sized(n int) {
	s.size = max(s.size, n)
	s.on = slices.Grow(s.on[:0], n)[:n]
	clear(s.on)
	s.attached = slices.Grow(s.attached[:0], n)[:n]
	clear(s.attached)
}

// empty empties the maps and lists of s, which then holds none of a build's strings.
func (s *chainScratch) empty() {
	clear(s.msgs)
	clear(s.calls)
	clear(s.keys)
	clear(s.callList)
	s.heads, s.keys, s.callList = s.heads[:0], s.keys[:0], s.callList[:0]
	s.path, s.breaks, s.targets = s.path[:0], s.breaks[:0], s.targets[:0]
	s.replays, s.nAttached = s.replays[:0], 0
}
