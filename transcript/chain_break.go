package transcript

import (
	"fmt"
	"strconv"
)

// ChainProblemKind names how a chain's parentUuid links broke.
type ChainProblemKind string

// The kinds of [ChainProblem].
const (
	// ChainUnreadable: the record's parent is missing, and a line that was no record (invalid
	// JSON, over the line cap, torn), or a record whose uuid could not be read, sits between
	// the record and the compact boundary before it: the parent was most likely that line.
	ChainUnreadable ChainProblemKind = "unreadable"
	// ChainUnreadableParent: the record's own parentUuid could not be read.
	ChainUnreadableParent ChainProblemKind = "unreadable_parent"
	// ChainDangling: the record names a parent that is nowhere in the transcript, and nothing
	// unreadable explains it. Normal for the first record of a subagent or resumed session,
	// whose parent is in another file (there is nothing before it to bridge to); elsewhere
	// it is bridged to the previous message of the thread in file order (see [ChainProblem]).
	ChainDangling ChainProblemKind = "dangling"
	// ChainCycle: the record's parentUuid leads back to a record the walk has already passed.
	// The link is ignored and the walk stops; such a break is reported, never bridged.
	ChainCycle ChainProblemKind = "cycle"
)

// ChainProblem is one break in the parentUuid links that [BuildChain] met on its walk from
// the leaf: the walk could not go on from record UUID to its parent.
//
// A break at something unreadable (kinds [ChainUnreadable] and [ChainUnreadableParent]) is
// bridged in file order, unless [ChainOptions.NoBridge] is set: the walk goes on from the
// latest record of the thread written before the unreadable line, as if that record were the
// parent. A dangling parent ([ChainDangling]) is bridged the same way to the latest message
// (user or assistant record) of the thread written before the record, or to a compact
// boundary of the thread that comes first, where the chain then starts. Nothing in the
// transcript changes; the bridge exists only in the chain built from it, and the same records
// always give the same bridge. A cycle ends the walk, as a root would, and so does a break
// with nothing before it to bridge to.
type ChainProblem struct {
	Kind ChainProblemKind
	// UUID is the record whose parent link broke; Parent is the parentUuid it names ("" when
	// it could not be read, or for a cycle the record the link leads back to).
	UUID, Parent string
	// Line is where the break is: the unreadable line nearest before UUID (kind
	// ChainUnreadable), else the line of record UUID. File names the file when the Decoder
	// reported the line (unreadable lines and fields), else it is "". Line is 0 when the
	// records were not read by a [Decoder].
	File string
	Line int
	// Cut is the number of records the walk reaches only across the break: the ones a chain
	// that stops there cuts off. For a break the chain does not bridge, it is the number a
	// bridge in file order would have reached.
	Cut int
	// Bridge is the uuid of the record the chain took as UUID's parent, or "" when the break
	// was not bridged.
	Bridge string
}

// String describes the problem on one line, e.g. "x.jsonl:23: unreadable line, most likely the
// missing parent 5c… of 3f…: bridged in file order to 9a…; without the bridge the chain would
// lose 12 records".
func (p ChainProblem) String() string {
	var at string
	switch {
	case p.File != "" && p.Line > 0:
		at = p.File + ":" + strconv.Itoa(p.Line) + ": "
	case p.Line > 0:
		at = "line " + strconv.Itoa(p.Line) + ": "
	}
	var what string
	switch p.Kind {
	case ChainUnreadable:
		what = "unreadable line, most likely the missing parent " + p.Parent + " of " + p.UUID
	case ChainUnreadableParent:
		what = "the parentUuid of " + p.UUID + " cannot be read"
	case ChainDangling:
		what = "the parent " + p.Parent + " of " + p.UUID + " is not in the transcript"
	case ChainCycle:
		what = "the parentUuid of " + p.UUID + " leads back to " + p.Parent + ", closing a cycle"
	default:
		what = string(p.Kind) + " at " + p.UUID
	}
	if p.Bridge != "" {
		return fmt.Sprintf("%s%s: bridged in file order to %s; without the bridge the chain would lose %d records", at, what, p.Bridge, p.Cut)
	}
	if p.Cut == 0 {
		return fmt.Sprintf("%s%s: the chain starts here; no earlier record is cut off", at, what)
	}
	return fmt.Sprintf("%s%s: the chain starts here; %d earlier records are cut off", at, what, p.Cut)
}

// bridgeable reports whether a break of this kind is bridged.
func (k ChainProblemKind) bridgeable() bool {
	return k == ChainUnreadable || k == ChainUnreadableParent || k == ChainDangling
}

// walker follows parentUuid links through a transcript for [BuildChain]: a step from a record
// goes to its parent, or meets a root or a break.
type walker struct {
	records []Record
	byUUID  map[string]int
	relink  map[string]string // uuid → parent uuid that replaces its parentUuid (see parentOf)
	leaf    *Record
	through bool // ThroughBoundaries
	// unique: no uuid occurs twice, so a record holding a uuid is its first occurrence.
	unique bool
}

