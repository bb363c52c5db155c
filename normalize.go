package agentctx

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/agentctx/agentctx/provider"

	"github.com/agentctx/agentctx/internal/wire"

	"github.com/agentctx/agentctx/transcript"
)

// NormalizeConfig configures the normalize stage, which turns the view into request messages
// that satisfy the provider contract (see [provider.Validate]). The zero value is the default: a view
// that ends on an assistant message gets a user continuation "Continue." appended, because a
// trailing assistant message would be a prefill, which newer models reject.
type NormalizeConfig struct {
	// AllowPrefill keeps a trailing assistant message as a prefill (the model continues its
	// text) instead of appending a user continuation. Only for models that accept prefill.
	AllowPrefill bool
	// Continuation is the user text appended when the view ends on an assistant message and
	// AllowPrefill is off. Empty: "Continue.".
	Continuation string
	// KeepReasoningItems keeps the reasoning an OpenAI model wrote — a thinking block with an
	// "encrypted_content" field and no signature, as the openai adapter's MessageFromResponse
	// and the Codex reader record a Responses reasoning item — in its assistant message as it
	// came, fields and all, for requests sent to the Responses API, which carries it back as a
	// reasoning item (the openai adapter's ResponsesParams). Config.Thinking, Anthropic's
	// setting, does not govern such a block. Off (the default), it is dropped: an Anthropic
	// request cannot carry it.
	KeepReasoningItems bool
}

func (c NormalizeConfig) validate() error {
	if c.Continuation != "" && wire.IsBlank(c.Continuation) {
		return errors.New("agentctx: NormalizeConfig.Continuation is whitespace-only")
	}
	return nil
}

// Texts normalize writes in place of missing or unusable content. They are part of the
// request bytes: changing one changes every request that holds it.
const (
	interruptedResultText = "[Tool call interrupted: no result was recorded]"
	emptyResultText       = "(no content)"
	leadingUserText       = "[conversation continues]"
	defaultContinuation   = "Continue."
	unsupportedBlockText  = "[unsupported block: %s]"
	toolReferenceText     = "[tool_reference: %s]"
	imageNotDecodedText   = "[image not sent: its base64 data does not decode]"
	imageUnknownText      = "[image not sent: its data is not a PNG, JPEG, GIF or WebP image]"
	documentNotDecoded    = "[document not sent: its base64 data does not decode]"
)

// nblock is one content block on its way to the request, with the record it came from.
type nblock struct {
	b    transcript.Block
	uuid string // source record ("" for synthesized blocks), for the report
	bad  bool   // b is a block the provider does not accept here: dropped, or a placeholder
}

// nmsg is one request message being built.
type nmsg struct {
	role transcript.Role
	// blocks is never written in place: a change gives the message a new slice (an append
	// to a slice clipped to its length copies it), since the array may be collect's, which a
	// settled prefix keeps, or the prefix's own (see normPrefix).
	blocks []nblock
	lost   []nblock // unsupported blocks dropped from it, for a placeholder if it empties
	// tidied: the per-message rules (tidyMessage) have run on blocks as they are. Whatever
	// changes blocks afterwards clears it, so that tidy applies the rules again.
	tidied bool
}

// normalizer holds one turn's normalize state.
type normalizer struct {
	s        *normalizeStage
	t        *turn
	sc       *normScratch
	cfg      NormalizeConfig
	st       *StageReport
	declared map[string]bool   // tool names of Input.Tools
	ids      map[string]string // tool ids the provider would reject → their rewrite
	names    map[string]string // tool names the provider would reject → their rewrite
	// preIDs and preNames are the rewrites of the settled prefix the view starts with: its
	// items are not read again.
	preIDs, preNames map[string]string
	cur              int       // index in collect's order of the item being cleaned
	fixes            []toolFix // the rewrites made, where
	// suffix: the passes run over the messages after a settled prefix; crossed: they emptied
	// a message before any user message was kept (see passes).
	suffix, crossed bool
}

// normalizeStage is the normalize stage (see [NormalizeConfig]), with the memos that carry its
// work from one turn to the next: the cleaned blocks ([cleanMemo]) and the settled prefixes
// of the last conversations served ([normPrefixes]).
type normalizeStage struct {
	cfg      NormalizeConfig
	thinking *provider.Thinking
	counter  *Counter
	clean    *cleanMemo
	prefixes *normPrefixes
}

