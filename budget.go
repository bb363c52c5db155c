package agentctx

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/agentctx/agentctx/transcript"

	"github.com/agentctx/agentctx/internal/fsname"
	"github.com/agentctx/agentctx/internal/prose"
)

// Budget defaults at a window of 200,000 tokens and more, as Claude Code sets its limits on
// tool results and stores the large ones. Below 200,000 tokens each is scaled to the window
// (see the package doc's table of window-scaled defaults).
const (
	// defaultMaxResultChars is the default cap of one tool result, in characters.
	defaultMaxResultChars = 50_000
	// defaultMaxMessageChars is the default cap of the tool results of one API user message
	// together, in characters.
	defaultMaxMessageChars = 200_000
	// defaultPreviewBytes is the default size of the preview that replaces a result, in bytes.
	defaultPreviewBytes = 2_000
	// defaultExemptMaxChars is the default cap of one result of a tool exempt from the
	// budget ([NeverReplace]), in characters: Claude Code's Read returns at most 25,000
	// tokens.
	defaultExemptMaxChars = 100_000
)

// NeverReplace as a cap in [BudgetConfig.ToolMaxChars] exempts a tool's results from the
// per-result caps: they are replaced only past [BudgetConfig.ExemptMaxChars], or when their
// message is over [BudgetConfig.MaxMessageChars] once every other new result is replaced.
const NeverReplace = -1

// DefaultToolMaxChars returns the default per-tool caps of [BudgetConfig.ToolMaxChars] at a
// window of 200,000 tokens and more, as a new map (below, the pipeline scales Bash's and
// Grep's as it scales MaxResultChars). They follow the maximum result sizes that Claude
// Code's built-in tools declare, as public analyses of its source report them (Anthropic does
// not document them):
//
//   - Read: [NeverReplace]. Claude Code exempts it: the tool bounds its own output, and
//     replacing a file read by a pointer to a stored file, which the model can only read back
//     with Read, is circular. The library cannot assume the runtime's Read is bounded, so
//     an exempt result is still replaced past ExemptMaxChars.
//   - Bash: 30,000 characters.
//   - Grep: 20,000 characters.
//
// Claude Code's other built-in tools (Edit, Write, Glob, WebFetch and more) declare 100,000
// characters, which Claude Code clamps to its 50,000 default (as ToolMaxChars entries are
// clamped to MaxResultChars), so they have no entry here.
func DefaultToolMaxChars() map[string]int {
	return map[string]int{"Read": NeverReplace, "Bash": 30_000, "Grep": 20_000}
}

// DefaultTailTools returns the default [BudgetConfig.TailTools]: the shell tools of Claude
// Code (Bash, PowerShell) and Codex (shell, local_shell, exec_command).
func DefaultTailTools() []string {
	return []string{"Bash", "PowerShell", "exec_command", "local_shell", "shell"}
}

// keepsTail reports whether the previews of tool's results keep their tail.
func (c BudgetConfig) keepsTail(tool string) bool {
	if c.TailTools == nil {
		switch tool {
		case "Bash", "PowerShell", "exec_command", "local_shell", "shell":
			return true
		}
		return false
	}
	return slices.Contains(c.TailTools, tool)
}

// defaultToolMaxChars is the entry of tool in DefaultToolMaxChars, without building the map.
func defaultToolMaxChars(tool string) (int, bool) {
	switch tool {
	case "Read":
		return NeverReplace, true
	case "Bash":
		return 30_000, true
	case "Grep":
		return 20_000, true
	}
	return 0, false
}

