package transcript

import (
	"fmt"
	"slices"
	"strings"
)

// ChainOptions selects which conversation of a transcript [BuildChain] rebuilds.
// The zero value rebuilds the active conversation from its latest compact boundary.
type ChainOptions struct {
	// Leaf is the uuid of the record to rebuild the chain from. Empty means the last user or
	// assistant record in file order (a main-thread record if the file has any, else a
	// sidechain record, so subagent files work too).
	Leaf string
	// ThroughBoundaries continues the walk across compact boundaries via logicalParentUuid,
	// for display or re-summarising. Requests never use it.
	ThroughBoundaries bool
	// NoBridge turns off the bridges over unreadable records and dangling parents: the walk
	// stops at a record whose parent is an unreadable line, or is nowhere in the transcript,
	// as at a root. The break is reported all the same, with the records it cuts off (see
	// [ChainProblem]).
	NoBridge bool
}

// Chain is one conversation rebuilt from a transcript's parentUuid graph.
//
// Records holds the records on the path from the root (or the latest compact boundary) to the
// leaf, every record of a split assistant message on that path, the tool results answering its
// tool_use blocks and the interrupt notices hanging off those results, in file order — except
// that a kept tail the chain relinked (see [BuildChain]) comes right after the summary, where
// the relinked path has it.
// Progress, system and attachment records met on the walk stay in Records; the request builder
// drops them. The records are pointers into the slice given to [BuildChain].
type Chain struct {
	Records []*Record
	// Leaf is the record the walk started from; nil for a transcript without messages. A
	// record written again (see [Replay]) stands for the first occurrence of what it repeats.
	Leaf *Record
	// Boundary is the latest compact boundary on the walk, or nil. Its LogicalParentUUID links
	// to the history before it.
	Boundary *Record
	// Unanswered lists tool_use ids on the chain with no tool_result anywhere in the file, in
	// chain order. A session that ended mid-call has them in its last assistant message.
	Unanswered []string
	// Cycles counts parentUuid links that were ignored because they closed a cycle.
	Cycles int
	// Preserved is the kept tail of the latest compaction that the chain relinked, or nil.
	Preserved *PreservedSegment
	// SegmentProblem says why the latest boundary's preserved segment was not applied ("" when
	// there was none, or it was).
	SegmentProblem string
	// Problems lists the breaks in the parentUuid links the walk met, from the leaf up:
	// unreadable records and dangling parents it bridged (or, with [ChainOptions.NoBridge],
	// stopped at) and cycles, each with the records it cuts off. Empty for a sound chain.
	Problems []ChainProblem
	// Replays lists the records left out because they repeat records the chain holds, in file
	// order (see [Replay]).
	Replays []Replay
	// index holds each record's position in the original slice, parallel to Records.
	index []int
	// boundaryIdx is the file position of Boundary, or -1.
	boundaryIdx int
	// scan is this turn's copy of the Pipeline's record index of the transcript; without a
	// memo it indexes nothing, and readers pass over every record.
	scan Scan
}

// BoundaryIndex returns the position in the transcript of Boundary, or -1 without one.
func (c *Chain) BoundaryIndex() int {
	if c.Boundary == nil {
		return -1
	}
	return c.boundaryIdx
}

// Start returns the position in the transcript of the chain's first record in file order
// when it starts at a compact boundary (the head of the kept tail it relinked, else the
// boundary), and 0 without one: the records before it are not the chain's, and the decisions
// about what the chain holds come after what they decide on.
func (c *Chain) Start() int {
	if c.Boundary == nil || len(c.index) == 0 {
		return 0
	}
	return slices.Min(c.index)
}

// Index returns the position in the transcript of Records[i].
func (c *Chain) Index(i int) int { return c.index[i] }

// Scan returns the index of the records the stages look for across the whole transcript the
// chain was built from (see [Scan]). A chain built through a [ChainCache] carries the cache's
// index as it was at the build; one built by [BuildChain] carries an empty one, which indexes
// nothing, so that readers pass over every record.
func (c *Chain) Scan() *Scan { return &c.scan }