func (*normalizeStage) name() string { return "normalize" }

// run turns t.items into t.req.Messages and t.req.Tools. It makes no decision records:
// every repair is a pure function of the view, reported as ActionRepaired or ActionDropped.
//
// The steps, in order (rule ids are those of the provider contract, docs/contract.md):
//  1. Items the provider never sees are dropped: API-error and other synthetic assistant
//     records, virtual records, display-only records (compact summaries are sent). User
//     records written between the records of one split assistant response (Claude Code runs
//     tools while the response streams) move after the response.
//  2. Blocks are rebuilt without transcript-only fields (Extra, cache_control; a
//     cache_reference set by microcompact stays); thinking and redacted_thinking are sent
//     byte for byte. Blank text, thinking without a replayable signature and blocks the
//     provider rejects at their position (2.11) are dropped, or become a "[unsupported block:
//     TYPE]" text when dropping would empty the message. Tool ids that do not match
//     ^[a-zA-Z0-9_-]+$ are rewritten on the tool_use and its results alike (2.10). Invalid
//     UTF-8 in what is sent (text, tool and server tool inputs and results, citations,
//     search results, media sources, and the system prompt and tool definitions), and a
//     lone surrogate escape in raw JSON, become U+FFFD (6.7); raw JSON stays valid JSON with
//     its key order. Thinking is never rewritten: thinking or redacted_thinking that is not
//     valid UTF-8 cannot be what the provider signed, and is dropped (4.7). A base64 image
//     is sent with the media type its bytes show (PNG, JPEG, GIF or WebP), or becomes a
//     text marker when its bytes are no such image or its base64 does not decode; a base64
//     document that does not decode becomes a marker too (5.1).
//  3. Consecutive items of one role merge into one message. An assistant message never ends
//     with thinking (4.4) and, when it holds thinking, starts with it (4.3): trailing thinking
//     is dropped, and the thinking of merged responses moves to the front in its order.
//     Server tool blocks stay paired inside their message (2.7); unpaired ones are dropped.
//     Empty messages are dropped and their neighbours merged again (1.5).
//  4. Tool pairing (2.1, 2.2, 2.5): a repeated tool_use id keeps its first use; a result in
//     the wrong message is moved after its tool_use when that is unambiguous, else dropped;
//     results without a tool_use are dropped; a tool_use without a result gets an is_error
//     result "[Tool call interrupted: no result was recorded]", in a user message inserted if
//     needed. Results come first in their message, in the order of the tool_use blocks.
//  5. The request starts with a user message ("[conversation continues]" is inserted before
//     a leading assistant message) and, unless AllowPrefill, ends with one (the Continuation
//     text is appended after a trailing assistant message).
//  6. Thinking in the final assistant turn (the assistant messages after the last user
//     message without tool results): with thinking disabled it is dropped (4.5); with
//     thinking enabled the turn must open with thinking (4.2) — when it cannot,
//     [Report.ThinkingUnavailable] is set, the turn's thinking is dropped and the request
//     is sent with thinking disabled.
//  7. Tools (2.9): Input.Tools in order, then a stub definition for every tool name the
//     messages use that Input.Tools lacks, sorted by name. A stub has an empty schema and a
//     description telling the model that the tool is not available and not to call it:
//     the provider rejects tool_use blocks in the history without a definition, and the
//     runtime may not have the tool (a session resumed elsewhere, an MCP server gone).
//
// The request's blocks are new values, not the transcript's, except thinking,
// redacted_thinking, search_result and cache_edits blocks, which are shared with the
// transcript or the stage that made them. A block cleaned on an earlier turn is taken from
// the Pipeline's memo (see [cleanMemo]), so requests of successive turns share blocks:
// no block of a request may be modified. A view that starts with the settled prefix of its
// conversation's previous turn is read from there on only (see [normPrefix]).
func (st *normalizeStage) run(t *turn) error {
	sc := normScratchPool.Get().(*normScratch)
	defer sc.release()
	n := &normalizer{
		s: st, t: t, sc: sc, cfg: st.cfg, st: t.report.stage("normalize"),
		declared: map[string]bool{}, ids: map[string]string{}, names: map[string]string{},
	}
	for _, tl := range t.in.Tools {
		n.declared[tl.Name] = true
	}
	var pre *normPrefix
	if first := firstRecordItem(t.items); t.memoView && st.prefixes != nil && first != "" {
		pre = st.prefixes.take(first)
		defer st.prefixes.keep(pre)
	}
	col := n.collect(pre)
	msgs, names, from := n.passes(pre, &col)
	if len(msgs) > 0 && msgs[0].role == transcript.RoleAssistant && !n.opensWithPoint(msgs) {
		from++ // ends puts a user message before the first
	}
	msgs = n.ends(msgs)
	msgs = n.finalTurnThinking(msgs)
	t.req.Messages = emit(msgs)
	var stubs map[string]stub
	if pre != nil {
		stubs = pre.stubDefs()
	}
	t.req.Tools = n.tools(names, msgs[from:], stubs)
	n.repairSystem()
	if pre != nil {
		pre.extend(n, &col)
	}
	return nil
}