// BudgetConfig configures the tool-result budget stage. The zero value is the default.
//
// The stage measures a tool result in characters: the runes of its text blocks plus the JSON
// length, in bytes, of its other blocks except images and documents. Media is costed in
// tokens, not characters, and a preview cannot stand in for it: results holding an image or a
// document are never replaced.
//
// Only new results are candidates: those of the view's last API user message (the consecutive
// user records after the last assistant response, which normalize merges into one message, so
// the results of parallel tool calls are summed) while no assistant response follows it, and
// that no budget record decided on. A result that an assistant response follows has been sent
// to the model as it is unless a record replaced it, so it is kept by definition. A new
// result over its cap (its tool's entry in ToolMaxChars, clamped to MaxResultChars) is
// replaced; then, while the message's tool results exceed MaxMessageChars, the largest
// remaining new result is replaced (ties: the smaller tool_use_id first). Results of a tool
// capped at [NeverReplace] are exempt from both: they are replaced only when one is over
// ExemptMaxChars, or, largest first, when the message is still over MaxMessageChars once
// every other new result is replaced — the newest results never make a request unsendable,
// whatever their tool. The Report lists each exempt result kept, with its size. A result is
// only replaced when its preview is shorter than it. Media is never replaced.
//
// The caps scale with the context window: Claude Code's values at 200,000 tokens and above,
// proportionally less below (see the package doc's table of window-scaled defaults).
//
// A replaced result keeps its tool_use_id and is_error; its content becomes one text:
//
//	<persisted-output>
//	Output too large (N characters). Full output saved to: REF
//
//	Preview (first 2000 bytes):
//	…the first ≈2000 bytes, cut at the last newline of the window or a UTF-8 boundary…
//	...
//	</persisted-output>
//
// The results a turn replaces are frozen in one [transcript.SubtypeToolResultBudget] record; every later
// turn shows each as the preview stored in the record, byte for byte, so the prompt cache
// prefix never changes. Kept results need no record: until a response follows them they are
// decided again by each Prepare, with the same outcome under the same config, and afterwards
// they are kept by definition. (Records of earlier versions also list kept results; those
// stay kept.) Replacements are therefore decided once, when the results are new: a transcript
// written without this stage, such as an imported Claude Code session, keeps the results its
// responses have seen.
//
// The stage never tokenizes a result it replaces: the Tokens of its actions are the preview's
// counted tokens minus an estimate of the result ([EstimateTokens] of its bytes, as
// [EstimateCounter] would count it), and [Report.AnchoredTokens] counts replaced results by
// the same estimate. Every figure of content that is sent is counted exactly.
type BudgetConfig struct {
	// Disable turns the stage off: no new decisions. Frozen replacements are still re-applied,
	// since the cache prefix must not change.
	Disable bool
	// MaxResultChars caps one tool result's content, in characters. Zero: 50,000 at a
	// window of 200,000 tokens and more, window/4 below, at least 2,000.
	MaxResultChars int
	// ToolMaxChars caps the results of the named tools (the tool_use's name) lower, in
	// characters: a tool's cap is the smaller of its entry and MaxResultChars, as Claude Code
	// clamps the caps its tools declare to its default. [NeverReplace] (-1) exempts the tool;
	// 0, like no entry, leaves MaxResultChars. Nil: [DefaultToolMaxChars], its caps scaled
	// like MaxResultChars (at least 2,000); an empty map gives no tool a cap of its own. The
	// Pipeline keeps the map: do not modify it after [New].
	ToolMaxChars map[string]int
	// MaxMessageChars caps the tool results of one API user message together, in characters.
	// Zero: 200,000 at a window of 200,000 tokens and more, the window in characters below, at
	// least 8,000.
	MaxMessageChars int
	// ExemptMaxChars caps one result of a tool exempt from the budget ([NeverReplace]), in
	// characters; NeverReplace (-1) lifts the cap. Zero: 100,000 at a window of 200,000
	// tokens and more, window/2 below, at least 4,000.
	ExemptMaxChars int
	// PreviewBytes is the size, in bytes, of the head of the content shown instead of a
	// replaced result. Zero: 2,000 at a window of 200,000 tokens and more, window/100 below,
	// at least 500. The preview of a shell tool's result (see TailTools) shows the first half
	// of it and the last half, where a command's exit status and errors are.
	PreviewBytes int
	// TailTools names the tools (the tool_use's name) whose previews keep the tail of the
	// content as well as its head: shell tools, whose last lines carry the exit status and the
	// error. Nil: [DefaultTailTools]; empty: none. The Pipeline keeps the slice: do not
	// modify it after [New].
	TailTools []string
	// Store keeps replaced results in full; the reference it returns is shown to the model.
	// Nil: results over budget are still replaced (context protection first) and the full
	// content stays only in the transcript: the reference is "transcript:<record uuid>". The
	// Store is called from Prepare, so it must be safe for concurrent use when one Pipeline
	// serves several conversations at once, and idempotent: a turn prepared twice puts the
	// same content under the same id twice. A Store error fails the turn. A runtime whose
	// model reads files sets a [FileStore] with an absolute Root its file tool may read, so
	// the preview names a path the model can open; one that keeps its messages itself (no
	// transcript the model could read) sets a FileStore or a ResultStore of its own whose refs
	// its tools open (see docs/host-history.md).
	Store ResultStore
}

