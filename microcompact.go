package agentctx

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/agentctx/agentctx/provider"

	"github.com/agentctx/agentctx/transcript"
)

// ClearedToolResultText is the content a tool result has after time-based microcompact cleared
// it (Claude Code's wording, so a model trained on Claude Code sessions recognises it).
const ClearedToolResultText = "[Old tool result content cleared]"

// Microcompact defaults.
const (
	// defaultMicrocompactKeepRecent is how many of the newest compactable results stay.
	defaultMicrocompactKeepRecent = 5
	// defaultCachedTriggerTokens is the cached-mode trigger, in tokens: the default trigger
	// of the provider's own server-side clear_tool_uses context edit.
	defaultCachedTriggerTokens = 100_000
)

// DefaultCompactableTools returns the names of the tools whose results microcompact clears by
// default: Claude Code's list (file reads, shell, search, web, edits). Their output can be
// obtained again by calling the tool again. The caller owns the returned slice.
func DefaultCompactableTools() []string {
	return []string{"Read", "Bash", "Grep", "Glob", "WebSearch", "WebFetch", "Edit", "Write"}
}

// MicrocompactConfig configures the microcompact stage. The zero value is the default:
// time-based clearing after an idle gap of the cache's TTL in effect (5 minutes by default),
// keeping the 5 newest compactable results.
//
// Every clearing (or cache deletion) is a [transcript.SubtypeMicrocompact] decision record that Prepare
// returns in [Result.Append]; once appended it is re-applied on every later turn, whatever the
// clock and whatever this config says, so the request prefix stays byte-stable.
type MicrocompactConfig struct {
	// Disable stops new decisions: no new clearing and no new cache deletion. Recorded
	// decisions are still re-applied.
	Disable bool
	// Gap is the idle time since the last assistant message (its record's timestamp) after
	// which old results are cleared. Zero: the cache's TTL in effect ([CacheConfig.TTL]: 5
	// minutes, or an hour for "1h"). Claude Code's reasoning, with its own 60 minutes for its
	// 1-hour cache: once the provider's prompt cache has expired, the rewrite the clearing
	// forces costs no extra cache miss. A Gap under the TTL clears a warm prefix: the
	// clearing is then made only when it frees enough per token it rewrites
	// ([CacheConfig.MinGain]).
	Gap time.Duration
	// KeepRecent is how many of the newest compactable results stay untouched. Zero: 5.
	// Results the model has not seen yet (those after the last assistant message) always
	// stay, however many there are.
	KeepRecent int
	// Tools names the compactable tools; results of other tools are never cleared. Nil:
	// [DefaultCompactableTools].
	Tools []string
	// Cached selects Anthropic cache editing instead of clearing: the content stays in the
	// request (the cached prefix is not rewritten); the selected tool results get a
	// cache_reference and a request-only cache_edits block deletes them from the provider's
	// cache. The cache_edits block is pinned to the user message that was last when the
	// deletion was decided and re-sent there on every later turn. Deleted results do not count
	// in the Report's InputTokens nor in max_tokens: the provider no longer holds them.
	//
	// CachedTriggerTokens decides when to delete, except after an idle gap over Gap: then the
	// provider's cache has expired, there is nothing left to edit, and old results are cleared
	// as without Cached (which also ends the earlier deletions: their cache_edits are no
	// longer sent). With Cache.Disable there is no cached prefix to edit, so no new deletion
	// is made. Cached needs CacheEditingBeta.
	Cached bool
	// CacheEditingBeta is the anthropic-beta header value that enables cache editing for the
	// caller's provider account; a request carrying cache_edits lists it in [provider.Request.Betas].
	// Anthropic has not published one, so there is no default: New refuses Cached without it.
	CacheEditingBeta string
	// CachedTriggerTokens is the cached-mode trigger, in tokens counted with the pipeline's
	// counter. The stage measures the request as built so far — system prompt, tool
	// definitions and the view's messages, minus the results already deleted by earlier
	// cache edits (the provider no longer holds them) — and, when that exceeds
	// CachedTriggerTokens, deletes every compactable result except the KeepRecent newest.
	// Subtracting earlier deletions batches them: the next deletion waits until the live
	// context grows past the trigger again. Zero: 100,000 (the default trigger of the
	// provider's own server-side clear_tool_uses context edit) at a window of 200,000 tokens
	// and more, half the window below, at least 4,000.
	CachedTriggerTokens int
}