// passes runs normalize's passes over the whole view after collect: the per-message rules,
// tool_use deduplication and tool pairing, until nothing changes. With a settled prefix
// (see [normPrefix]) they run over the messages after it only, which gives the messages the
// whole view would, unless those messages reach into the prefix (a tool id the prefix holds,
// or their first message emptied); then, and without a prefix, they run over the whole view.
// It returns the messages, the first tool_use of each tool name in the prefix they start
// with, and how many of them the prefix is (0 and nil after the passes over the whole view).
func (n *normalizer) passes(pre *normPrefix, col *collected) ([]nmsg, []nameUse, int) {
	sc := n.sc
	sc.snap = append(sc.snap[:0], col.msgs...) // the collected messages, as later turns extend the prefix with them
	if k := col.prefix; k > 0 && len(col.msgs) > 0 && col.msgs[0].role != pre.msgs[k-1].role && !pre.reachedBy(col.msgs) {
		mark, freed := len(n.st.Actions), n.st.TokensFreed
		n.suffix, n.crossed = true, false
		msgs := n.settle(col.msgs)
		n.suffix = false
		if !n.crossed {
			comb := append(append(sc.comb[:0], pre.msgs[:k]...), msgs...)
			sc.comb = comb
			return comb, pre.names, k
		}
		// A message was emptied before any user message after the prefix was kept: the whole
		// view decides where its content goes.
		n.st.Actions, n.st.TokensFreed = n.st.Actions[:mark], freed
		copy(col.msgs, sc.snap)
		clear(sc.seen) // the tool_use ids dedupToolUses met
		clear(sc.srvSeen)
	}
	comb := sc.comb[:0]
	if k := col.prefix; k > 0 {
		comb = append(comb, pre.msgs[:k]...)
	}
	comb = append(comb, col.msgs...)
	sc.comb = comb
	return n.settle(comb), nil, 0
}

// settle applies the per-message rules, tool_use deduplication and tool pairing to msgs until
// nothing changes.
func (n *normalizer) settle(msgs []nmsg) []nmsg {
	msgs = n.tidy(msgs)
	msgs = n.tidy(n.dedupToolUses(msgs))
	for range 3 {
		var changed bool
		msgs, changed = n.pair(msgs)
		msgs = n.tidy(msgs)
		if !changed {
			break
		}
	}
	return msgs
}

func (n *normalizer) act(kind ActionKind, uuid, toolUseID, detail string, tokens int) {
	n.st.add(Action{Kind: kind, UUID: uuid, ToolUseID: toolUseID, Detail: detail, Tokens: tokens})
}

// drop reports a dropped block, with the tokens it took.
func (n *normalizer) drop(nb nblock, detail string) {
	n.act(ActionDropped, nb.uuid, toolID(nb.b), detail, -n.s.counter.Block(nb.b))
}

// collected is what collect made of the view: the messages of the items after the settled
// prefix (of all items, without one), and what the prefix can grow by (see [normPrefix]).
type collected struct {
	prefix int     // messages of the settled prefix the view starts with; 0: none
	skip   int     // items of the view the prefix covers
	order  []*item // the items after the prefix, in the order collect read them
	msgs   []nmsg  // their messages
	starts []int   // starts[m]: index in order of the first item of msgs[m]
	// cuts[i] is -1, or, when order[:i] holds the same items as the view after the prefix up
	// to i and no response responseOrder read before i goes on after it, how many actions the
	// stage had then.
	cuts []int
	acts []int // acts[m]: how many actions the stage had before it read order[starts[m]]
	// roBase and clBase: how many actions the stage had when responseOrder began reading
	// order, and when collect's loop did.
	roBase, clBase int
}