func (c BudgetConfig) validate() error {
	var errs []string
	for _, f := range []struct {
		name string
		v    int
	}{{"MaxResultChars", c.MaxResultChars}, {"MaxMessageChars", c.MaxMessageChars}, {"PreviewBytes", c.PreviewBytes}} {
		if f.v < 0 {
			errs = append(errs, fmt.Sprintf("agentctx: Budget.%s %d is negative", f.name, f.v))
		}
	}
	if c.ExemptMaxChars < NeverReplace {
		errs = append(errs, fmt.Sprintf("agentctx: Budget.ExemptMaxChars %d is below -1 (NeverReplace)", c.ExemptMaxChars))
	}
	for _, tool := range slices.Sorted(maps.Keys(c.ToolMaxChars)) {
		if v := c.ToolMaxChars[tool]; v < NeverReplace {
			errs = append(errs, fmt.Sprintf("agentctx: Budget.ToolMaxChars[%q] %d is below -1 (NeverReplace)", tool, v))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

// maxResult, maxMessage, exemptMax (NeverReplace: no cap) and preview are the caps for
// window: the configured figure, or the scaled default (see BudgetConfig).
func (c BudgetConfig) maxResult(window int) int {
	return cmp.Or(c.MaxResultChars, scaled(defaultMaxResultChars, 2_000, window))
}

func (c BudgetConfig) maxMessage(window int) int {
	return cmp.Or(c.MaxMessageChars, scaled(defaultMaxMessageChars, 8_000, window))
}

func (c BudgetConfig) exemptMax(window int) int {
	return cmp.Or(c.ExemptMaxChars, scaled(defaultExemptMaxChars, 4_000, window))
}

func (c BudgetConfig) preview(window int) int {
	return cmp.Or(c.PreviewBytes, scaled(defaultPreviewBytes, 500, window))
}

// toolMax returns the cap of one result of tool for window: NeverReplace, or its ToolMaxChars
// entry clamped to MaxResultChars. A default entry scales with the window.
func (c BudgetConfig) toolMax(tool string, window int) int {
	v, ok := c.ToolMaxChars[tool]
	if c.ToolMaxChars == nil {
		if v, ok = defaultToolMaxChars(tool); ok && v > 0 {
			v = scaled(v, 2_000, window)
		}
	}
	switch {
	case !ok || v == 0:
		return c.maxResult(window)
	case v == NeverReplace:
		return NeverReplace
	}
	return min(v, c.maxResult(window))
}

// budgetSlot is one tool_result block of the view.
type budgetSlot struct {
	item, block int
	tr          *transcript.ToolResult
}

// budgetEntry is the stage's view of one tool_use_id this turn.
type budgetEntry struct {
	id     string
	slots  []budgetSlot // in one, unless the id has more than one result
	one    [1]budgetSlot
	frozen bool                    // decided by an earlier turn's record
	record string                  // uuid of the record holding the verdict (a new one once written)
	res    transcript.BudgetResult // the verdict (frozen or new)
	size   int                     // characters of the first occurrence's content; -1: not measured yet
}

// measure returns the size of the entry's content, measuring it on first use: most results
// are frozen or already sent, and are never measured.
func (e *budgetEntry) measure() int {
	if e.size < 0 {
		e.size = resultChars(e.slots[0].tr)
	}
	return e.size
}

// chars is what the entry weighs in its message now.
func (e *budgetEntry) chars() int {
	if e.res.Replaced {
		return utf8.RuneCountInString(e.res.Preview)
	}
	return e.measure()
}

// budgetStage is the tool-result budget (see [BudgetConfig]): it caps each new tool result and
// the last user message's results together, storing what it replaces.
type budgetStage struct {
	cfg     BudgetConfig
	counter *Counter
	window  int
}

func (*budgetStage) name() string { return "budget" }

// run runs the tool-result budget stage (see [BudgetConfig]); the results it replaces are
// never tokenized, here or by the pressure figure, which counts the view. Reported tokens are
// measured against the transcript's content: a re-applied replacement reports the tokens its
// preview saves, like a new one.
func (st *budgetStage) run(t *turn) error {
	cfg := st.cfg
	frozen := frozenBudget(t.in.Records, t.chain.Scan(), t.chain.Start())

	// Collect the tool results that matter, per tool_use_id: those of the last API user message
	// (only it holds new results, and only while no assistant response follows it), and those
	// a frozen verdict replaces. Every other result of the view is kept as it is, and is not
	// looked at beyond its id.
	tail := lastUserStart(t.items)
	s := getBudgetScratch()
	defer putBudgetScratch(s)
	n := 0
	for i := tail; i < len(t.items); i++ {
		if it := &t.items[i]; it.role == transcript.RoleUser {
			n += countResults(it.blocks)
		}
	}
	for _, r := range frozen {
		if r.res.Replaced {
			n++
		}
	}
	s.entries = slices.Grow(s.entries[:0], n) // room for every entry: they never move
	watch := s.byID
	add := func(id string) {
		if watch[id] != nil {
			return
		}
		e := s.entry(id)
		if r, ok := frozen[id]; ok {
			e.frozen, e.res, e.record = true, r.res, r.record
		} else {
			e.res = transcript.BudgetResult{ToolUseID: id}
		}
	}
	for i := tail; i < len(t.items); i++ {
		if it := &t.items[i]; it.role == transcript.RoleUser {
			for _, b := range it.blocks {
				if tr, ok := b.(*transcript.ToolResult); ok {
					add(tr.ToolUseID)
				}
			}
		}
	}
	for id, r := range frozen {
		if r.res.Replaced {
			add(id)
		}
	}
	order := s.order[:0] // first occurrence order
	last := s.last[:0]   // unique entries first met in the unanswered last user message
	defer func() { s.order, s.last = order, last }()
	if len(watch) > 0 {
		for i := range t.items {
			it := &t.items[i]
			if it.role != transcript.RoleUser {
				continue
			}
			for j, b := range it.blocks {
				tr, ok := b.(*transcript.ToolResult)
				if !ok {
					continue
				}
				e := watch[tr.ToolUseID]
				if e == nil {
					continue
				}
				if len(e.slots) == 0 {
					order = append(order, e)
					if i >= tail {
						last = append(last, e)
					}
				}
				e.slots = append(e.slots, budgetSlot{item: i, block: j, tr: tr})
			}
		}
	}

	// Decide on the new results, and freeze the replaced ones in one decision record.
	var fresh []*budgetEntry
	if !cfg.Disable && len(last) > 0 {
		if err := st.budgetMessage(t, last); err != nil {
			return err
		}
		for _, e := range last {
			if !e.frozen && e.res.Replaced {
				fresh = append(fresh, e)
			}
		}
	}
	var rec *transcript.Record
	if len(fresh) > 0 {
		d := &transcript.BudgetDecision{Results: make([]transcript.BudgetResult, 0, len(fresh))}
		for _, e := range fresh {
			d.Results = append(d.Results, e.res)
		}
		r, err := t.budgetRecord(d, fmt.Sprintf("Tool-result budget: %d results replaced by a preview", len(fresh)))
		if err != nil {
			return err
		}
		rec = &r
		for _, e := range fresh {
			e.record = r.UUID
		}
	}

	// Apply: frozen replacements and new ones. Nothing is applied before every Put succeeded.
	sr := t.report.stage("budget")
	var est *Counter // counts what is not sent by estimate; made on first use
	for _, e := range order {
		if !e.res.Replaced {
			continue
		}
		kind, detail := ActionReapplied, "frozen preview"
		if !e.frozen {
			kind = ActionReplaced
			detail = fmt.Sprintf("%d characters stored at %s", e.res.OriginalChars, e.res.Ref)
		}
		if est == nil {
			est = NewCounter(EstimateCounter{})
		}
		for _, s := range e.slots {
			nb := replacedResult(s.tr, e.res.Preview)
			freed := est.Block(s.tr) - st.counter.Block(nb)
			t.items[s.item].setBlock(s.block, nb)
			sr.add(Action{Kind: kind, UUID: t.items[s.item].uuid, ToolUseID: e.id, Record: e.record, Detail: detail, Tokens: -freed})
		}
	}
	if rec != nil {
		t.appended = append(t.appended, *rec)
	}
	return nil
}

// budgetRecord returns the decision record holding d, with content as its text; its uuid
// derives from the whole decision.
func (t *turn) budgetRecord(d *transcript.BudgetDecision, content string) (transcript.Record, error) {
	key, err := json.Marshal(d)
	if err != nil {
		return transcript.Record{}, err
	}
	r := t.newDecision(transcript.SubtypeToolResultBudget, string(key), content)
	r.Budget = d
	return r, nil
}

// budgetMessage decides on the new results of the last API user message g: first each one's
// cap, then the message's cap, largest first. Replaced results are stored.
func (st *budgetStage) budgetMessage(t *turn, g []*budgetEntry) error {
	cfg := st.cfg
	var cands []*budgetEntry
	for _, e := range g {
		if !e.frozen {
			e.measure()
			cands = append(cands, e)
		}
	}
	if len(cands) == 0 {
		return nil
	}
	total := 0
	for _, e := range g {
		total += e.chars()
	}
	slices.SortStableFunc(cands, func(a, b *budgetEntry) int {
		return cmp.Or(cmp.Compare(b.size, a.size), cmp.Compare(a.id, b.id))
	})
	w := st.window
	maxMsg := cfg.maxMessage(w)
	replace := func(e *budgetEntry) error {
		ok, err := st.replaceResult(t, e)
		if ok {
			total += e.chars() - e.size
		}
		return err
	}
	var exempt []*budgetEntry // results of exempt tools under their own cap, largest first
	for _, e := range cands {
		limit := cfg.toolMax(t.toolName(e.id), w)
		if limit == NeverReplace {
			if em := cfg.exemptMax(w); em == NeverReplace || e.size <= em {
				exempt = append(exempt, e)
				continue
			}
			if err := replace(e); err != nil {
				return err
			}
			if e.res.Replaced {
				t.report.degrade(DegradedExempt, fmt.Sprintf("tool_result %s of %s, exempt from the budget, holds %d characters, over the %d an exempt result may hold at this window: replaced by its preview",
					e.id, t.toolName(e.id), e.size, cfg.exemptMax(w)), "")
			}
			continue
		} else if e.size <= limit && total <= maxMsg {
			continue
		}
		if err := replace(e); err != nil {
			return err
		}
	}
	// The message is still over its cap with only exempt results left as they are: they go
	// too, largest first, so that the newest results never make the request unsendable.
	for _, e := range exempt {
		if total > maxMsg {
			if err := replace(e); err != nil {
				return err
			}
			if e.res.Replaced {
				t.report.degrade(DegradedExempt, fmt.Sprintf("tool_result %s of %s, exempt from the budget, replaced by its preview: the message's results were still over its %d characters",
					e.id, t.toolName(e.id), maxMsg), "")
			}
		}
	}
	sr := t.report.stage("budget")
	for _, e := range exempt {
		if !e.res.Replaced {
			sr.add(Action{Kind: ActionExempt, ToolUseID: e.id, UUID: t.items[e.slots[0].item].uuid,
				Detail: fmt.Sprintf("tool %s is exempt from the per-result cap: %d characters kept (exempt up to %s; the message's results hold %d of %d)",
					t.toolName(e.id), e.size, capText(cfg.exemptMax(w)), total, maxMsg)})
		}
	}
	return nil
}

// capText writes a cap in characters, or "no cap" for NeverReplace.
func capText(n int) string {
	if n == NeverReplace {
		return "no cap"
	}
	return fmt.Sprintf("%d characters", n)
}

// replaceResult stores e's content and sets its verdict to replaced, unless the preview would
// not be shorter than the content.
func (st *budgetStage) replaceResult(t *turn, e *budgetEntry) (bool, error) {
	cfg := st.cfg
	s := e.slots[0]
	if slices.ContainsFunc(s.tr.Content, isMedia) {
		return false, nil // a text preview cannot stand in for an image or a document
	}
	full := prose.ResultText(s.tr)
	if head, _ := previewHead(full, cfg.preview(st.window)); utf8.RuneCountInString(head) >= e.size {
		return false, nil // the preview alone would be as long as the result
	}
	ref := "transcript:" + fsname.Safe(t.items[s.item].uuid)
	if cfg.Store != nil {
		var err error
		if ref, err = cfg.Store.Put(t.ctx, e.id, []byte(full)); err != nil {
			return false, fmt.Errorf("store tool result %q: %w", e.id, err)
		}
	}
	pv := persistedPreview(full, e.size, ref, cfg.preview(st.window), cfg.keepsTail(t.toolName(e.id)))
	if utf8.RuneCountInString(pv) >= e.size {
		return false, nil
	}
	e.res = transcript.BudgetResult{ToolUseID: e.id, Replaced: true, OriginalChars: e.size, Ref: ref, Preview: pv}
	return true, nil
}

// budgetScratch is the working memory of one run of the budget stage, reused across turns
// (see budgetScratchPool): none of it outlives the run.
type budgetScratch struct {
	entries     []budgetEntry // room for every entry of the run, so that entries never move
	byID        map[string]*budgetEntry
	order, last []*budgetEntry
}

// budgetScratchPool holds budgetScratch values between runs; a Pipeline serves many
// conversations at once, so each run takes its own.
var budgetScratchPool = sync.Pool{New: func() any { return &budgetScratch{byID: map[string]*budgetEntry{}} }}

// getBudgetScratch returns scratch from the pool.
func getBudgetScratch() *budgetScratch { return budgetScratchPool.Get().(*budgetScratch) }

// countResults returns the number of tool_result blocks in bs.
func countResults(bs []transcript.Block) int {
	n := 0
	for _, b := range bs {
		if _, ok := b.(*transcript.ToolResult); ok {
			n++
		}
	}
	return n
}

// lastUserStart returns the index of the first item of the view's last API user message: the
// item after the last assistant response. A record of the same response as the assistant
// record before it (results written while the response streamed sit between them) does not
// end the user message: normalize merges the response, and its results follow it as one
// message. Synthetic assistant records never reached the provider (normalize drops them) and
// answer nothing.
func lastUserStart(items []item) int {
	start, lastMsgID := 0, ""
	for i := range items {
		it := &items[i]
		if it.role == transcript.RoleUser {
			continue
		}
		if it.rec != nil && it.rec.Message.Model == transcript.SyntheticModel {
			continue
		}
		if sameResp := it.msgID != "" && it.msgID == lastMsgID; !sameResp {
			start = i + 1 // answered: the results before it have been sent
		}
		lastMsgID = it.msgID
	}
	return start
}

// entry adds the entry of tool_use id and returns it. Room was made for it: the entries before
// it do not move.
func (s *budgetScratch) entry(id string) *budgetEntry {
	s.entries = append(s.entries, budgetEntry{id: id, size: -1})
	e := &s.entries[len(s.entries)-1]
	e.slots = e.one[:0]
	s.byID[id] = e
	return e
}

// putBudgetScratch empties s, so that it holds nothing of the turn, and returns it to the pool.
func putBudgetScratch(s *budgetScratch) {
	clear(s.entries)
	s.entries = s.entries[:0]
	clear(s.byID)
	clear(s.order)
	clear(s.last)
	s.order, s.last = s.order[:0], s.last[:0]
	budgetScratchPool.Put(s)
}

// frozenResult is a recorded budget verdict and the uuid of the record holding it.
type frozenResult struct {
	res    transcript.BudgetResult
	record string
}

// frozenBudget reads the budget decisions of the records from position from on (a chain's
// start: a decision comes after the result it decides on), and Claude Code's content
// replacements (see [transcript.Record.ContentReplacements]) as decisions to replace; the
// first decision on a tool_use_id wins. A replacement without a preview is read as kept. sc,
// when it covers records, lists the decisions (nil: every record is read).
func frozenBudget(records []transcript.Record, sc *transcript.Scan, from int) map[string]frozenResult {
	m := map[string]frozenResult{}
	sc.EachFrom(records, transcript.ScanBudget, from, func(_ int, r *transcript.Record) {
		for _, c := range r.ContentReplacements() {
			if _, ok := m[c.ToolUseID]; !ok {
				m[c.ToolUseID] = frozenResult{res: transcript.BudgetResult{ToolUseID: c.ToolUseID, Replaced: true, Preview: c.Replacement}, record: r.UUID}
			}
		}
		if r.Type != transcript.TypeSystem || r.Subtype != transcript.SubtypeToolResultBudget || r.Budget == nil {
			return
		}
		for _, res := range r.Budget.Results {
			if res.Replaced && res.Preview == "" {
				res.Replaced = false // not written by this library; an empty result is invalid
			}
			if _, ok := m[res.ToolUseID]; !ok {
				m[res.ToolUseID] = frozenResult{res: res, record: r.UUID}
			}
		}
	})
	return m
}

// resultChars is the size of a tool result: runes of text blocks, JSON bytes of other blocks
// except images and documents, which count nothing here.
func resultChars(tr *transcript.ToolResult) int {
	n := 0
	for _, b := range tr.Content {
		if tx, ok := b.(*transcript.Text); ok {
			n += utf8.RuneCountInString(tx.Text)
			continue
		}
		if isMedia(b) {
			continue
		}
		enc, err := transcript.MarshalBlock(b)
		if err == nil {
			n += len(enc)
		}
	}
	return n
}

// previewHead returns the first ≈n bytes of s, cut at a UTF-8 boundary, or at the last
// newline of the window when it lies in the window's second half (as Claude Code does), and
// whether s was cut.
func previewHead(s string, n int) (string, bool) {
	if len(s) <= n {
		return s, false
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	if i := strings.LastIndexByte(s[:cut], '\n'); i > n/2 {
		cut = i
	}
	return s[:cut], true
}

// previewTail returns the last ≈n bytes of s, cut at a UTF-8 boundary, or after the first
// newline of the window when it lies in the window's first half.
func previewTail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := len(s) - n
	for cut < len(s) && !utf8.RuneStart(s[cut]) {
		cut++
	}
	if i := strings.IndexByte(s[cut:], '\n'); i >= 0 && i < n/2 {
		cut += i + 1
	}
	return s[cut:]
}

// persistedPreview builds the text that replaces a result, in Claude Code's format: the
// first n bytes of full or, with tail, its first n/2 bytes and its last n/2 bytes.
func persistedPreview(full string, chars int, ref string, n int, tail bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "<persisted-output>\nOutput too large (%d characters). Full output saved to: %s\n\n", chars, ref)
	if tail && len(full) > n {
		head, _ := previewHead(full, n/2)
		fmt.Fprintf(&b, "Preview (first %d and last %d bytes):\n%s\n...\n%s\n</persisted-output>", n/2, n-n/2, head, strings.TrimSuffix(previewTail(full, n-n/2), "\n"))
		return b.String()
	}
	head, more := previewHead(full, n)
	fmt.Fprintf(&b, "Preview (first %d bytes):\n", n)
	b.WriteString(head)
	if more {
		b.WriteString("\n...\n")
	} else {
		b.WriteString("\n")
	}
	b.WriteString("</persisted-output>")
	return b.String()
}

// replacedResult returns a copy of tr whose content is the preview; the tool_use_id, is_error
// and the other fields are kept.
func replacedResult(tr *transcript.ToolResult, preview string) *transcript.ToolResult {
	nb := *tr
	nb.Content = []transcript.Block{&transcript.Text{Text: preview}}
	nb.StringContent = true
	return &nb
}

// isMedia reports whether b is an image or a document block.
func isMedia(b transcript.Block) bool {
	k := transcript.KindOf(b)
	return k == transcript.KindImage || k == transcript.KindDocument
}