func (c MicrocompactConfig) validate() error {
	var errs []error
	if c.Gap < 0 {
		errs = append(errs, fmt.Errorf("agentctx: Microcompact.Gap %v is negative", c.Gap))
	}
	if c.KeepRecent < 0 {
		errs = append(errs, fmt.Errorf("agentctx: Microcompact.KeepRecent %d is negative", c.KeepRecent))
	}
	if c.CachedTriggerTokens < 0 {
		errs = append(errs, fmt.Errorf("agentctx: Microcompact.CachedTriggerTokens %d is negative", c.CachedTriggerTokens))
	}
	if c.Cached && c.CacheEditingBeta == "" {
		errs = append(errs, errors.New("agentctx: Microcompact.Cached needs Microcompact.CacheEditingBeta, the anthropic-beta value that enables cache editing: a request with cache_edits is rejected without it"))
	}
	if slices.Contains(c.Tools, "") {
		errs = append(errs, errors.New("agentctx: Microcompact.Tools holds an empty tool name"))
	}
	return errors.Join(errs...)
}

// gap is the idle gap that clears, the TTL in effect being ttl.
func (c MicrocompactConfig) gap(ttl time.Duration) time.Duration { return cmp.Or(c.Gap, ttl) }

func (c MicrocompactConfig) keepRecent() int {
	return cmp.Or(c.KeepRecent, defaultMicrocompactKeepRecent)
}

func (c MicrocompactConfig) tools() []string {
	if c.Tools == nil {
		return DefaultCompactableTools()
	}
	return c.Tools
}

// cachedTrigger is the cached-mode trigger for window.
func (c MicrocompactConfig) cachedTrigger(window int) int {
	return cmp.Or(c.CachedTriggerTokens, scaled(defaultCachedTriggerTokens, 4_000, window))
}

// Microcompact decision triggers. A compaction's [CompactRungClearResults] writes the third.
const (
	mcTriggerTime    = "time"
	mcTriggerCached  = "cached"
	mcTriggerCompact = "compact"
)

// mcLedger is what the microcompact decision records of a transcript say.
type mcLedger struct {
	cleared  map[string]string   // time-cleared tool_use id → uuid of the clearing record
	by       map[string]string   // cache-deleted tool_use id → uuid of the deleting record
	deleted  map[string]string   // cache-deleted tool_use id → pinned user record uuid
	pins     []string            // pinned uuids, in order of first appearance
	pinEdits map[string][]string // pinned uuid → deleted ids, in decision order
}

// loadMicrocompact reads every microcompact decision of records from position from on (a
// chain's start: a decision comes after the results it clears), not only the chain's:
// decisions sit beside the chain. An id deleted twice keeps its first pin. sc, when it covers
// records, lists the decisions (nil: every record is read).
func loadMicrocompact(records []transcript.Record, sc *transcript.Scan, from int) *mcLedger {
	l := &mcLedger{cleared: map[string]string{}, by: map[string]string{}, deleted: map[string]string{}, pinEdits: map[string][]string{}}
	sc.EachFrom(records, transcript.ScanMicrocompact, from, func(_ int, r *transcript.Record) {
		if cc := r.MicrocompactBoundary(); cc != nil {
			// Claude Code's clearing: its results are cleared from here on, as after an idle gap.
			for _, id := range cc.CompactedToolIDs {
				if _, ok := l.cleared[id]; !ok && id != "" {
					l.cleared[id] = r.UUID
				}
			}
			l.expire()
			return
		}
		if r.Type != transcript.TypeSystem || r.Subtype != transcript.SubtypeMicrocompact || r.Microcompact == nil {
			return
		}
		d := r.Microcompact
		switch d.Trigger {
		case mcTriggerCached:
			if d.PinnedUUID == "" {
				return
			}
			for _, id := range d.ClearedToolUseIDs {
				l.addDeleted(id, d.PinnedUUID, r.UUID)
			}
		default: // "time" and any clearing trigger a later version may write
			for _, id := range d.ClearedToolUseIDs {
				if _, ok := l.cleared[id]; !ok {
					l.cleared[id] = r.UUID
				}
			}
			l.expire()
		}
	})
	return l
}