// collect drops the items the provider never sees, cleans the blocks of the others and
// joins consecutive items of one role into one message, as merge would; a message that the
// per-message rules would leave as it is is marked tidied. The blocks the Pipeline's memo
// holds are not cleaned again. The messages' blocks share one array, each message's clipped
// to its length.
//
// With a settled prefix pre (nil: none) that the view starts with, only the items after it
// are read: the prefix's actions are reported again in their places (responseOrder's before
// the items' reorders, the loop's before the items' own), and its messages stand for its
// items. A prefix the view does not start with, or one of whose responses goes on after it,
// is emptied, and every item is read.
func (n *normalizer) collect(pre *normPrefix) collected {
	sc := n.sc
	items := n.t.items
	var col collected
	if pre != nil && pre.match(items, n.declared) && n.responseEnds(items[len(pre.items):], pre.msgIDs) {
		col.prefix, col.skip = len(pre.msgs), len(pre.items)
		pre.hits++
		n.preIDs, n.preNames = pre.ids, pre.fixedNames
		n.st.addAll(pre.reorders)
	} else {
		if pre != nil {
			pre.reset()
		}
		clear(sc.msgIDs)
		n.responseEnds(items, nil)
	}
	col.roBase = len(n.st.Actions)
	order, cuts := n.responseOrder(items[col.skip:])
	if col.skip > 0 {
		n.st.addAll(pre.acts)
	}
	col.clBase = len(n.st.Actions)
	why := grow(sc.why, len(order))
	total := 0
	for i, it := range order {
		why[i] = skipOf(it)
		if why[i] == skipNone {
			total += len(it.blocks)
		}
	}
	keys := sc.keys[:0]
	for i, it := range order {
		if why[i] == skipNone {
			for _, b := range it.blocks {
				keys = append(keys, cleanKey{b: b, asst: it.role == transcript.RoleAssistant})
			}
		}
	}
	memo := n.s.clean
	found := grow(sc.found, len(keys))
	if memo != nil {
		memo.lookup(keys, found)
	}
	var newKeys []cleanKey
	var newEntries []*cleanEntry
	all := grow(sc.all, total)[:0]
	msgs := grow(sc.msgs, len(order))[:0]
	starts, acts := sc.starts[:0], sc.acts[:0]
	k := 0 // index in keys of the item's first block
	for i, it := range order {
		before := len(n.st.Actions)
		if why[i] != skipNone {
			n.act(ActionDropped, it.uuid, "", skipReason(why[i], it.role), -n.s.counter.Blocks(it.blocks))
			continue
		}
		if len(it.blocks) == 0 {
			n.act(ActionDropped, it.uuid, "", "empty "+string(it.role)+" message", 0)
			continue
		}
		n.cur = i
		start := len(all)
		for _, b := range it.blocks {
			e := found[k]
			k++
			if e != nil && e.uuid == it.uuid && e.sig.same(b, n.declared) {
				all = append(all, e.nb)
				continue
			}
			acted := len(n.st.Actions)
			nb, ok := n.clean(b, it.role, it.uuid)
			if ok {
				all = append(all, nb)
			}
			if memo == nil || !ok || len(n.st.Actions) > acted || turnDependent(b) {
				continue
			}
			if sig, keep := signature(b); keep {
				e := &cleanEntry{uuid: it.uuid, sig: sig, nb: nb}
				newKeys = append(newKeys, keys[k-1])
				newEntries = append(newEntries, e)
				found[k-1] = e
			}
		}
		end := len(all)
		switch last := len(msgs) - 1; {
		case end == start:
		case last >= 0 && msgs[last].role == it.role:
			// No block was kept since the message's: its blocks end where this item's start.
			msgs[last].blocks = all[start-len(msgs[last].blocks) : end : end]
		default:
			msgs = append(msgs, nmsg{role: it.role, blocks: all[start:end:end]})
			starts, acts = append(starts, i), append(acts, before)
		}
	}
	for i := range msgs {
		msgs[i].tidied = !needsRules(&msgs[i])
	}
	if memo != nil {
		keys, found = memo.store(newKeys, newEntries, keys, found)
	}
	sc.why, sc.keys, sc.found, sc.all, sc.msgs, sc.starts, sc.acts = why, keys, found, all, msgs, starts, acts
	col.order, col.msgs, col.starts, col.cuts, col.acts = order, msgs, starts, cuts, acts
	return col
}

