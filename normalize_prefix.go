package agentctx

import (
	"slices"

	"github.com/agentctx/agentctx/transcript"

	"github.com/agentctx/agentctx/internal/memo"
)

// A steady turn's view is the previous turn's view and the records written since, so most of
// normalize's work on it is the work it did on the previous turn. The settled prefix carries
// that work from one turn of a conversation to the next.
//
// The settled prefix is the longest run of collected messages at the start of the view, ending
// before a user message without tool results, that normalize's later passes leave as they are
// whatever follows them: each message holding content and needing none of the per-message
// rules, the roles alternating, each assistant message's tool_use blocks answered by the
// tool_result blocks the next message opens with, one each, no other tool_result, and no
// tool_use or server_tool_use id used twice. The prefix holds such a message's results in the
// order of the tool_use blocks, as pair puts them without reporting it, which the whole view's
// passes then leave as they are. Whatever follows it, the whole view's passes then
// act on the messages after the prefix only, as they would on those messages alone, unless
// those messages reach into the prefix: a tool_use, server_tool_use or tool_result with an id
// the prefix holds, or a first message that the passes empty (its content would then go to
// the prefix's messages). passes checks both, and runs over the whole view when either holds.
// Collecting the prefix's items again gives its messages and actions as long as the items are
// the same, in value, and no response of the prefix goes on after it; collect checks both.
// The rules after the passes (ends, the final turn's thinking, the tools) read the whole
// view; the final turn and the last message lie after the prefix, so they write only into
// messages after it.
//
// A Pipeline keeps the settled prefixes of the last conversations it served (normPrefixes).
// A turn whose view starts with its conversation's prefix collects the items after it only,
// runs the passes over the messages after it only, and extends the prefix by what it
// collected that settles; any other turn collects and settles the whole view, as a Pipeline
// without the memo does, and builds the prefix anew. The prefix changes nothing but time:
// TestNormalizePrefix* compare warm turns with a fresh Pipeline's.

// normPrefixes keeps the settled prefixes of the last conversations a Pipeline served.
type normPrefixes struct {
	memo.Conv[normPrefix]
}

// normPrefix is one conversation's settled prefix: the view items it covers, as normalize
// read them, and what normalize made of them.
type normPrefix struct {
	first string // uuid of the first item of a record: the conversation the prefix is of
	hits  int    // turns that started from the prefix since it was last emptied
	// seen: a turn of the conversation ran before. Its first turn builds no prefix, so that a
	// process that prepares one request (the CLI, a cold resume) pays nothing for it.
	seen bool

	items  []prefixItem
	blocks []cleanSig // the blocks of items, in order

	all  []nblock // the blocks of msgs
	msgs []nmsg   // the collected messages, each clipped into all
	// reorders and acts are the actions of collect over items: responseOrder's, then its
	// loop's.
	reorders, acts []Action

	msgIDs  map[string]struct{} // message ids of the assistant items
	toolIDs map[string]struct{} // tool_use ids of msgs
	srvIDs  map[string]struct{} // server_tool_use ids of msgs
	names   []nameUse           // the first tool_use of each tool name in msgs, in order
	named   map[string]struct{} // the names in names
	// ids and fixedNames are the tool ids and names collect rewrote in items (see
	// [normalizer.fixID]).
	ids, fixedNames map[string]string
	// stubs are the stub definitions of the tool names the conversation's views used (see
	// [normalizer.tools]): a function of the name, kept as long as the prefix.
	stubs map[string]stub
}

// stubDefs returns the prefix's stub definitions, made on first use.
func (pre *normPrefix) stubDefs() map[string]stub {
	if pre.stubs == nil {
		pre.stubs = map[string]stub{}
	}
	return pre.stubs
}

// prefixItem is a view item of a settled prefix: what collect reads of it besides its blocks.
type prefixItem struct {
	uuid    string
	msgID   string
	role    transcript.Role
	skip    skipCode
	nblocks int
}

// nameUse is the first tool_use block of a tool name.
type nameUse struct {
	name string
	nb   nblock
}

// firstRecordItem returns the uuid of the first item of items that is a record's, or "".
func firstRecordItem(items []item) string {
	for i := range items {
		if items[i].rec != nil {
			return items[i].uuid
		}
	}
	return ""
}

// take removes and returns the prefix of the conversation whose first record item is first,
// or storage for a new one (empty).
func (m *normPrefixes) take(first string) *normPrefix {
	e, _ := m.Conv.Take(func(e *normPrefix) bool { return e.first == first })
	if e == nil {
		e = &normPrefix{}
	} else if e.first != first {
		e.reset()
		e.seen = false
	}
	e.first = first
	return e
}

// keep puts e back as the most recently used prefix.
func (m *normPrefixes) keep(e *normPrefix) { m.Conv.Keep(e) }