// expire forgets the cache deletions: a clearing after an idle gap means the provider's cache
// expired, so the deletions before it edit nothing any more and their cache_edits are no
// longer sent. A clearing read from the records and one decided this turn expire them alike,
// so that the turn that decides it sends what the next turns send.
func (l *mcLedger) expire() {
	if len(l.deleted) > 0 {
		l.by, l.deleted, l.pins, l.pinEdits = map[string]string{}, map[string]string{}, nil, map[string][]string{}
	}
}

func (l *mcLedger) addDeleted(id, pin, record string) {
	if _, ok := l.deleted[id]; ok || id == "" {
		return
	}
	l.deleted[id] = pin
	l.by[id] = record
	if _, ok := l.pinEdits[pin]; !ok {
		l.pins = append(l.pins, pin)
	}
	l.pinEdits[pin] = append(l.pinEdits[pin], id)
}

// resultRef locates one tool_result block of the view.
type resultRef struct {
	item, block int
	id          string
}

// clearedResult is the cleared form of tr: same id and error flag, placeholder content.
// It depends on nothing else, so a re-applied clearing is byte-identical to the first.
func clearedResult(tr *transcript.ToolResult) *transcript.ToolResult {
	return &transcript.ToolResult{
		ToolUseID:     tr.ToolUseID,
		Content:       []transcript.Block{&transcript.Text{Text: ClearedToolResultText}},
		StringContent: true,
		IsError:       tr.IsError,
	}
}

// withCacheReference returns a copy of tr whose cache_reference is its tool_use id.
func withCacheReference(tr *transcript.ToolResult) *transcript.ToolResult {
	c := *tr
	c.CacheReference = tr.ToolUseID
	return &c
}

// microcompactStage is the microcompact stage (see [MicrocompactConfig]): it clears old tool
// results, by time or through the provider's cache edits.
type microcompactStage struct {
	cfg     MicrocompactConfig
	cache   CacheConfig
	counter *Counter
	window  int
}

func (*microcompactStage) name() string { return "microcompact" }

// run re-applies recorded clearings and cache deletions, then decides new ones:
// time-based clearing after an idle gap, or cache editing above a token trigger (Cached).
func (st *microcompactStage) run(t *turn) error {
	c := st.cfg
	rep := t.report.stage("microcompact")
	l := loadMicrocompact(t.in.Records, t.chain.Scan(), t.chain.Start())
	// A turn with nothing recorded to re-apply and nothing to decide (no cache editing, no
	// idle gap) leaves every result as it is.
	decide := !c.Disable
	if decide && !c.Cached {
		gap, last := idleGap(t)
		decide = last >= 0 && gap > c.gap(ttlAt(t, st.cache)) // else timeClear clears nothing
	}
	if !decide && len(l.cleared) == 0 && len(l.deleted) == 0 {
		return nil // no result marked: no cache_edits either
	}

	var refs []resultRef
	for i := range t.items {
		for j, b := range t.items[i].blocks {
			if tr, ok := b.(*transcript.ToolResult); ok {
				refs = append(refs, resultRef{item: i, block: j, id: tr.ToolUseID})
			}
		}
	}
	cur := func(r resultRef) *transcript.ToolResult {
		return t.items[r.item].blocks[r.block].(*transcript.ToolResult)
	}

	// Re-apply recorded clearings, whatever the clock says.
	for _, r := range refs {
		by, ok := l.cleared[r.id]
		if !ok {
			continue
		}
		old := cur(r)
		nb := clearedResult(old)
		t.items[r.item].setBlock(r.block, nb)
		rep.add(Action{Kind: ActionReapplied, UUID: t.items[r.item].uuid, ToolUseID: r.id, Record: by,
			Detail: "tool result cleared (recorded)", Tokens: st.counter.Block(nb) - st.counter.Block(old)})
	}
	// The new decision: cache editing when the prefix is warm, else a clearing after the idle
	// gap, which expires the recorded deletions before they are re-applied.
	var cands []resultRef
	cached := false
	if decide {
		// Compactable results in view order; the newest KeepRecent (by tool_use id) stay.
		tools := c.tools()
		var ids []string
		seen := map[string]bool{}
		for _, r := range refs {
			if !seen[r.id] && slices.Contains(tools, t.toolName(r.id)) {
				seen[r.id] = true
				ids = append(ids, r.id)
			}
		}
		if k := c.keepRecent(); len(ids) > k {
			keep := map[string]bool{}
			for _, id := range ids[len(ids)-k:] {
				keep[id] = true
			}
			for _, r := range refs {
				if seen[r.id] && !keep[r.id] {
					cands = append(cands, r)
				}
			}
			gap, last := idleGap(t)
			cached = c.Cached && (last < 0 || gap <= c.gap(ttlAt(t, st.cache)))
			if !cached && st.timeClear(t, l, cands) {
				l.expire()
			}
		}
	}

	// Re-apply recorded cache deletions: mark the results; cache_edits are emitted below.
	marked := map[string]int{} // id → tokens the provider no longer holds
	for _, r := range refs {
		if _, ok := l.deleted[r.id]; !ok {
			continue
		}
		old := cur(r)
		t.items[r.item].setBlock(r.block, withCacheReference(old))
		if _, dup := marked[r.id]; dup {
			continue // a duplicated id: marked everywhere, counted once
		}
		n := st.counter.Block(old)
		marked[r.id] = n
		rep.add(Action{Kind: ActionReapplied, UUID: t.items[r.item].uuid, ToolUseID: r.id, Record: l.by[r.id],
			Detail: "tool result deleted from the provider cache (recorded)", Tokens: -n})
	}
	if cached {
		st.cacheDelete(t, l, cands, marked)
	}

	st.emitCacheEdits(t, l, marked)
	return nil
}