// nearParent is how many records before a record next looks at for its parent before it
// asks the index: a parent is mostly the record just before, or a few before (the tool_use
// record of one of a response's parallel calls).
const nearParent = 4

// lookup returns the position of the first record with uuid u, looking first at the few
// records before position i.
func (w *walker) lookup(u string, i int) (int, bool) {
	if w.unique && u != "" {
		for j := i - 1; j >= max(0, i-nearParent); j-- {
			if w.records[j].UUID == u {
				return j, true
			}
		}
	}
	return firstAmong(w.byUUID, u, len(w.records))
}

// linkBreak is a broken parent link: where the walk could go on in file order (to, or -1).
type linkBreak struct {
	problem ChainProblem
	to      int
}

// next returns the position of the parent of records[i], or -1 at a root. brk is non-nil when
// the link is broken; its target is never a position for which visited is true.
func (w *walker) next(i int, visited func(int) bool) (next int, brk *linkBreak) {
	r := &w.records[i]
	if r.IsCompactBoundary() {
		if !w.through {
			return -1, nil
		}
		if p, ok := firstAmong(w.byUUID, r.LogicalParentUUID, len(w.records)); ok && r.ParentUUID == "" {
			return p, nil
		}
	}
	pu := parentOf(r, w.relink)
	if p, ok := w.lookup(pu, i); ok {
		return p, nil
	}
	line := r.Line
	file := ""
	switch {
	case r.Damage.field("parentUuid") != nil:
		file = r.Damage.field("parentUuid").File
		return -1, &linkBreak{
			problem: ChainProblem{Kind: ChainUnreadableParent, UUID: r.UUID, File: file, Line: line},
			to:      w.target(i, visited),
		}
	case pu == "":
		return -1, nil // a root
	}
	if gap, le := w.gap(i); gap >= 0 {
		file, line = le.File, le.Line
		return -1, &linkBreak{
			problem: ChainProblem{Kind: ChainUnreadable, UUID: r.UUID, Parent: pu, File: file, Line: line},
			to:      w.target(gap, visited),
		}
	}
	return -1, &linkBreak{
		problem: ChainProblem{Kind: ChainDangling, UUID: r.UUID, Parent: pu, Line: line},
		to:      w.messageTarget(i, visited),
	}
}

// gap finds the unreadable line nearest before records[i] that its missing parent may have
// been: it sits before position gap, and le names it (for a record whose uuid could not be
// read, at position gap, the uuid field). A compact boundary of the thread in between means
// none: a record after a boundary never has its parent before it. gap is -1 when none is found.
func (w *walker) gap(i int) (gap int, le *LineError) {
	for k := i; k >= 0; k-- {
		r := &w.records[k]
		if k < i {
			if r.IsCompactBoundary() && !OtherThread(r, w.leaf) {
				return -1, nil
			}
			if e := r.Damage.field("uuid"); e != nil {
				return k, e
			}
		}
		if d := r.Damage; d != nil && len(d.Skipped) > 0 {
			return k, d.Skipped[len(d.Skipped)-1]
		}
	}
	return -1, nil
}

// target returns the position of the latest record before position before that a bridge can
// take as a parent: a record with a uuid (its first occurrence), of the leaf's thread, that is
// not a decision record and not yet visited; -1 when there is none.
func (w *walker) target(before int, visited func(int) bool) int {
	for j := before - 1; j >= 0; j-- {
		r := &w.records[j]
		if r.UUID == "" || w.byUUID[r.UUID] != j || OtherThread(r, w.leaf) || r.IsDecision() || visited(j) {
			continue
		}
		return j
	}
	return -1
}

// messageTarget returns the position of the latest message (user or assistant record) before
// position before that a bridge over a dangling parent can take as the parent: its uuid's
// first occurrence, of the leaf's thread, not yet visited; or of a compact boundary of the
// thread met first, since a record after a boundary never has its parent before it. -1 when
// there is none.
func (w *walker) messageTarget(before int, visited func(int) bool) int {
	for j := before - 1; j >= 0; j-- {
		r := &w.records[j]
		if r.UUID == "" || w.byUUID[r.UUID] != j || OtherThread(r, w.leaf) || visited(j) {
			continue
		}
		if r.IsConversation() || r.IsCompactBoundary() {
			return j
		}
	}
	return -1
}

// reach counts the records a walk starting at position from reaches before it meets a root, a
// break it cannot bridge, a record that is visited, or one before position start (records
// before the chain's boundary never join it). It bridges what [BuildChain] bridges.
func (w *walker) reach(from, start int, visited func(int) bool) int {
	seen := map[int]bool{}
	n := 0
	for i := from; i >= start && !visited(i) && !seen[i]; {
		seen[i] = true
		n++
		next, brk := w.next(i, func(j int) bool { return visited(j) || seen[j] })
		if brk != nil {
			next = -1
			if brk.problem.Kind.bridgeable() {
				next = brk.to
			}
		}
		i = next
	}
	return n
}