// reset empties the prefix, keeping its storage.
func (pre *normPrefix) reset() {
	pre.hits = 0
	clear(pre.items)
	clear(pre.blocks)
	clear(pre.all)
	clear(pre.msgs)
	clear(pre.reorders)
	clear(pre.acts)
	clear(pre.names)
	pre.items, pre.blocks, pre.all, pre.msgs = pre.items[:0], pre.blocks[:0], pre.all[:0], pre.msgs[:0]
	pre.reorders, pre.acts, pre.names = pre.reorders[:0], pre.acts[:0], pre.names[:0]
	for _, m := range []map[string]struct{}{pre.msgIDs, pre.toolIDs, pre.srvIDs, pre.named} {
		clear(m)
	}
	clear(pre.ids)
	clear(pre.fixedNames)
	clear(pre.stubs)
}

// match reports whether items start with the prefix's items, in value, and go on after them,
// with Input.Tools declaring (declared) each tool the prefix references as it did.
func (pre *normPrefix) match(items []item, declared map[string]bool) bool {
	if len(pre.items) == 0 || len(items) <= len(pre.items) {
		return false
	}
	k := 0
	for i := range pre.items {
		it, p := &items[i], &pre.items[i]
		if it.uuid != p.uuid || it.msgID != p.msgID || it.role != p.role || len(it.blocks) != p.nblocks || skipOf(it) != p.skip {
			return false
		}
		for _, b := range it.blocks {
			if !pre.blocks[k].same(b, declared) {
				return false
			}
			k++
		}
	}
	return true
}

// reachedBy reports whether msgs, the messages after the prefix, hold a tool id of the prefix:
// a tool_use or server_tool_use repeating one of its ids, or a tool_result answering one of its
// tool_use blocks. The passes over the whole view would act on them against the prefix.
func (pre *normPrefix) reachedBy(msgs []nmsg) bool {
	for _, m := range msgs {
		for _, nb := range m.blocks {
			var ids map[string]struct{}
			var id string
			switch b := nb.b.(type) {
			case *transcript.ToolUse:
				ids, id = pre.toolIDs, b.ID
			case *transcript.ToolResult:
				ids, id = pre.toolIDs, b.ToolUseID
			case *transcript.ServerToolUse:
				ids, id = pre.srvIDs, b.ID
			default:
				continue
			}
			if _, ok := ids[id]; ok {
				return true
			}
		}
	}
	return false
}

// extend adds to the prefix what the turn collected after it that settles (see extent).
func (pre *normPrefix) extend(n *normalizer, col *collected) {
	if !pre.seen {
		pre.seen = true
		return
	}
	msgs := n.sc.snap // the collected messages after the prefix, as collect made them
	e, p := n.extent(pre, col, msgs)
	if e == 0 {
		return
	}
	items := n.t.items[col.skip : col.skip+p] // the items of order[:p], in view order
	for i := range items {
		it := &items[i]
		pre.items = append(pre.items, prefixItem{uuid: it.uuid, msgID: it.msgID, role: it.role, skip: skipOf(it), nblocks: len(it.blocks)})
		for _, b := range it.blocks {
			sig, _ := signature(b)
			for i := range sig.parts {
				if p := &sig.parts[i]; p.ref {
					p.declared = n.declared[p.text]
				}
			}
			pre.blocks = append(pre.blocks, sig)
		}
		if it.role == transcript.RoleAssistant && it.msgID != "" {
			pre.msgIDs = setAdd(pre.msgIDs, it.msgID)
		}
	}
	grown := cap(pre.all)
	var uses []nblock // the blocks of the previous message when it is an assistant message
	for _, m := range msgs[:e] {
		blocks := m.blocks
		if m.role == transcript.RoleUser {
			if r, _ := answers(uses, blocks); r > 1 {
				blocks = inUseOrder(uses, blocks, r)
			}
			uses = nil
		}
		start := len(pre.all)
		pre.all = append(pre.all, blocks...)
		pre.msgs = append(pre.msgs, nmsg{role: m.role, blocks: pre.all[start:len(pre.all):len(pre.all)], tidied: true})
		if m.role != transcript.RoleAssistant {
			continue
		}
		uses = m.blocks
		for _, nb := range m.blocks {
			switch b := nb.b.(type) {
			case *transcript.ToolUse:
				pre.toolIDs = setAdd(pre.toolIDs, b.ID)
				if _, ok := pre.named[b.Name]; !ok {
					pre.named = setAdd(pre.named, b.Name)
					pre.names = append(pre.names, nameUse{name: b.Name, nb: nb})
				}
			case *transcript.ServerToolUse:
				pre.srvIDs = setAdd(pre.srvIDs, b.ID)
			}
		}
	}
	if cap(pre.all) != grown {
		// The blocks moved: the earlier messages point into the array they left.
		k := 0
		for i := range pre.msgs {
			m := len(pre.msgs[i].blocks)
			pre.msgs[i].blocks = pre.all[k : k+m : k+m]
			k += m
		}
	}
	pre.reorders = append(pre.reorders, n.st.Actions[col.roBase:col.cuts[p]]...)
	pre.acts = append(pre.acts, n.st.Actions[col.clBase:col.acts[e]]...)
	for _, f := range n.fixes {
		if f.at >= p {
			continue
		}
		if f.name {
			pre.fixedNames = mapPut(pre.fixedNames, f.from, f.to)
		} else {
			pre.ids = mapPut(pre.ids, f.from, f.to)
		}
	}
}