// Messages returns the user and assistant records of the chain: the ones a request is made of.
func (c *Chain) Messages() []*Record {
	out := make([]*Record, 0, len(c.Records))
	for _, r := range c.Records {
		if r.IsConversation() && !r.IsAPIErrorMessage {
			out = append(out, r)
		}
	}
	return out
}

// BuildChain rebuilds a conversation from records (in file order) the way Claude Code's session
// files require: a plain parentUuid walk loses parallel tool calls, because each tool_use block
// of one response is its own record and each result hangs off its own tool_use record.
//
// Duplicate uuids keep their first occurrence, and a response written again (the records of a
// message.id repeated with the same content blocks) is kept once; [Chain.Replays] lists what
// was left out. A parentUuid that names an unreadable line (see [Damage]), or a record the
// transcript does not hold, is bridged in file order, unless [ChainOptions.NoBridge] is set;
// a link that closes a cycle ends the walk as a root; [Chain.Problems] reports each break and
// what it cuts off. When the latest compact boundary of the leaf's thread kept a tail
// ([CompactMetadata.PreservedSegment]), the tail is relinked as Claude Code does on resume —
// its head hangs off the anchor, the anchor's other children off its tail — so the chain reads
// boundary, summary, the kept records in order, then what came after; a segment whose tail does
// not lead back to its head along parentUuid, across the breaks the walk bridges (none with
// NoBridge), is not applied, and [Chain.SegmentProblem] says why. BuildChain does not modify
// records.
func BuildChain(records []Record, opts ChainOptions) (*Chain, error) {
	return buildChain(records, opts, nil)
}

// buildChain is [BuildChain] with an optional memo of the uuid index (nil: none), which a
// Pipeline carries from one turn to the next; with one, a steady turn's chain extends the
// previous turn's (see [chainState]).
func buildChain(records []Record, opts ChainOptions, memo *ChainCache) (*Chain, error) {
	// Each uuid maps to its first occurrence.
	ix := memo.index(records)
	defer memo.keep(ix)
	if memo != nil {
		if opts.Leaf == "" && !opts.ThroughBoundaries {
			return ix.resume.chain(records, opts, ix), nil
		}
		// The index now follows these records, not the ones the state was built over.
		ix.resume.ok = false
	}
	s := getChainScratch(len(records))
	defer putChainScratch(s)
	b := chainBuild{records: records, ix: ix, s: s}
	return b.full(opts)
}

// chainBuild is one build of a chain: the records, their index, the working memory and the
// chain being built. Its passes run over a range of positions, so that an extension (see
// [chainState]) runs them over the records written since the last build, as they are.
type chainBuild struct {
	records []Record
	ix      *chainIndex
	s       *chainScratch
	c       *Chain
	w       walker
	dups    int               // records holding a uuid an earlier record holds
	relink  map[string]string // uuid → parent uuid that replaces its parentUuid
	anchor  string            // the uuids of the kept tail's anchor and tail, when relink
	tail    string            // applies it
	leaf    int               // position of c.Leaf
	// st is set when the build is kept for the next turn: what only a kept state needs is
	// noted in it (see [chainState]).
	st *chainState
	// pending counts interrupt notices off the chain whose parent the records do not hold.
	pending int
}

// find returns the position of the first record holding uuid u among the records built over
// (see firstAmong).
func (b *chainBuild) find(u string) (int, bool) { return firstAmong(b.ix.byUUID, u, len(b.records)) }

// firstAmong returns the position byUUID gives uuid u when it is one of the first n records.
// The index may hold later records (a build of the records a turn kept, see [chainState]):
// a uuid only they hold is missing, as in an index of the first n records alone.
func firstAmong(byUUID map[string]int, u string, n int) (int, bool) {
	p, ok := byUUID[u]
	if !ok || p >= n {
		return 0, false
	}
	return p, true
}