// idleGap returns the time since the last assistant message with a timestamp, and the index
// of the view's last assistant item (results after it are the model's latest input: it has
// not seen them yet); -1 and no gap without a dated assistant message.
func idleGap(t *turn) (time.Duration, int) {
	lastAsst := -1
	for i := len(t.items) - 1; i >= 0; i-- {
		if it := &t.items[i]; it.role == transcript.RoleAssistant {
			if lastAsst < 0 {
				lastAsst = i
			}
			if at := it.at(); !at.IsZero() {
				return t.now.Sub(at), lastAsst
			}
		}
	}
	return 0, -1
}

// timeClear clears the candidates when the idle gap since the last assistant message exceeds
// the configured gap, and records the clearing; it reports whether it recorded one.
func (st *microcompactStage) timeClear(t *turn, l *mcLedger, cands []resultRef) bool {
	c := st.cfg
	gap, lastAsst := idleGap(t)
	limit := c.gap(ttlAt(t, st.cache))
	if lastAsst < 0 || gap <= limit {
		return false
	}
	rep := t.report.stage("microcompact")
	first := len(rep.Actions)
	// An id is cleared everywhere it occurs, as a recorded clearing is re-applied, and only
	// when that shrinks the view.
	var ids []string
	byID := map[string][]resultRef{}
	unseen := map[string]bool{} // ids with an occurrence the model has not seen yet
	for _, r := range cands {
		if _, done := l.cleared[r.id]; done {
			continue
		}
		if _, seen := byID[r.id]; !seen {
			ids = append(ids, r.id)
		}
		byID[r.id] = append(byID[r.id], r)
		if r.item > lastAsst {
			unseen[r.id] = true
		}
	}
	saved := 0
	kept := ids[:0]
	for _, id := range ids {
		if unseen[id] {
			continue
		}
		freed := 0
		for _, r := range byID[id] {
			old := t.items[r.item].blocks[r.block].(*transcript.ToolResult)
			freed += st.counter.Block(old) - st.counter.Block(clearedResult(old))
		}
		if freed <= 0 {
			continue // already as small as the placeholder: clearing would not shrink it
		}
		kept = append(kept, id)
		saved += freed
	}
	if len(kept) == 0 {
		return false
	}
	if !temperatureOf(t, st.cache).cold {
		// A warm prefix: the clearing rewrites what follows its first result.
		from := len(t.items)
		for _, id := range kept {
			for _, r := range byID[id] {
				from = min(from, r.item)
			}
		}
		after := 0
		for i := from; i < len(t.items); i++ {
			after += st.counter.itemTokens(&t.items[i])
		}
		cost := cacheCost(t, st.cache, "microcompact", st.viewTokens(t), saved, after-saved)
		t.report.CacheCosts = append(t.report.CacheCosts, cost)
		if !cost.Made {
			rep.add(Action{Kind: ActionSkipped, Detail: "clearing deferred: " + cost.Reason})
			return false
		}
	}
	for _, id := range kept {
		for _, r := range byID[id] {
			it := &t.items[r.item]
			old := it.blocks[r.block].(*transcript.ToolResult)
			nb := clearedResult(old)
			it.setBlock(r.block, nb)
			rep.add(Action{Kind: ActionCleared, UUID: it.uuid, ToolUseID: r.id, Tokens: st.counter.Block(nb) - st.counter.Block(old),
				Detail: fmt.Sprintf("idle %s > %s", gap.Round(time.Second), limit)})
		}
	}
	ids = kept
	if len(ids) == 0 {
		return false
	}
	rec := t.newDecision(transcript.SubtypeMicrocompact, mcTriggerTime+"\x00"+strings.Join(ids, "\x00"),
		fmt.Sprintf("Cleared %d old tool results after %s idle", len(ids), gap.Round(time.Second)))
	rec.Microcompact = &transcript.MicrocompactDecision{
		Trigger:           mcTriggerTime,
		ClearedToolUseIDs: ids,
		GapMinutes:        math.Round(gap.Minutes()*100) / 100,
		TokensSaved:       saved,
	}
	setRecord(rep.Actions[first:], rec.UUID)
	t.appended = append(t.appended, rec)
	return true
}

