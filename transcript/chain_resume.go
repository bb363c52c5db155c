package transcript

import "slices"

// chainState is what building a conversation's chain leaves for its next turn: the working
// memory of the build (which records are on the chain, the message ids on the walk and the
// first record of each replay key, the tool calls and their answers, the replays), where the
// walk began, and the chain's positions. A steady turn's records are the previous turn's and
// the ones written since; when the walk from the new leaf goes through records written since
// only, back to where the last walk began, the chain is the last one and what the passes of a
// build find among the new records, run over them alone with the state they left. The state
// is extended only when that gives the chain a build from scratch gives (see extend for what
// is checked); otherwise the chain is built anew, and the state with it.
//
// The state extended from a build of the first base records can be rolled back to it (undo):
// a turn built again — the same records with another last record or two — goes on from there.
// It is kept in the conversation's [chainIndex], and trusted only for the slice it was last
// built or extended over, grown in place (see [github.com/agentctx/agentctx.Input.Records]): the passes read more of a
// record than the index compares. A build the state does not follow (another leaf, a walk
// through boundaries) drops it, since the index then follows other records.
type chainState struct {
	ok   bool // holds a build that can be extended
	opts ChainOptions
	n    int // records [0, n) built over
	s    chainScratch
	// headIDs is the message id of each entry of s.heads; offIDs holds the message ids met
	// from the chain's start on that are not on the walk.
	headIDs []string
	offIDs  map[string]bool
	idx     []int // the chain's positions, in chain order
	// walkLeaf is where the walk began, leaf the position of the chain's Leaf, side the
	// leaf's thread (IsSidechain).
	walkLeaf, leaf int
	side           bool
	boundary       int // position of the chain's compact boundary, or -1
	// The kept tail of the latest compaction, when one was found: its relinks, the uuids of
	// its anchor and tail, where it lies, and whether the chain applies it (preserved).
	relink    map[string]string
	anchor    string
	preserved bool
	seg       segment
	tail      string
	// base is where the extension of the state began: undo restores the state of a build
	// over the first base records.
	base int
	undo chainUndo
}

// chainUndo is what rolls a chainState back from n records to base: the lengths of its lists
// at base, the entries of its heads and calls that an extension changed (with their values
// before), and the message ids it noted off the walk.
type chainUndo struct {
	walkLeaf, leaf, nAttached        int
	heads, keys, calls, replays, idx int
	headSet, answers                 []posValue
	offLog                           []string
	logging                          bool // an extension runs: changes are logged
}

// posValue is an entry of a list and its value before a change.
type posValue struct{ at, was int }

// setHead logs that entry m of heads, of value was, is set, when the entry predates base.
func (u *chainUndo) setHead(m, was int) {
	if u.logging && m < u.heads {
		u.headSet = append(u.headSet, posValue{m, was})
	}
}

// setAnswer logs that call e's answer, of value was, is set, when the call predates base.
func (u *chainUndo) setAnswer(e, was int) {
	if u.logging && e < u.calls {
		u.answers = append(u.answers, posValue{e, was})
	}
}

// offWalk notes a message id met off the walk.
func (st *chainState) offWalk(id string) {
	if st.offIDs[id] {
		return
	}
	st.offIDs[id] = true
	if st.undo.logging {
		st.undo.offLog = append(st.undo.offLog, id)
	}
}

// chain returns the chain of records, whose index ix is: the state's chain extended by the
// records written since, when it can be, or one built anew.
func (st *chainState) chain(records []Record, opts ChainOptions, ix *chainIndex) *Chain {
	failed := -1 // the records the state held when it could not be extended
	if st.ok && ix.same && st.opts == opts {
		switch {
		case ix.kept >= st.n:
			st.commit()
		case ix.kept >= st.base:
			st.rollback()
		default:
			st.ok = false
		}
		if st.ok {
			n0 := st.n
			if c := st.extend(records, ix); c != nil {
				return c
			}
			failed = n0
		}
	}
	if k := ix.kept; k > 0 && k < len(records) && len(records)-k <= rebuiltRecords && k != failed {
		// A turn built again, or a few records written since: build the records the index
		// kept, then extend, so that the turn built once more rolls back to them (not when
		// the state of those records has just failed to extend: the same would fail again).
		if st.build(records[:k], opts, ix); st.ok {
			if c := st.extend(records, ix); c != nil {
				return c
			}
		}
	}
	return st.build(records, opts, ix)
}