// dup reports whether records[i] repeats the uuid of an earlier record.
func (b *chainBuild) dup(i int) bool {
	u := b.records[i].UUID
	return b.dups > 0 && u != "" && b.ix.byUUID[u] != i
}

// parentOf returns r's parent uuid, relinked when relink (the kept tail's) holds r.
func parentOf(r *Record, relink map[string]string) string {
	if p, ok := relink[r.UUID]; ok {
		return p
	}
	return r.ParentUUID
}

// full builds the chain of b.records.
func (b *chainBuild) full(opts ChainOptions) (*Chain, error) {
	records, byUUID, s := b.records, b.ix.byUUID, b.s
	b.dups = b.ix.withUUID - len(byUUID)
	leaf := -1
	if opts.Leaf != "" {
		i, ok := b.find(opts.Leaf)
		if !ok {
			return nil, fmt.Errorf("agentctx: chain leaf %q not found", opts.Leaf)
		}
		leaf = i
	} else {
		leaf = defaultLeaf(records)
	}
	if leaf >= 0 && records[leaf].UUID != "" {
		leaf = byUUID[records[leaf].UUID] // a copy written again stands for the first occurrence
	}
	c := &Chain{boundaryIdx: -1, scan: b.ix.scan}
	b.c = c
	if leaf < 0 {
		return c, nil
	}
	c.Leaf = &records[leaf]

	// The kept tail of the latest compaction, relinked (not on walks through boundaries,
	// which follow the history as it was written).
	var seg segment
	if !opts.ThroughBoundaries {
		seg = b.preserved(opts.NoBridge)
		if c.Preserved != nil && leaf == seg.anchor {
			// Nothing was written after the summary but the kept tail: the conversation goes
			// on from the tail, which the relink puts after the anchor.
			leaf = byUUID[c.Preserved.TailUUID]
			c.Leaf = &records[leaf]
		}
	}
	b.leaf = leaf
	walkLeaf := leaf

	// 1. Walk parentUuid from the leaf, bridging unreadable records.
	b.w = walker{records: records, byUUID: byUUID, relink: b.relink, leaf: c.Leaf, through: opts.ThroughBoundaries, unique: b.dups == 0}
	w := &b.w
	on := s.on // on[i]: records[i] is on the chain (during the walk: on its path)
	visited := func(j int) bool { return on[j] }
	path := s.path[:0]       // the walk, leaf first
	breaks := s.breaks[:0]   // where each of c.Problems broke: its position in path
	targets := s.targets[:0] // and where a bridge goes (or would go)
	start := 0               // records before the boundary never join the chain
	for i := leaf; i >= 0; {
		if on[i] {
			c.Cycles++
			from := path[len(path)-1]
			r := &records[from]
			c.Problems = append(c.Problems, ChainProblem{Kind: ChainCycle, UUID: r.UUID, Parent: records[i].UUID, Line: r.Line})
			breaks, targets = append(breaks, len(path)), append(targets, w.target(from, visited))
			break
		}
		on[i] = true
		path = append(path, i)
		if r := &records[i]; r.IsCompactBoundary() && c.Boundary == nil {
			c.Boundary = r
			c.boundaryIdx = i
			start = i
		}
		next, brk := w.next(i, visited)
		if brk != nil {
			if brk.problem.Kind.bridgeable() && brk.to >= 0 && !opts.NoBridge {
				brk.problem.Bridge = records[brk.to].UUID
				next = brk.to
			}
			c.Problems = append(c.Problems, brk.problem)
			breaks, targets = append(breaks, len(path)), append(targets, brk.to)
			if brk.problem.Bridge == "" {
				break
			}
		}
		i = next
	}
	s.path, s.breaks, s.targets = path, breaks, targets
	if opts.ThroughBoundaries {
		start = 0
	} else if c.Preserved != nil && c.Boundary != nil && c.boundaryIdx == seg.boundary {
		start = seg.head // the kept tail was written before the boundary
	} else {
		c.Preserved = nil // the walk did not reach the segment's boundary
	}
	if c.Boundary == nil {
		c.boundaryIdx = -1
	}
	if len(c.Problems) > 0 {
		// The records the walk reached from each step on, that join the chain.
		joined := make([]int, len(path)+1)
		for k := len(path) - 1; k >= 0; k-- {
			joined[k] = joined[k+1]
			if path[k] >= start {
				joined[k]++
			}
		}
		for k := range c.Problems {
			if c.Problems[k].Bridge != "" {
				c.Problems[k].Cut = joined[breaks[k]]
			} else {
				c.Problems[k].Cut = w.reach(targets[k], start, visited)
			}
		}
	}

	// 2. Re-attach split assistant records and the results of their tool calls.
	b.walkIDs(path)
	b.responses(start, len(records))
	b.results(start, len(records))
	b.notices(start, len(records))
	// Records written again under the uuid of a record on the chain.
	if b.dups > 0 {
		for i := range records {
			if b.dup(i) {
				if k := byUUID[records[i].UUID]; on[k] && k >= start {
					s.replays = append(s.replays, replayAt{i, k, true})
				}
			}
		}
	}
	c.Replays = replayList(records, s.replays)

	n := 0
	for _, o := range on[start:] {
		if o {
			n++
		}
	}
	idx := make([]int, 0, n)
	for i := start; i < len(records); i++ {
		if on[i] {
			idx = append(idx, i)
		}
	}
	if c.Preserved != nil {
		idx = segmentOrder(idx, seg)
	}
	b.finish(idx)
	if b.st != nil {
		b.st.took(b, opts, walkLeaf, seg)
	}
	return c, nil
}