// setRecord names record as the decision the actions carry out.
func setRecord(actions []Action, record string) {
	for i := range actions {
		actions[i].Record = record
	}
}

// cacheDelete marks the candidates for deletion from the provider's cache when the live
// context exceeds the cached trigger, and records the deletion pinned to the last user record.
func (st *microcompactStage) cacheDelete(t *turn, l *mcLedger, cands []resultRef, marked map[string]int) {
	c := st.cfg
	if st.cache.Disable {
		return // no cached prefix to edit: the cache stage would drop the deletion
	}
	live := st.viewTokens(t)
	for _, n := range marked {
		live -= n
	}
	if live <= c.cachedTrigger(st.window) {
		return
	}
	// The cache marker goes on the last message (the penultimate with SkipCacheWrite); a
	// cache_reference is only valid strictly before it.
	limit := markerItemStart(t.items, t.in.SkipCacheWrite)
	pin := -1
	for i := len(t.items) - 1; i >= 0; i-- {
		if it := &t.items[i]; it.role == transcript.RoleUser && it.rec != nil {
			pin = i
			break
		}
	}
	if pin < 0 {
		return
	}
	rep := t.report.stage("microcompact")
	first := len(rep.Actions)
	pinUUID := t.items[pin].uuid
	var ids []string
	saved := 0
	for _, r := range cands {
		if _, done := l.cleared[r.id]; done || r.item >= limit || r.item > pin {
			continue
		}
		if _, ok := l.deleted[r.id]; ok && !slices.Contains(ids, r.id) {
			continue
		}
		it := &t.items[r.item]
		old := it.blocks[r.block].(*transcript.ToolResult)
		n := st.counter.Block(old)
		it.setBlock(r.block, withCacheReference(old))
		if slices.Contains(ids, r.id) {
			continue // a duplicated id: marked everywhere, deleted once
		}
		marked[r.id] = n
		ids = append(ids, r.id)
		saved += n
		rep.add(Action{Kind: ActionMarked, UUID: it.uuid, ToolUseID: r.id, Tokens: -n,
			Detail: "cache_reference; deleted by cache_edits pinned at " + pinUUID})
	}
	if len(ids) == 0 {
		return
	}
	rec := t.newDecision(transcript.SubtypeMicrocompact, mcTriggerCached+"\x00"+pinUUID+"\x00"+strings.Join(ids, "\x00"),
		fmt.Sprintf("Deleted %d old tool results from the prompt cache at %d tokens", len(ids), live))
	rec.Microcompact = &transcript.MicrocompactDecision{
		Trigger:           mcTriggerCached,
		ClearedToolUseIDs: ids,
		TokensSaved:       saved,
		PinnedUUID:        pinUUID,
	}
	for _, id := range ids {
		l.addDeleted(id, pinUUID, rec.UUID)
	}
	setRecord(rep.Actions[first:], rec.UUID)
	t.appended = append(t.appended, rec)
}