// build builds the chain of records from scratch into the state, which can be extended
// afterwards if the build allows it (see took).
func (st *chainState) build(records []Record, opts ChainOptions, ix *chainIndex) *Chain {
	st.reset(len(records))
	b := chainBuild{records: records, ix: ix, s: &st.s, st: st}
	c, _ := b.full(opts) // fails only for a leaf not found; opts.Leaf is ""
	return c
}

// reset empties the state for a build over n records, keeping its storage unless it is far
// larger than n needs.
func (st *chainState) reset(n int) {
	if !st.s.fits(n) {
		*st = chainState{s: newChainScratch(), offIDs: map[string]bool{}}
	}
	st.s.empty()
	st.s.sized(n)
	clear(st.offIDs)
	clear(st.headIDs)
	st.headIDs, st.idx = st.headIDs[:0], st.idx[:0]
	st.ok, st.relink, st.anchor, st.preserved, st.tail = false, nil, "", false, ""
	st.undo = chainUndo{}
}

// took keeps what the full build b left, if a later turn can extend it: a chain with a leaf,
// without breaks, cycles or a kept tail that does not check out, and without an interrupt
// notice waiting for its parent. A uuid that only records after the ones built over hold
// (see chainBuild.find) makes one of these: a break of the walk, a kept tail that does not
// check out, a notice waiting. The leaf stays on its thread: a response written again that
// stands for it is one of its thread's.
func (st *chainState) took(b *chainBuild, opts ChainOptions, walkLeaf int, seg segment) {
	c := b.c
	st.ok = c.Leaf != nil && len(c.Problems) == 0 && c.Cycles == 0 && c.SegmentProblem == "" && b.pending == 0
	if !st.ok {
		return
	}
	st.opts, st.n, st.base = opts, len(b.records), len(b.records)
	st.walkLeaf, st.leaf, st.side = walkLeaf, b.leaf, c.Leaf.IsSidechain
	st.boundary = c.BoundaryIndex()
	st.relink, st.anchor, st.tail = b.relink, b.anchor, b.tail
	st.preserved, st.seg = c.Preserved != nil, seg
	st.idx = append(st.idx[:0], c.index...)
	st.commit()
}

// commit makes the state's records its base: a later rollback goes back to them.
func (st *chainState) commit() {
	u := &st.undo
	s := &st.s
	*u = chainUndo{
		walkLeaf: st.walkLeaf, leaf: st.leaf, nAttached: s.nAttached,
		heads: len(s.heads), keys: len(s.keys), calls: len(s.callList), replays: len(s.replays),
		idx:     len(st.idx),
		headSet: u.headSet[:0], answers: u.answers[:0], offLog: u.offLog[:0],
	}
	st.base = st.n
}

// rollback restores the state of its base.
func (st *chainState) rollback() {
	u, s := &st.undo, &st.s
	for k := len(u.headSet) - 1; k >= 0; k-- {
		s.heads[u.headSet[k].at] = u.headSet[k].was
	}
	for _, id := range st.headIDs[u.heads:] {
		delete(s.msgs, id)
	}
	st.headIDs, s.heads, s.keys = st.headIDs[:u.heads], s.heads[:u.heads], s.keys[:u.keys]
	for _, call := range s.callList[u.calls:] {
		delete(s.calls, call.id)
	}
	s.callList = s.callList[:u.calls]
	for k := len(u.answers) - 1; k >= 0; k-- {
		s.callList[u.answers[k].at].answer = u.answers[k].was
	}
	for _, id := range u.offLog {
		delete(st.offIDs, id)
	}
	s.replays, st.idx = s.replays[:u.replays], st.idx[:u.idx]
	st.walkLeaf, st.leaf, s.nAttached = u.walkLeaf, u.leaf, u.nAttached
	st.n = st.base
	u.headSet, u.answers, u.offLog = u.headSet[:0], u.answers[:0], u.offLog[:0]
}