// finish gives the chain its records, at positions idx in chain order, and the calls no
// record answers.
func (b *chainBuild) finish(idx []int) {
	c := b.c
	c.index = idx
	c.Records = make([]*Record, len(idx))
	for k, i := range idx {
		c.Records[k] = &b.records[i]
	}
	c.Unanswered = b.s.unanswered(c)
}

// walkIDs notes the message ids of the assistant records on path (the walk, leaf first):
// each gets an entry listing the first of its records kept, one per replayKey (see
// chainScratch.keptOf). A message's split records mostly follow one another: the id of the
// record before is not looked up again.
func (b *chainBuild) walkIDs(path []int) {
	s, prevID := b.s, ""
	for _, i := range path {
		if r := &b.records[i]; r.Type == TypeAssistant && r.Message != nil && r.Message.ID != "" && r.Message.ID != prevID {
			prevID = r.Message.ID
			s.msgs[prevID] = len(s.heads)
			s.heads = append(s.heads, -1)
			if b.st != nil {
				b.st.headIDs = append(b.st.headIDs, prevID)
			}
		}
	}
}

// responses runs over the assistant records at positions [from, to): a record of a message on
// the walk joins the chain, unless it repeats a record of the chain's (a response written
// again), and the tool_use ids of the records on the chain are noted.
func (b *chainBuild) responses(from, to int) {
	records, s, c, on := b.records, b.s, b.c, b.s.on
	prevID, prevM, prevOK := "", 0, false // no message id "" is on the walk
	for i := from; i < to; i++ {
		r := &records[i]
		if r.Type != TypeAssistant || r.Message == nil {
			continue
		}
		if id := r.Message.ID; id != prevID {
			prevID = id
			prevM, prevOK = s.msgs[id]
			if !prevOK && b.st != nil {
				b.st.offWalk(id)
			}
		}
		if m, ok := prevM, prevOK; ok && !OtherThread(r, c.Leaf) && !b.dup(i) {
			key := keyOf(r)
			k, seen := s.keptOf(m, key)
			switch {
			case seen && !onlyBlank(r.Message.Content) && sameBlocks(records[k].Message.Content, r.Message.Content):
				on[i] = false // a response written again: its blocks are on the chain already
				s.replays = append(s.replays, replayAt{i, k, false})
				if c.Leaf == r {
					c.Leaf, b.leaf = &records[k], k
				}
			case !seen:
				if b.st != nil {
					b.st.undo.setHead(m, s.heads[m])
				}
				s.keep(m, key, i)
				fallthrough
			default:
				on[i] = true
			}
		}
		if on[i] {
			for _, bl := range r.Message.Content {
				if tu, ok := bl.(*ToolUse); ok {
					s.use(tu.ID, i)
				}
			}
		}
	}
}