// emitCacheEdits appends one cache_edits block to each pinned user item, deleting the results
// marked in this view. A pin whose record left the view (snipped, or on another branch) moves
// to the first user item after it in file order, so the deletion is still sent after the
// results it names.
func (st *microcompactStage) emitCacheEdits(t *turn, l *mcLedger, marked map[string]int) {
	if len(l.pins) == 0 || len(marked) == 0 {
		return
	}
	byUUID := map[string]int{}
	for i := range t.items {
		if t.items[i].rec != nil && t.items[i].role == transcript.RoleUser {
			byUUID[t.items[i].uuid] = i
		}
	}
	var filePos map[string]int // built only when a pin left the view
	edits := map[int][]transcript.CacheEdit{}
	var targets []int
	for _, pin := range l.pins {
		var es []transcript.CacheEdit
		for _, id := range l.pinEdits[pin] {
			if _, ok := marked[id]; ok {
				es = append(es, transcript.CacheEdit{Type: "delete", CacheReference: id})
			}
		}
		if len(es) == 0 {
			continue
		}
		target, ok := byUUID[pin]
		if !ok {
			if filePos == nil {
				filePos = recordPositions(t.in.Records)
			}
			target = nextUserItem(t.items, filePos, pin)
			if target < 0 {
				continue
			}
		}
		if _, ok := edits[target]; !ok {
			targets = append(targets, target)
		}
		edits[target] = append(edits[target], es...)
	}
	slices.Sort(targets)
	rep := t.report.stage("microcompact")
	for _, i := range targets {
		it := &t.items[i]
		it.blocks = append(slices.Clip(it.blocks), &transcript.CacheEdits{Edits: edits[i]})
		it.owned = true
		rep.add(Action{Kind: ActionMarked, UUID: it.uuid,
			Detail: fmt.Sprintf("cache_edits: %d deletions", len(edits[i]))})
	}
}

// recordPositions maps each uuid to its first position in the file.
func recordPositions(records []transcript.Record) map[string]int {
	m := make(map[string]int, len(records))
	for i := range records {
		if u := records[i].UUID; u != "" {
			if _, ok := m[u]; !ok {
				m[u] = i
			}
		}
	}
	return m
}

// nextUserItem returns the first user item with a record that comes after the record pin in
// file order, or -1.
func nextUserItem(items []item, pos map[string]int, pin string) int {
	pp, ok := pos[pin]
	if !ok {
		return -1
	}
	for i := range items {
		if it := &items[i]; it.role == transcript.RoleUser && it.rec != nil {
			if q, ok := pos[it.uuid]; ok && q > pp {
				return i
			}
		}
	}
	return -1
}

// markerItemStart returns the index of the first item of the message that will carry the
// message-level cache marker: the last message, or the penultimate one with skipWrite.
// Items of one role in a row form one message (normalize merges them); items without blocks
// form none. It returns 0 when no message will carry the marker.
func markerItemStart(items []item, skipWrite bool) int {
	var starts []int
	var prev transcript.Role
	for i := range items {
		if len(items[i].blocks) == 0 {
			continue
		}
		if items[i].role != prev {
			starts = append(starts, i)
			prev = items[i].role
		}
	}
	k := len(starts) - 1
	if skipWrite {
		k--
	}
	if k < 0 {
		return 0
	}
	return starts[k]
}

// viewTokens counts the request as built so far: system prompt, tool definitions and the
// view's messages (with the per-message framing).
func (st *microcompactStage) viewTokens(t *turn) int {
	n := 0
	for _, b := range t.system {
		n += st.counter.Block(b)
	}
	for _, tool := range t.in.Tools {
		n += st.counter.Text(string(tool.Definition))
	}
	for i := range t.items {
		n += messageOverheadTokens + st.counter.Blocks(t.items[i].blocks)
	}
	return n
}

// cacheEditing returns the tokens of the tool results that req's cache_edits delete from the
// provider's cache (each reference once), and whether req carries any cache_edits.
func cacheEditing(req *provider.Request, c *Counter) (deleted int, editing bool) {
	refs := cacheDeletedRefs(req)
	if refs == nil {
		return 0, false
	}
	for _, m := range req.Messages {
		for _, b := range m.Content {
			if tr, ok := b.(*transcript.ToolResult); ok && refs[tr.CacheReference] {
				delete(refs, tr.CacheReference)
				deleted += c.Block(tr)
			}
		}
	}
	return deleted, true
}

// cacheDeletedRefs returns the cache references req's cache_edits delete, or nil when req
// carries no cache_edits.
func cacheDeletedRefs(req *provider.Request) map[string]bool {
	var refs map[string]bool
	for _, m := range req.Messages {
		for _, b := range m.Content {
			if ce, ok := b.(*transcript.CacheEdits); ok {
				if refs == nil {
					refs = map[string]bool{}
				}
				for _, e := range ce.Edits {
					refs[e.CacheReference] = true
				}
			}
		}
	}
	return refs
}
