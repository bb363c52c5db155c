package agentctx

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/agentctx/agentctx/internal/jsonobj"
)

// NormalizeConfig configures the normalize stage, which turns the view into request messages
// that satisfy the provider contract (see [Validate]). The zero value is the default: a view
// that ends on an assistant message gets a user continuation "Continue." appended, because a
// trailing assistant message would be a prefill, which newer models reject.
type NormalizeConfig struct {
	// AllowPrefill keeps a trailing assistant message as a prefill (the model continues its
	// text) instead of appending a user continuation. Only for models that accept prefill.
	AllowPrefill bool
	// Continuation is the user text appended when the view ends on an assistant message and
	// AllowPrefill is off. Empty: "Continue.".
	Continuation string
}

func (c NormalizeConfig) validate() error {
	if c.Continuation != "" && isBlank(c.Continuation) {
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
	stubToolDescription   = "Declared by agentctx: used in the conversation history."
)

// nblock is one content block on its way to the request, with the record it came from.
type nblock struct {
	b    Block
	uuid string // source record ("" for synthesized blocks), for the report
	bad  bool   // b is a block the provider does not accept here: dropped, or a placeholder
}

// nmsg is one request message being built.
type nmsg struct {
	role   Role
	blocks []nblock
}

// normalizer holds one turn's normalize state.
type normalizer struct {
	p        *Pipeline
	t        *turn
	cfg      NormalizeConfig
	st       *StageReport
	declared map[string]bool   // tool names of Input.Tools
	ids      map[string]string // tool ids the provider would reject → their rewrite
	names    map[string]string // tool names the provider would reject → their rewrite
}

// normalize turns t.items into t.req.Messages and t.req.Tools. It makes no decision records:
// every repair is a pure function of the view, reported as ActionRepaired or ActionDropped.
//
// The steps, in order (rule numbers are those of the provider contract):
//  1. Items the provider never sees are dropped: API-error and other synthetic assistant
//     records, virtual records, display-only records (compact summaries are sent). User
//     records written between the records of one split assistant response (Claude Code runs
//     tools while the response streams) move after the response.
//  2. Blocks are rebuilt without transcript-only fields (Extra, cache_control; a
//     cache_reference set by microcompact stays); thinking and redacted_thinking are sent
//     byte for byte. Blank text, thinking without a replayable signature and blocks the
//     provider rejects at their position (2.11) are dropped, or become a "[unsupported block:
//     TYPE]" text when dropping would empty the message. Tool ids that do not match
//     ^[a-zA-Z0-9_-]+$ are rewritten on the tool_use and its results alike (2.10).
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
//     messages use that Input.Tools lacks, sorted by name.
//
// The request's blocks are new values owned by the request, except thinking,
// redacted_thinking, search_result and cache_edits blocks, which are shared with the
// transcript or the stage that made them and must not be modified.
func (p *Pipeline) normalize(t *turn) error {
	n := &normalizer{
		p: p, t: t, cfg: p.cfg.Normalize, st: t.report.stage("normalize"),
		declared: map[string]bool{}, ids: map[string]string{}, names: map[string]string{},
	}
	for _, tl := range t.in.Tools {
		n.declared[tl.Name] = true
	}
	msgs := n.tidy(n.collect())
	msgs = n.tidy(n.dedupToolUses(msgs))
	for range 3 {
		var changed bool
		msgs, changed = n.pair(msgs)
		msgs = n.tidy(msgs)
		if !changed {
			break
		}
	}
	msgs = n.ends(msgs)
	msgs = n.finalTurnThinking(msgs)
	t.req.Messages = emit(msgs)
	t.req.Tools = n.tools(msgs)
	return nil
}

func (n *normalizer) act(kind ActionKind, uuid, toolUseID, detail string, tokens int) {
	n.st.add(Action{Kind: kind, UUID: uuid, ToolUseID: toolUseID, Detail: detail, Tokens: tokens})
}

// drop reports a dropped block, with the tokens it took.
func (n *normalizer) drop(nb nblock, detail string) {
	n.act(ActionDropped, nb.uuid, toolID(nb.b), detail, -n.p.counter.Block(nb.b))
}

// collect drops the items the provider never sees and cleans the blocks of the others.
func (n *normalizer) collect() []nmsg {
	var msgs []nmsg
	for _, it := range n.responseOrder() {
		if why := skipItem(it); why != "" {
			n.act(ActionDropped, it.uuid, "", why, -n.p.counter.Blocks(it.blocks))
			continue
		}
		if len(it.blocks) == 0 {
			n.act(ActionDropped, it.uuid, "", "empty "+string(it.role)+" message", 0)
			continue
		}
		m := nmsg{role: it.role}
		for _, b := range it.blocks {
			if nb, ok := n.clean(b, it.role, it.uuid); ok {
				m.blocks = append(m.blocks, nb)
			}
		}
		if len(m.blocks) > 0 {
			msgs = append(msgs, m)
		}
	}
	return msgs
}

// responseOrder returns the items in view order, except that user items written between the
// records of one split assistant response (Claude Code runs tools while the response still
// streams, so their results land between its tool_use records) move after the response's
// last record: the provider sent the response as one message, and everything the user side
// added came after it. Each response so reordered is reported once.
func (n *normalizer) responseOrder() []*item {
	items := n.t.items
	last := map[string]int{} // msgID → index of its last assistant item
	for i := range items {
		if it := &items[i]; it.role == RoleAssistant && it.msgID != "" {
			last[it.msgID] = i
		}
	}
	out := make([]*item, 0, len(items))
	var pending []*item
	open := "" // msgID of the response whose records are being read
	flush := func() {
		if len(pending) > 0 {
			n.act(ActionRepaired, pending[0].uuid, "", fmt.Sprintf("%d user records written inside split response %s moved after it", len(pending), open), 0)
			out = append(out, pending...)
			pending = nil
		}
	}
	for i := range items {
		it := &items[i]
		switch {
		case it.role == RoleAssistant && it.msgID != "":
			if it.msgID != open {
				flush()
				open = it.msgID
			}
			out = append(out, it)
			if last[open] == i {
				flush()
				open = ""
			}
		case open != "" && it.role == RoleUser:
			pending = append(pending, it)
		default:
			flush()
			open = ""
			out = append(out, it)
		}
	}
	flush()
	return out
}

// skipItem says why an item never goes to the provider, or "".
func skipItem(it *item) string {
	if it.role != RoleUser && it.role != RoleAssistant {
		return fmt.Sprintf("role %q is not sent to the provider", it.role)
	}
	r := it.rec
	switch {
	case r == nil:
		return ""
	case r.IsAPIErrorMessage:
		return "synthetic API error message"
	case it.role == RoleAssistant && r.Message != nil && r.Message.Model == "<synthetic>":
		return "synthetic assistant message"
	case r.IsVirtual:
		return "virtual message"
	case r.IsVisibleInTranscriptOnly && !r.IsCompactSummary:
		return "display-only message"
	}
	return ""
}

// clean returns the request form of a top-level block of a role's message; ok is false when
// the block is dropped (and reported).
func (n *normalizer) clean(b Block, role Role, uuid string) (nblock, bool) {
	nb := nblock{b: b, uuid: uuid}
	bad := nblock{b: b, uuid: uuid, bad: true}
	user, asst := role == RoleUser, role == RoleAssistant
	if isNilBlock(b) {
		n.act(ActionDropped, uuid, "", "nil block", 0)
		return nb, false
	}
	switch b := b.(type) {
	case *Text:
		if isBlank(b.Text) {
			n.drop(nb, "empty or whitespace-only text block")
			return nb, false
		}
		nb.b = &Text{Text: b.Text, Citations: nonNull(b.Citations)}
	case *Image:
		if !user {
			return bad, true
		}
		nb.b = &Image{Source: b.Source}
	case *Document:
		if !user {
			return bad, true
		}
		nb.b = &Document{Source: b.Source, Title: b.Title, Context: b.Context, Citations: nonNull(b.Citations)}
	case *ToolUse:
		if !asst {
			return bad, true
		}
		nb.b = &ToolUse{ID: n.fixID(b.ID, uuid), Name: n.fixName(b.Name, uuid), Input: n.objectInput(b.Input, b.ID, uuid)}
	case *ToolResult:
		if !user {
			return bad, true
		}
		nb.b = n.cleanResult(b, uuid)
	case *Thinking:
		if !asst {
			return bad, true
		}
		if !replayableSignature(b.Signature) {
			n.drop(nb, "thinking block without a replayable signature")
			return nb, false
		}
		nb.b = cleanThinking(b)
	case *RedactedThinking:
		if !asst {
			return bad, true
		}
		if b.Data == "" {
			n.drop(nb, "redacted_thinking block without data")
			return nb, false
		}
		if len(b.Extra) > 0 {
			nb.b = &RedactedThinking{Data: b.Data}
		}
	case *ServerToolUse:
		if !asst {
			return bad, true
		}
		nb.b = &ServerToolUse{ID: n.fixID(b.ID, uuid), Name: b.Name, Input: n.objectInput(b.Input, b.ID, uuid)}
	case *ServerToolResult:
		if !asst {
			return bad, true
		}
		nb.b = &ServerToolResult{Type: b.Type, ToolUseID: n.fixID(b.ToolUseID, uuid), Content: b.Content}
	case *CacheEdits:
		if !user {
			n.drop(nb, "cache_edits block outside a user message")
			return nb, false
		}
	case *UnknownBlock:
		if !user || b.Type != KindSearchResult {
			return bad, true
		}
	default:
		return bad, true // tool_reference outside a tool_result, and anything else
	}
	return nb, true
}

// cleanResult rebuilds a tool_result with only the content the provider accepts in one.
func (n *normalizer) cleanResult(b *ToolResult, uuid string) *ToolResult {
	id := n.fixID(b.ToolUseID, uuid)
	var content []Block
	var bad []Block
	for _, cb := range b.Content {
		if isNilBlock(cb) {
			continue
		}
		switch cb := cb.(type) {
		case *Text:
			if isBlank(cb.Text) {
				if len(b.Content) > 1 {
					n.drop(nblock{b: cb, uuid: uuid}, "empty or whitespace-only text in tool_result "+id)
				}
				continue
			}
			content = append(content, &Text{Text: cb.Text, Citations: nonNull(cb.Citations)})
		case *Image:
			content = append(content, &Image{Source: cb.Source})
		case *Document:
			content = append(content, &Document{Source: cb.Source, Title: cb.Title, Context: cb.Context, Citations: nonNull(cb.Citations)})
		case *ToolReference:
			if n.declared[cb.ToolName] {
				content = append(content, &ToolReference{ToolName: cb.ToolName})
				continue
			}
			n.act(ActionRepaired, uuid, id, fmt.Sprintf("tool_reference to %q, which Input.Tools does not declare, sent as text", cb.ToolName), 0)
			content = append(content, &Text{Text: fmt.Sprintf(toolReferenceText, cb.ToolName)})
		case *UnknownBlock:
			if cb.Type == KindSearchResult {
				content = append(content, cb)
				continue
			}
			bad = append(bad, cb)
		default:
			bad = append(bad, cb)
		}
	}
	for i, cb := range bad {
		if i == 0 && len(content) == 0 {
			n.act(ActionRepaired, uuid, id, fmt.Sprintf("unsupported %s block in tool_result replaced by a text placeholder", cb.Kind()), 0)
			content = append(content, &Text{Text: fmt.Sprintf(unsupportedBlockText, cb.Kind())})
			continue
		}
		n.act(ActionDropped, uuid, id, fmt.Sprintf("unsupported %s block in tool_result", cb.Kind()), -n.p.counter.Block(cb))
	}
	if len(content) == 0 {
		n.act(ActionRepaired, uuid, id, "empty tool_result content replaced by "+emptyResultText, 0)
		content = []Block{&Text{Text: emptyResultText}}
	}
	str := b.StringContent && len(content) == 1 && content[0].Kind() == KindText
	return &ToolResult{ToolUseID: id, Content: content, StringContent: str, IsError: b.IsError, CacheReference: b.CacheReference}
}

// cleanThinking returns the thinking block as it must be sent: the same bytes without
// transcript-only fields.
func cleanThinking(b *Thinking) Block {
	if len(b.Extra) == 0 && b.Thinking != "" {
		return b
	}
	// Decoding sets the presence of "thinking", which an empty thinking text needs to be
	// encoded at all.
	enc, err := jsonobj.Marshal(struct {
		Type      string `json:"type"`
		Thinking  string `json:"thinking"`
		Signature string `json:"signature"`
	}{"thinking", b.Thinking, b.Signature})
	if err != nil {
		panic("agentctx: unreachable: " + err.Error())
	}
	out, err := UnmarshalBlock(enc)
	if err != nil {
		panic("agentctx: unreachable: " + err.Error())
	}
	return out
}

// objectInput returns a tool call's input as a JSON object: {} for a missing, null or
// non-object input (the latter reported).
func (n *normalizer) objectInput(in json.RawMessage, id, uuid string) json.RawMessage {
	trimmed := bytes.TrimSpace(in)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		return json.RawMessage("{}")
	}
	if trimmed[0] != '{' || !json.Valid(trimmed) {
		n.act(ActionRepaired, uuid, id, "tool input is not a JSON object: sent as {}", 0)
		return json.RawMessage("{}")
	}
	return in
}