// results runs over the user records at positions [from, to): each call's answer is the
// first record after it holding its result; a record holding results of calls on the chain
// joins it, unless it repeats the answer's blocks (results written again with a response
// written again).
func (b *chainBuild) results(from, to int) {
	records, s, c, on, attached := b.records, b.s, b.c, b.s.on, b.s.attached
	for i := from; i < to; i++ {
		r := &records[i]
		if r.Type != TypeUser || r.Message == nil || OtherThread(r, c.Leaf) || b.dup(i) {
			continue
		}
		first := true
		for _, bl := range r.Message.Content {
			tr, ok := bl.(*ToolResult)
			if !ok {
				continue
			}
			e, ok := s.calls[tr.ToolUseID]
			if !ok {
				continue // no call on the chain
			}
			call := &s.callList[e]
			if i <= call.use {
				continue // written before the call: no answer to it
			}
			k := call.answer
			if first && k >= 0 && sameBlocks(records[k].Message.Content, r.Message.Content) {
				on[i] = false // results written again with a response written again
				s.replays = append(s.replays, replayAt{i, k, false})
				break
			}
			first = false
			if k < 0 || on[i] {
				on[i] = true
				if !attached[i] {
					attached[i] = true
					s.nAttached++
				}
			}
			if k < 0 {
				if b.st != nil {
					b.st.undo.setAnswer(e, k)
				}
				call.answer = i
			}
		}
	}
}

// notices runs over the user records at positions [from, to): an interrupt notice written as
// the child of a record holding results of calls on the chain joins it.
func (b *chainBuild) notices(from, to int) {
	if b.s.nAttached == 0 && b.st == nil {
		return
	}
	records, on, attached := b.records, b.s.on, b.s.attached
	for i := from; i < to; i++ {
		r := &records[i]
		if on[i] || r.Type != TypeUser {
			continue
		}
		if p := parentOf(r, b.relink); p != "" && r.IsInterruptNotice() && !b.dup(i) {
			k, ok := b.find(p)
			switch {
			case !ok:
				b.pending++ // records written later may hold its parent
			case attached[k]:
				on[i] = true
			}
		}
	}
}

// segment locates a kept tail in the file: the positions of its boundary, its anchor and its
// head.
type segment struct{ boundary, anchor, head int }