// needsRules reports whether the per-message rules (tidyMessage) may change m: it holds an
// unsupported block, or it is an assistant message with server tool blocks, or thinking at
// its end, or thinking while it does not start with thinking.
func needsRules(m *nmsg) bool {
	think := false // m holds thinking
	for _, nb := range m.blocks {
		if nb.bad {
			return true
		}
		switch nb.b.(type) {
		case *transcript.ServerToolUse, *transcript.ServerToolResult:
			if m.role == transcript.RoleAssistant {
				return true
			}
		case *transcript.Thinking, *transcript.RedactedThinking:
			think = true
		}
	}
	if m.role != transcript.RoleAssistant || !think {
		return false
	}
	return !wire.IsThinking(m.blocks[0].b) || wire.IsThinking(m.blocks[len(m.blocks)-1].b)
}

// responseEnds marks, in the normalize scratch, the items that are the last assistant item of
// their message id, for responseOrder to read the same items. It returns false, marking
// nothing for sure, when an assistant item holds the message id of a response in prior (the
// settled prefix's): that response goes on after the prefix.
func (n *normalizer) responseEnds(items []item, prior map[string]struct{}) bool {
	// last[i]: items[i] is the last assistant item of its msgID. Walking back, an item whose
	// msgID is that of the assistant item after it is not; the others look the msgID up.
	last := grow(n.sc.last, len(items))
	n.sc.last = last
	seen := n.sc.msgIDs
	next := "" // msgID of the assistant item after i
	for i := len(items) - 1; i >= 0; i-- {
		it := &items[i]
		last[i] = false
		if it.role != transcript.RoleAssistant || it.msgID == "" {
			continue
		}
		if it.msgID != next {
			if _, ok := prior[it.msgID]; ok {
				return false
			}
			if _, ok := seen[it.msgID]; !ok {
				seen[it.msgID] = struct{}{}
				last[i] = true
			}
			next = it.msgID
		}
	}
	return true
}

// responseOrder returns the items in view order, except that user items written between the
// records of one split assistant response (Claude Code runs tools while the response still
// streams, so their results land between its tool_use records) move after the response's
// last record: the provider sent the response as one message, and everything the user side
// added came after it. Each response so reordered is reported once. responseEnds has marked
// the items. It also returns, for each item returned, how many actions the stage had when it
// was placed with every item before it placed too and no response open, or -1.
func (n *normalizer) responseOrder(items []item) ([]*item, []int) {
	last := n.sc.last
	out, cuts := n.sc.order[:0], n.sc.cuts[:0]
	var pending []*item
	open := "" // msgID of the response whose records are being read
	flush := func() {
		if len(pending) > 0 {
			n.act(ActionRepaired, pending[0].uuid, "", fmt.Sprintf("%d user records written inside split response %s moved after it", len(pending), open), 0)
			out = append(out, pending...)
			for range pending {
				cuts = append(cuts, -1)
			}
			pending = nil
		}
	}
	for i := range items {
		it := &items[i]
		switch {
		case it.role == transcript.RoleAssistant && it.msgID != "":
			cut := -1
			if it.msgID != open {
				flush()
				open, cut = it.msgID, len(n.st.Actions)
			}
			out, cuts = append(out, it), append(cuts, cut)
			if last[i] {
				flush()
				open = ""
			}
		case open != "" && it.role == transcript.RoleUser:
			pending = append(pending, it)
		default:
			flush()
			open = ""
			out, cuts = append(out, it), append(cuts, len(n.st.Actions))
		}
	}
	flush()
	n.sc.order, n.sc.cuts = out, cuts
	return out, cuts
}

// skipCode is why an item never goes to the provider; skipNone: it does.
type skipCode uint8

const (
	skipNone skipCode = iota
	skipRole
	skipAPIError
	skipSynthetic
	skipVirtual
	skipDisplay
)