// fixID returns id, or its deterministic rewrite when the provider would reject it (2.10).
func (n *normalizer) fixID(id, uuid string) string {
	if validToolID(id) {
		return id
	}
	if fixed, ok := n.ids[id]; ok {
		return fixed
	}
	sum := sha256.Sum256([]byte(id))
	fixed := "toolu_fix_" + hex.EncodeToString(sum[:12])
	n.ids[id] = fixed
	n.act(ActionRepaired, uuid, id, "tool id does not match ^[a-zA-Z0-9_-]+$: rewritten to "+fixed, 0)
	return fixed
}

// fixName returns a tool_use's name, or its deterministic rewrite when it cannot be declared
// as a tool name.
func (n *normalizer) fixName(name, uuid string) string {
	if validToolName(name) {
		return name
	}
	if fixed, ok := n.names[name]; ok {
		return fixed
	}
	var b strings.Builder
	for _, r := range name {
		if b.Len() >= 64 {
			break
		}
		if r < 0x80 && (isAlnum(byte(r)) || r == '_' || r == '-') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	sum := sha256.Sum256([]byte(name))
	fixed := strings.TrimRight(b.String(), "_") + "_" + hex.EncodeToString(sum[:4])
	fixed = strings.TrimLeft(fixed, "_")
	n.names[name] = fixed
	n.act(ActionRepaired, uuid, "", fmt.Sprintf("tool name %q is not a valid tool name: rewritten to %s", name, fixed), 0)
	return fixed
}

// tidy merges same-role neighbours, applies the per-message rules and drops empty
// messages, until nothing changes.
func (n *normalizer) tidy(msgs []nmsg) []nmsg {
	msgs = merge(msgs)
	for {
		for i := range msgs {
			n.tidyMessage(&msgs[i])
		}
		out := make([]nmsg, 0, len(msgs))
		var carry []nblock // cache_edits of dropped messages, for the next user message
		dropped := false
		for _, m := range msgs {
			if hasContent(m) {
				if m.role == RoleUser && len(carry) > 0 {
					m.blocks = append(m.blocks, carry...)
					carry = nil
				}
				out = append(out, m)
				continue
			}
			dropped = true
			edits := slices.DeleteFunc(slices.Clone(m.blocks), func(nb nblock) bool { return nb.b.Kind() != KindCacheEdits })
			uuid := ""
			if len(m.blocks) > 0 {
				uuid = m.blocks[0].uuid
			}
			n.act(ActionDropped, uuid, "", "empty "+string(m.role)+" message", 0)
			if len(edits) == 0 {
				continue
			}
			if j := lastUser(out); j >= 0 {
				out[j].blocks = append(out[j].blocks, edits...)
			} else {
				carry = append(carry, edits...)
			}
		}
		for _, nb := range carry {
			n.drop(nb, "cache_edits block without a user message to carry it")
		}
		msgs = out
		if !dropped {
			return msgs
		}
		msgs = merge(msgs)
	}
}

func lastUser(msgs []nmsg) int {
	for j := len(msgs) - 1; j >= 0; j-- {
		if msgs[j].role == RoleUser {
			return j
		}
	}
	return -1
}

// merge joins consecutive messages of the same role.
func merge(msgs []nmsg) []nmsg {
	out := make([]nmsg, 0, len(msgs))
	for _, m := range msgs {
		if k := len(out) - 1; k >= 0 && out[k].role == m.role {
			out[k].blocks = append(slices.Clip(out[k].blocks), m.blocks...)
			continue
		}
		out = append(out, m)
	}
	return out
}

// hasContent reports whether a message holds a block that makes it non-empty (cache_edits
// alone do not).
func hasContent(m nmsg) bool {
	for _, nb := range m.blocks {
		if nb.b.Kind() != KindCacheEdits {
			return true
		}
	}
	return false
}

// tidyMessage applies the rules that look at one message: unsupported blocks, server tool
// pairing and thinking placement. It is idempotent.
func (n *normalizer) tidyMessage(m *nmsg) {
	// Unsupported blocks: a placeholder when nothing else would remain, else dropped.
	if slices.ContainsFunc(m.blocks, func(nb nblock) bool { return nb.bad }) {
		placeholder := !slices.ContainsFunc(m.blocks, func(nb nblock) bool { return !nb.bad && nb.b.Kind() != KindCacheEdits })
		out := make([]nblock, 0, len(m.blocks))
		for _, nb := range m.blocks {
			switch {
			case !nb.bad:
				out = append(out, nb)
			case placeholder:
				placeholder = false
				n.act(ActionRepaired, nb.uuid, toolID(nb.b), fmt.Sprintf("%s block not accepted in a %s message: replaced by a text placeholder", nb.b.Kind(), m.role), 0)
				out = append(out, nblock{b: &Text{Text: fmt.Sprintf(unsupportedBlockText, nb.b.Kind())}, uuid: nb.uuid})
			default:
				n.drop(nb, fmt.Sprintf("%s block not accepted in a %s message", nb.b.Kind(), m.role))
			}
		}
		m.blocks = out
	}
	if m.role != RoleAssistant {
		return
	}
	n.pairServerTools(m)
	// 4.4: an assistant message cannot end with thinking.
	for k := len(m.blocks) - 1; k >= 0 && isThinking(m.blocks[k].b); k-- {
		n.drop(m.blocks[k], "assistant message cannot end with thinking")
		m.blocks = m.blocks[:k]
	}
	// 4.3: thinking comes first (merged responses: in their original order).
	if len(m.blocks) > 0 && !isThinking(m.blocks[0].b) && slices.ContainsFunc(m.blocks, func(nb nblock) bool { return isThinking(nb.b) }) {
		var think, rest []nblock
		for _, nb := range m.blocks {
			if isThinking(nb.b) {
				think = append(think, nb)
			} else {
				rest = append(rest, nb)
			}
		}
		n.act(ActionRepaired, think[0].uuid, "", fmt.Sprintf("%d thinking blocks moved to the front of a merged assistant message", len(think)), 0)
		m.blocks = append(think, rest...)
	}
}

// pairServerTools keeps each server_tool_use with the first server tool result after it in
// the same message, and drops unpaired ones (2.7).
func (n *normalizer) pairServerTools(m *nmsg) {
	uses := map[string]int{} // id → block index
	paired := map[string]bool{}
	drop := map[int]string{}
	for k, nb := range m.blocks {
		switch b := nb.b.(type) {
		case *ServerToolUse:
			if _, dup := uses[b.ID]; dup {
				drop[k] = "duplicate server_tool_use id"
				continue
			}
			uses[b.ID] = k
		case *ServerToolResult:
			if _, ok := uses[b.ToolUseID]; !ok || paired[b.ToolUseID] {
				drop[k] = string(b.Type) + " without a server_tool_use before it in the same message"
				continue
			}
			paired[b.ToolUseID] = true
		}
	}
	for id, k := range uses {
		if !paired[id] {
			drop[k] = "server_tool_use without its result in the same message"
		}
	}
	if len(drop) == 0 {
		return
	}
	out := make([]nblock, 0, len(m.blocks))
	for k, nb := range m.blocks {
		if why, ok := drop[k]; ok {
			n.drop(nb, why)
			continue
		}
		out = append(out, nb)
	}
	m.blocks = out
}

// dedupToolUses keeps the first tool_use of each id and drops later ones (2.5). Their
// results are left to pair, which drops them unless the kept tool_use has none.
func (n *normalizer) dedupToolUses(msgs []nmsg) []nmsg {
	seen := map[string]bool{}
	for i := range msgs {
		if msgs[i].role != RoleAssistant {
			continue
		}
		var out []nblock
		for k, nb := range msgs[i].blocks {
			tu, ok := nb.b.(*ToolUse)
			if !ok || !seen[tu.ID] {
				if ok {
					seen[tu.ID] = true
				}
				if out != nil {
					out = append(out, nb)
				}
				continue
			}
			if out == nil {
				out = append(make([]nblock, 0, len(msgs[i].blocks)), msgs[i].blocks[:k]...)
			}
			n.drop(nb, "duplicate tool_use id")
		}
		if out != nil {
			msgs[i].blocks = out
		}
	}
	return msgs
}

// pair enforces tool_use/tool_result pairing between each assistant message and the next
// (2.1, 2.2) and puts the results first in their message (2.3). It reports whether it moved,
// dropped or synthesized anything.
func (n *normalizer) pair(msgs []nmsg) ([]nmsg, bool) {
	useAt := map[string]int{} // tool_use id → assistant message index
	for i, m := range msgs {
		if m.role == RoleAssistant {
			for _, nb := range m.blocks {
				if tu, ok := nb.b.(*ToolUse); ok {
					useAt[tu.ID] = i
				}
			}
		}
	}
	// Results by the assistant message they answer; unplaced ones are candidates to move.
	type loc struct{ msg, blk int }
	answers := map[int]map[string]nblock{}
	answer := func(k int, id string, nb nblock) {
		if answers[k] == nil {
			answers[k] = map[string]nblock{}
		}
		answers[k][id] = nb
	}
	var misplaced []loc
	candidates := map[string]int{}
	changed := false
	for j, m := range msgs {
		if m.role != RoleUser {
			continue
		}
		for k, nb := range m.blocks {
			tr, ok := nb.b.(*ToolResult)
			if !ok {
				continue
			}
			at, used := useAt[tr.ToolUseID]
			switch {
			case !used:
				n.drop(nb, "tool_result without a tool_use")
				changed = true
			case at == j-1:
				if _, dup := answers[at][tr.ToolUseID]; dup {
					n.drop(nb, "duplicate tool_result")
					changed = true
					continue
				}
				answer(at, tr.ToolUseID, nb)
			default:
				misplaced = append(misplaced, loc{j, k})
				candidates[tr.ToolUseID]++
			}
		}
	}
	for _, l := range misplaced {
		nb := msgs[l.msg].blocks[l.blk]
		id := nb.b.(*ToolResult).ToolUseID
		at := useAt[id]
		changed = true
		switch _, has := answers[at][id]; {
		case has:
			n.drop(nb, "tool_result away from its tool_use, which already has a result")
		case candidates[id] > 1:
			n.drop(nb, "tool_result away from its tool_use, and not the only one: ambiguous")
		default:
			n.act(ActionRepaired, nb.uuid, id, "tool_result moved to the message after its tool_use", 0)
			answer(at, id, nb)
		}
	}
	// Rebuild: each assistant message with tool_use blocks is followed by a user message
	// that opens with exactly their results, in their order.
	out := make([]nmsg, 0, len(msgs)+1)
	for i := 0; i < len(msgs); i++ {
		m := msgs[i]
		if m.role == RoleUser {
			out = append(out, nmsg{role: RoleUser, blocks: withoutResults(m.blocks)})
			continue
		}
		out = append(out, m)
		var results []nblock
		for _, nb := range m.blocks {
			tu, ok := nb.b.(*ToolUse)
			if !ok {
				continue
			}
			if r, ok := answers[i][tu.ID]; ok {
				results = append(results, r)
				continue
			}
			n.act(ActionRepaired, nb.uuid, tu.ID, "tool_use without a tool_result: synthesized an error result", 0)
			changed = true
			results = append(results, nblock{b: &ToolResult{ToolUseID: tu.ID, Content: []Block{&Text{Text: interruptedResultText}}, StringContent: true, IsError: true}})
		}
		if len(results) == 0 {
			continue
		}
		if i+1 < len(msgs) && msgs[i+1].role == RoleUser {
			next := msgs[i+1].blocks
			if k := slices.IndexFunc(next, func(nb nblock) bool { return nb.b.Kind() != KindToolResult }); k >= 0 &&
				slices.ContainsFunc(next[k:], func(nb nblock) bool { return nb.b.Kind() == KindToolResult }) {
				n.act(ActionRepaired, next[k].uuid, "", "tool_result blocks moved before the other content of their message", 0)
			}
			out = append(out, nmsg{role: RoleUser, blocks: append(results, withoutResults(next)...)})
			i++
			continue
		}
		n.act(ActionRepaired, m.blocks[0].uuid, "", "inserted a user message for the tool results of an assistant message", 0)
		changed = true
		out = append(out, nmsg{role: RoleUser, blocks: results})
	}
	return out, changed
}

func withoutResults(bs []nblock) []nblock {
	return slices.DeleteFunc(slices.Clone(bs), func(nb nblock) bool { return nb.b.Kind() == KindToolResult })
}

// ends makes the request start with a user message and, unless prefill is allowed, end
// with one.
func (n *normalizer) ends(msgs []nmsg) []nmsg {
	if len(msgs) == 0 {
		return msgs
	}
	if msgs[0].role == RoleAssistant {
		n.act(ActionRepaired, msgs[0].blocks[0].uuid, "", "first message was an assistant message: inserted a user message before it", 0)
		msgs = append([]nmsg{{role: RoleUser, blocks: []nblock{{b: &Text{Text: leadingUserText}}}}}, msgs...)
	}
	last := &msgs[len(msgs)-1]
	if last.role != RoleAssistant {
		return msgs
	}
	uuid := last.blocks[len(last.blocks)-1].uuid
	if !n.cfg.AllowPrefill {
		text := n.cfg.Continuation
		if text == "" {
			text = defaultContinuation
		}
		n.act(ActionRepaired, uuid, "", "ended on an assistant message: appended a user continuation", 0)
		return append(msgs, nmsg{role: RoleUser, blocks: []nblock{{b: &Text{Text: text}}}})
	}
	// A prefill cannot end with whitespace.
	k := len(last.blocks) - 1
	if t, ok := last.blocks[k].b.(*Text); ok {
		if trimmed := strings.TrimRightFunc(t.Text, isSpaceRune); trimmed != t.Text {
			n.act(ActionRepaired, uuid, "", "trailing whitespace trimmed from the prefill", 0)
			last.blocks[k].b = &Text{Text: trimmed, Citations: t.Citations}
		}
	}
	return msgs
}

// finalTurnThinking applies the thinking rules of the final assistant turn (4.2, 4.5).
func (n *normalizer) finalTurnThinking(msgs []nmsg) []nmsg {
	start := finalTurnStart(len(msgs), func(i int) (Role, []Block) { return msgs[i].role, blocksOf(msgs[i].blocks) })
	if start >= len(msgs) {
		return msgs
	}
	why := "thinking is disabled: the final assistant turn cannot contain thinking"
	if n.p.cfg.Thinking.Enabled() {
		if len(msgs[start].blocks) > 0 && isThinking(msgs[start].blocks[0].b) {
			return msgs
		}
		n.t.report.ThinkingUnavailable = true
		n.act(ActionRepaired, msgs[start].blocks[0].uuid, "",
			"thinking is enabled but the assistant turn in flight does not start with replayable thinking: this request is sent with thinking disabled", 0)
		why = "thinking unavailable for the assistant turn in flight"
	}
	for i := start; i < len(msgs); i++ {
		if msgs[i].role != RoleAssistant {
			continue
		}
		msgs[i].blocks = slices.DeleteFunc(msgs[i].blocks, func(nb nblock) bool {
			if isThinking(nb.b) {
				n.drop(nb, why)
				return true
			}
			return false
		})
	}
	return msgs
}

func blocksOf(nbs []nblock) []Block {
	bs := make([]Block, len(nbs))
	for i, nb := range nbs {
		bs[i] = nb.b
	}
	return bs
}

// emit returns the request messages; a user message holds its tool results, then its other
// blocks, then its cache_edits.
func emit(msgs []nmsg) []RequestMessage {
	out := make([]RequestMessage, len(msgs))
	for i, m := range msgs {
		bs := blocksOf(m.blocks)
		if m.role == RoleUser {
			rank := func(b Block) int {
				switch b.Kind() {
				case KindToolResult:
					return 0
				case KindCacheEdits:
					return 2
				}
				return 1
			}
			slices.SortStableFunc(bs, func(a, b Block) int { return rank(a) - rank(b) })
		}
		out[i] = RequestMessage{Role: m.role, Content: bs}
	}
	return out
}

// tools returns Input.Tools followed by a stub for each tool name the messages use that
// Input.Tools lacks (2.9), sorted by name.
func (n *normalizer) tools(msgs []nmsg) []Tool {
	tools := slices.Clone(n.t.in.Tools)
	firstUse := map[string]nblock{}
	var missing []string
	for _, m := range msgs {
		for _, nb := range m.blocks {
			if tu, ok := nb.b.(*ToolUse); ok && !n.declared[tu.Name] {
				if _, seen := firstUse[tu.Name]; !seen {
					firstUse[tu.Name] = nb
					missing = append(missing, tu.Name)
				}
			}
		}
	}
	slices.Sort(missing)
	for _, name := range missing {
		def, err := jsonobj.Marshal(struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			InputSchema json.RawMessage `json:"input_schema"`
		}{name, stubToolDescription, json.RawMessage(`{"type":"object"}`)})
		if err != nil {
			panic("agentctx: unreachable: " + err.Error())
		}
		nb := firstUse[name]
		n.act(ActionRepaired, nb.uuid, toolID(nb.b), "tool "+name+" is used in the history but not in Input.Tools: declared with an empty schema", 0)
		tools = append(tools, Tool{Name: name, Definition: def})
	}
	return tools
}

// toolID returns the tool id a block carries, or "".
func toolID(b Block) string {
	switch b := b.(type) {
	case *ToolUse:
		return b.ID
	case *ToolResult:
		return b.ToolUseID
	case *ServerToolUse:
		return b.ID
	case *ServerToolResult:
		return b.ToolUseID
	}
	return ""
}