// extend returns the chain of records from the state over the first st.n of them (which are
// as they were), or nil when a build from scratch could give another chain; the state then
// holds nothing. The records written since must not hold a compact boundary, a uuid an
// earlier record holds, or a child of the kept tail's anchor; the new leaf must be on the
// same thread, and the walk from it must go through records written since only, without a
// break, back to where the last walk began; no message id on that part of the walk may be
// one met off the walk before. Then the earlier records are on the chain as they were, and
// the passes of a build over the records written since, with the state the passes left, give
// what a build over every record would.
func (st *chainState) extend(records []Record, ix *chainIndex) *Chain {
	n0, n := st.n, len(records)
	byUUID := ix.byUUID
	st.ok = false // until the extension is done
	if k := len(ix.boundaries); k > 0 && ix.boundaries[k-1] >= n0 {
		return nil
	}
	for i := n0; i < n; i++ {
		if u := records[i].UUID; u != "" && byUUID[u] != i {
			return nil
		}
	}
	if st.relink != nil {
		if kids := ix.children(records, st.anchor); len(kids) > 0 && kids[len(kids)-1] >= n0 {
			return nil
		}
	}
	leaf := defaultLeaf(records)
	if leaf < 0 {
		return nil
	}
	if u := records[leaf].UUID; u != "" {
		leaf = byUUID[u]
	}
	if st.relink != nil && leaf == st.seg.anchor {
		leaf = byUUID[st.tail]
	}
	if records[leaf].IsSidechain != st.side {
		return nil
	}
	s := &st.s
	s.on = append(s.on[:n0], make([]bool, n-n0)...)
	s.attached = append(s.attached[:n0], make([]bool, n-n0)...)
	c := &Chain{boundaryIdx: -1, scan: ix.scan, Leaf: &records[leaf]}
	b := chainBuild{records: records, ix: ix, s: s, c: c, st: st, relink: st.relink, leaf: leaf, dups: ix.withUUID - len(byUUID)}
	b.w = walker{records: records, byUUID: byUUID, relink: b.relink, leaf: c.Leaf, unique: b.dups == 0}
	on := s.on
	visited := func(j int) bool { return on[j] }
	path := s.path[:0]
	i := leaf
	for i >= n0 { // no record written since is a boundary (above); a root ends at -1
		if on[i] {
			return nil
		}
		on[i] = true
		path = append(path, i)
		next, brk := b.w.next(i, visited)
		if brk != nil {
			return nil
		}
		i = next
	}
	s.path = path
	if i != st.walkLeaf {
		return nil
	}
	if leaf < n0 {
		c.Leaf, b.leaf = &records[st.leaf], st.leaf
	}
	// The message ids of the new part of the walk, each looked up once.
	st.undo.logging = true
	defer func() { st.undo.logging = false }()
	prevID := ""
	for _, k := range path {
		r := &records[k]
		if r.Type != TypeAssistant || r.Message == nil || r.Message.ID == "" || r.Message.ID == prevID {
			continue
		}
		prevID = r.Message.ID
		if _, ok := s.msgs[prevID]; ok {
			continue
		}
		if st.offIDs[prevID] {
			return nil // earlier records of this message would join the chain
		}
		s.msgs[prevID] = len(s.heads)
		s.heads = append(s.heads, -1)
		st.headIDs = append(st.headIDs, prevID)
	}
	b.responses(n0, n) // a response written again that stands for the leaf is of its thread
	b.results(n0, n)
	b.notices(n0, n)
	for i := n0; i < n; i++ {
		if on[i] {
			st.idx = append(st.idx, i)
		}
	}
	if st.boundary >= 0 {
		c.Boundary, c.boundaryIdx = &records[st.boundary], st.boundary
	}
	if st.preserved {
		c.Preserved = records[st.seg.boundary].CompactMetadata.PreservedSegment
	}
	c.Replays = replayList(records, s.replays)
	b.finish(slices.Clone(st.idx))
	// A notice waiting for its parent leaves this chain as a build would, but a later record
	// may attach it: the state is not extended again.
	st.ok, st.n, st.walkLeaf, st.leaf = b.pending == 0, n, leaf, b.leaf
	return c
}