// skipOf says why an item never goes to the provider (see skipReason).
func skipOf(it *item) skipCode {
	if it.role != transcript.RoleUser && it.role != transcript.RoleAssistant {
		return skipRole
	}
	r := it.rec
	switch {
	case r == nil:
		return skipNone
	case r.IsAPIErrorMessage:
		return skipAPIError
	case it.role == transcript.RoleAssistant && r.Message != nil && r.Message.Model == "<synthetic>":
		return skipSynthetic
	case r.IsVirtual:
		return skipVirtual
	case r.IsVisibleInTranscriptOnly && !r.IsCompactSummary:
		return skipDisplay
	}
	return skipNone
}

// skipReason is the report's words for an item of role dropped for c.
func skipReason(c skipCode, role transcript.Role) string {
	switch c {
	case skipRole:
		return fmt.Sprintf("role %q is not sent to the provider", role)
	case skipAPIError:
		return "synthetic API error message"
	case skipSynthetic:
		return "synthetic assistant message"
	case skipVirtual:
		return "virtual message"
	case skipDisplay:
		return "display-only message"
	}
	return ""
}

// ends makes the request start with a user message and, unless prefill is allowed, end
// with one.
func (n *normalizer) ends(msgs []nmsg) []nmsg {
	if len(msgs) == 0 {
		return msgs
	}
	if msgs[0].role == transcript.RoleAssistant && !n.opensWithPoint(msgs) {
		n.act(ActionRepaired, msgs[0].blocks[0].uuid, "", "first message was an assistant message: inserted a user message before it", 0)
		msgs = append([]nmsg{{role: transcript.RoleUser, blocks: []nblock{{b: &transcript.Text{Text: leadingUserText}}}}}, msgs...)
	}
	last := &msgs[len(msgs)-1]
	if last.role != transcript.RoleAssistant {
		return msgs
	}
	uuid := last.blocks[len(last.blocks)-1].uuid
	if !n.cfg.AllowPrefill {
		text := n.cfg.Continuation
		if text == "" {
			text = defaultContinuation
		}
		n.act(ActionRepaired, uuid, "", "ended on an assistant message: appended a user continuation", 0)
		n.t.continued = true
		return append(msgs, nmsg{role: transcript.RoleUser, blocks: []nblock{{b: &transcript.Text{Text: text}}}})
	}
	// A prefill cannot end with whitespace.
	k := len(last.blocks) - 1
	if t, ok := last.blocks[k].b.(*transcript.Text); ok {
		if trimmed := strings.TrimRightFunc(t.Text, wire.IsSpaceRune); trimmed != t.Text {
			n.act(ActionRepaired, uuid, "", "trailing whitespace trimmed from the prefill", 0)
			// A new array: the message's may be collect's, which a settled prefix takes.
			last.blocks = slices.Clone(last.blocks)
			last.blocks[k].b = &transcript.Text{Text: trimmed, Citations: t.Citations}
		}
	}
	return msgs
}

// emit returns the request messages; a user message holds its tool results, then its other
// blocks, then its cache_edits. The messages' content slices share one array, each clipped to
// its length so that an append to one copies it.
func emit(msgs []nmsg) []provider.Message {
	total := 0
	for _, m := range msgs {
		total += len(m.blocks)
	}
	all := make([]transcript.Block, 0, total)
	out := make([]provider.Message, len(msgs))
	for i, m := range msgs {
		start := len(all)
		for _, nb := range m.blocks {
			all = append(all, nb.b)
		}
		bs := all[start:len(all):len(all)]
		if m.role == transcript.RoleUser && !slices.IsSortedFunc(bs, byUserRank) {
			slices.SortStableFunc(bs, byUserRank)
		}
		out[i] = provider.Message{Role: m.role, Content: bs}
	}
	return out
}

// byUserRank orders the blocks of a user message: tool results, then the other blocks, then
// cache_edits.
func byUserRank(a, b transcript.Block) int { return userRank(a) - userRank(b) }

func userRank(b transcript.Block) int {
	switch b.Kind() {
	case transcript.KindToolResult:
		return 0
	case transcript.KindCacheEdits:
		return 2
	}
	return 1
}

// toolID returns the tool id a block carries, or "".
func toolID(b transcript.Block) string {
	switch b := b.(type) {
	case *transcript.ToolUse:
		return b.ID
	case *transcript.ToolResult:
		return b.ToolUseID
	case *transcript.ServerToolUse:
		return b.ID
	case *transcript.ServerToolResult:
		return b.ToolUseID
	}
	return ""
}