// extent returns how many of msgs, the messages collected after the prefix, settle onto it,
// and how many items of col.order they hold: the most that end before a user message without
// tool results placed at a cut of responseOrder, and hold only blocks the prefix can compare
// (see [memoable]), such that the prefix they extend is settled (see [normPrefix]).
func (n *normalizer) extent(pre *normPrefix, col *collected, msgs []nmsg) (e, p int) {
	limit := len(col.order) // col.order[:limit] hold only blocks a prefix can compare
	for i, it := range col.order {
		if !allMemoable(it.blocks) {
			limit = i
			break
		}
	}
	ids, srv := n.sc.extIDs, n.sc.extSrv
	var uses []nblock        // the blocks of the previous message when it is an assistant message
	var prev transcript.Role // the previous message's role
	if k := len(pre.msgs); k > 0 {
		prev = pre.msgs[k-1].role
	}
	for i := range msgs {
		m := &msgs[i]
		if s := col.starts[i]; i > 0 && !hasToolUse(uses) && s <= limit && col.cuts[s] >= 0 {
			e, p = i, s
		}
		if !m.tidied || !hasContent(*m) || m.role == prev {
			return e, p
		}
		prev = m.role
		if m.role == transcript.RoleAssistant {
			for _, nb := range m.blocks {
				switch b := nb.b.(type) {
				case *transcript.ToolUse:
					if _, ok := pre.toolIDs[b.ID]; ok || ids[b.ID] {
						return e, p
					}
					ids[b.ID] = true
				case *transcript.ServerToolUse:
					if _, ok := pre.srvIDs[b.ID]; ok || srv[b.ID] {
						return e, p
					}
					srv[b.ID] = true
				}
			}
			uses = m.blocks
			continue
		}
		// A user message opens with the results of the tool_use blocks before it, one each
		// (pair puts them in the order of the tool_use blocks, reporting nothing), and holds no
		// other tool_result.
		if _, ok := answers(uses, m.blocks); !ok {
			return e, p
		}
		uses = nil
	}
	return e, p
}

// answers reports whether blocks, a user message's, open with one tool_result for each
// tool_use block of uses (the message before, or nil), in any order, and hold no other
// tool_result; it returns how many blocks they open with.
func answers(uses, blocks []nblock) (int, bool) {
	r := 0
	for _, u := range uses {
		if _, ok := u.b.(*transcript.ToolUse); ok {
			r++
		}
	}
	if r > len(blocks) || hasResult(blocks[r:]) {
		return r, false
	}
	for i, nb := range blocks[:r] {
		tr, ok := nb.b.(*transcript.ToolResult)
		if !ok {
			return r, false
		}
		// The tool_use ids are unique: the results answer them all when each answers one
		// and no two answer the same.
		if !slices.ContainsFunc(uses, func(u nblock) bool { tu, ok := u.b.(*transcript.ToolUse); return ok && tu.ID == tr.ToolUseID }) ||
			slices.ContainsFunc(blocks[:i], func(nb nblock) bool { return nb.b.(*transcript.ToolResult).ToolUseID == tr.ToolUseID }) {
			return r, false
		}
	}
	return r, true
}

// inUseOrder returns blocks, which answers accepts after uses, with the r results they open
// with in the order of the tool_use blocks of uses, as pair puts them.
func inUseOrder(uses, blocks []nblock, r int) []nblock {
	out := make([]nblock, 0, len(blocks))
	for _, u := range uses {
		if tu, ok := u.b.(*transcript.ToolUse); ok {
			k := slices.IndexFunc(blocks[:r], func(nb nblock) bool { return nb.b.(*transcript.ToolResult).ToolUseID == tu.ID })
			out = append(out, blocks[k])
		}
	}
	return append(out, blocks[r:]...)
}

// allMemoable reports whether signature keeps every block of bs.
func allMemoable(bs []transcript.Block) bool {
	for _, b := range bs {
		if !memoable(b) {
			return false
		}
	}
	return true
}

// hasResult reports whether nbs holds a tool_result block.
func hasResult(nbs []nblock) bool {
	return slices.ContainsFunc(nbs, func(nb nblock) bool { return nb.b.Kind() == transcript.KindToolResult })
}

// setAdd adds key to the set m, making m if it is nil, and returns m.
func setAdd(m map[string]struct{}, key string) map[string]struct{} {
	if m == nil {
		m = map[string]struct{}{}
	}
	m[key] = struct{}{}
	return m
}

// mapPut sets m[key] to v, making m if it is nil, and returns m.
func mapPut(m map[string]string, key, v string) map[string]string {
	if m == nil {
		m = map[string]string{}
	}
	m[key] = v
	return m
}

// fix is a tool id or name collect rewrote, and where: the index in col.order of the item it
// first met it in.
type toolFix struct {
	name     bool // a tool name; else a tool id
	from, to string
	at       int
}