// preserved finds the latest compact boundary of the leaf's thread and, when it kept a tail,
// checks the segment, sets the parent relinks that apply it and returns where it lies. A later
// boundary without a segment, or a segment that does not check out, applies nothing
// (SegmentProblem says why). noBridge is [ChainOptions.NoBridge].
func (b *chainBuild) preserved(noBridge bool) segment {
	none := segment{-1, -1, -1}
	records, c, ix := b.records, b.c, b.ix
	for k := len(ix.boundaries) - 1; k >= 0; k-- {
		i := ix.boundaries[k]
		if i >= len(records) {
			continue // written after the records built over
		}
		bd := &records[i]
		if OtherThread(bd, c.Leaf) {
			continue
		}
		if bd.CompactMetadata == nil || bd.CompactMetadata.PreservedSegment == nil {
			return none
		}
		seg := bd.CompactMetadata.PreservedSegment
		head, hok := b.find(seg.HeadUUID)
		_, tok := b.find(seg.TailUUID)
		anchor, aok := b.find(seg.AnchorUUID)
		if !hok || !tok || !aok {
			c.SegmentProblem = fmt.Sprintf("boundary %s: preserved segment names a record the file does not hold (head %t, anchor %t, tail %t)", bd.UUID, hok, aok, tok)
			return none
		}
		if head > i || anchor < i {
			c.SegmentProblem = fmt.Sprintf("boundary %s: preserved segment: the head must come before the boundary and the anchor at or after it", bd.UUID)
			return none
		}
		if !b.leadsBack(seg, noBridge) {
			c.SegmentProblem = fmt.Sprintf("boundary %s: preserved segment: tail %s does not lead back to head %s", bd.UUID, seg.TailUUID, seg.HeadUUID)
			return none
		}
		relink := map[string]string{seg.HeadUUID: seg.AnchorUUID}
		for _, j := range ix.children(records, seg.AnchorUUID) {
			if r := &records[j]; r.UUID != seg.HeadUUID && r.UUID != "" {
				relink[r.UUID] = seg.TailUUID
			}
		}
		c.Preserved = seg
		b.relink, b.anchor, b.tail = relink, seg.AnchorUUID, seg.TailUUID
		return segment{boundary: i, anchor: anchor, head: head}
	}
	return none
}

// leadsBack reports whether the kept tail of seg leads back from its tail to its head along
// parentUuid, bridging the breaks the chain's walk bridges (an unreadable record, a dangling
// parent; see [ChainProblem]) unless noBridge: the walk from the leaf crosses the same
// bridges, and reports them in [Chain.Problems].
func (b *chainBuild) leadsBack(seg *PreservedSegment, noBridge bool) bool {
	j, ok := b.find(seg.TailUUID)
	if !ok {
		return false
	}
	w := walker{records: b.records, byUUID: b.ix.byUUID, leaf: b.c.Leaf, unique: b.dups == 0}
	seen := map[int]bool{}
	visited := func(k int) bool { return seen[k] }
	for b.records[j].UUID != seg.HeadUUID {
		if seen[j] {
			return false
		}
		seen[j] = true
		next, brk := w.next(j, visited)
		if brk != nil {
			if noBridge || !brk.problem.Kind.bridgeable() {
				return false
			}
			next = brk.to
		}
		if next < 0 {
			return false
		}
		j = next
	}
	return true
}

// segmentOrder puts the records of a kept tail (written before the boundary, from its head on)
// where the relinked chain has them: right after the anchor (the boundary, or the summary
// chained on it), before everything else written after the boundary. idx holds sorted file
// positions.
func segmentOrder(idx []int, seg segment) []int {
	out := make([]int, 0, len(idx))
	var kept []int
	for _, i := range idx {
		switch {
		case i < seg.boundary:
			kept = append(kept, i)
		case i <= seg.anchor:
			out = append(out, i)
		}
	}
	out = append(out, kept...)
	for _, i := range idx {
		if i > seg.anchor {
			out = append(out, i)
		}
	}
	return out
}

// OtherThread reports whether r belongs to a different thread than leaf: a subagent record met
// while rebuilding a main-thread chain, or the reverse.
func OtherThread(r, leaf *Record) bool {
	return leaf != nil && r.IsSidechain != leaf.IsSidechain
}

func defaultLeaf(records []Record) int {
	side := -1
	for i := len(records) - 1; i >= 0; i-- {
		r := &records[i]
		if !r.IsConversation() || r.IsAPIErrorMessage {
			continue
		}
		if !r.IsSidechain {
			return i
		}
		if side < 0 {
			side = i
		}
	}
	return side
}

// IsInterruptNotice reports whether r holds Claude Code's "[Request interrupted by user…]"
// text: the notice it writes as a user record when the user stops a response.
func (r *Record) IsInterruptNotice() bool {
	if r.Message == nil {
		return false
	}
	for _, b := range r.Message.Content {
		if t, ok := b.(*Text); ok && strings.HasPrefix(t.Text, "[Request interrupted by user") {
			return true
		}
	}
	return false
}
