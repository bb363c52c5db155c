package agentctx

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/agentctx/agentctx/summarize"

	"github.com/agentctx/agentctx/provider"

	"github.com/agentctx/agentctx/internal/prose"
	"github.com/agentctx/agentctx/internal/wire"

	"github.com/agentctx/agentctx/transcript"
)

// installed reports whether a view item was put there by a compaction or the context stage:
// the summary, the tail the compaction kept (records written before the boundary at
// boundaryPos), pinned content, rehydration records, base context. A kept tail never reaches
// back over them, and a summary request leaves the rehydration out (it is injected again).
func (it *item) installed(boundaryPos int) bool {
	if it.rec != nil {
		return it.rec.IsCompactSummary || it.rec.Rehydration != nil || it.pos >= 0 && it.pos < boundaryPos
	}
	return it.origin == "context" || it.origin == "pinned"
}

// tailStep is one rung of the compaction ladder (see [CompactRung]): the view is kept
// verbatim from items[cut:], rehydration gets the given share of its budgets, and the kept
// tail's older tool results are cleared (clear) or the latest input's replaced by previews
// (previews).
type tailStep struct {
	rung      CompactRung
	cut       int
	rehydrate float64
	clear     bool
	previews  bool
	resort    bool // the last resort: no tail, tried only when no tail could be relinked
	records   int  // records of the kept tail
	tokens    int  // its calibrated size
}

// tailPlan is the kept tail a compaction starts with, the smaller ones it falls back to, and
// the floors that say which rungs can make the request fit.
type tailPlan struct {
	lowest int // the first item a tail may hold (after what earlier compactions installed)
	latest int // the first item of the latest input: the items after the last response
	minCut int // the cut keeping only the latest user input and the response it answers
	cut    int // the configured tail's cut
	half   int // the cut of a tail with half the configured budgets
	// floor is the irreducible floor of the rungs that keep the latest input verbatim,
	// calibrated (see CompactConfig); floorPreviews that of [CompactRungPreviews], and
	// floorBare that of [CompactRungSummaryOnly] (bare is false when that rung may not run:
	// the latest input holds a prompt the user typed).
	floor, floorPreviews, floorBare int
	bare                            bool
	floorParts                      string
	// older is true when the configured tail holds tool results older than the latest input
	// ([CompactRungClearResults] has something to clear).
	older bool
}

// planTail chooses the kept tail of a compaction of t's view (see [TailConfig]) and computes
// the irreducible floor. The tail starts at or before limit: the items from limit on are not
// covered by the summary (len(t.items) when the summary covers the whole view).
func (co *compactor) planTail(t *turn, limit int) tailPlan {
	items := t.items
	ok := safeCuts(items)
	cal := calibration{ratio: t.report.Pressure.Ratio}
	var pl tailPlan
	for i := range items {
		if items[i].installed(t.boundaryPos) {
			pl.lowest = i + 1
		}
	}
	latest := pl.lowest
	for i := len(items) - 1; i >= pl.lowest; i-- {
		if items[i].role == transcript.RoleAssistant {
			latest = i + 1
			break
		}
	}
	pl.latest = latest
	pl.minCut = min(latest, max(limit, pl.lowest))
	for pl.minCut > pl.lowest && !ok[pl.minCut] {
		pl.minCut--
	}
	// suffix[i]: calibrated tokens of items[i:]; texts[i]: messages with text in items[i:].
	suffix := make([]int, len(items)+1)
	texts := make([]int, len(items)+1)
	for i := len(items) - 1; i >= 0; i-- {
		suffix[i] = suffix[i+1] + co.counter.itemTokens(&items[i])
		texts[i] = texts[i+1]
		if hasText(items[i].blocks) {
			texts[i]++
		}
	}
	tc := co.cfg.Tail
	// Small windows scale the budgets: a tail holds at most half the threshold. And it holds
	// at most half of what the summary covers, or the summary would replace next to nothing.
	th := t.levels.Threshold
	minTok, maxTok := min(tc.minTokens(co.window), th/4), min(tc.maxTokens(co.window), th/2, cal.scale(suffix[pl.lowest])/2)
	grow := func(minTok, minText, maxTok int) int {
		cut := pl.minCut
		if tc.Disable {
			return cut
		}
		for c := pl.minCut - 1; c >= pl.lowest; c-- {
			if !ok[c] {
				continue
			}
			if cal.scale(suffix[c]) > maxTok {
				break
			}
			cut = c
			if cal.scale(suffix[c]) >= minTok && texts[c] >= minText {
				break
			}
		}
		return cut
	}
	pl.cut = grow(minTok, tc.minText(), maxTok)
	pl.half = grow(minTok/2, (tc.minText()+1)/2, maxTok/2)

	// The irreducible floor.
	fixed := co.counter.Blocks(asBlocks(t.system))
	for _, tl := range t.req.Tools {
		fixed += co.counter.textBytes(tl.Definition)
	}
	ctx := 0
	for i := 0; i < pl.lowest; i++ {
		if it := &items[i]; it.origin == "context" || it.origin == "pinned" {
			ctx += co.counter.itemTokens(it)
		}
	}
	latestIn := suffix[pl.minCut]
	sumCap := co.summaryMax()
	pl.floor = cal.scale(fixed+ctx+latestIn) + sumCap
	pl.floorPreviews = cal.scale(fixed+ctx+latestIn-co.previewSavings(t, max(pl.minCut, latest))) + sumCap
	pl.floorBare, pl.bare = cal.scale(fixed+ctx)+sumCap, !slices.ContainsFunc(items[max(pl.minCut, latest):], func(it item) bool { return typedPrompt(&it) })
	pl.floorParts = fmt.Sprintf("system and tools %d, base and pinned context %d, latest input %d, summary cap %d",
		cal.scale(fixed), cal.scale(ctx), cal.scale(latestIn), sumCap)
	for i := pl.cut; i < latest && !pl.older; i++ {
		pl.older = items[i].role == transcript.RoleUser && slices.ContainsFunc(items[i].blocks, clearable)
	}
	return pl
}

// hasText reports whether blocks hold a non-blank text block.
func hasText(bs []transcript.Block) bool {
	for _, b := range bs {
		if t, ok := b.(*transcript.Text); ok && !wire.IsBlank(t.Text) {
			return true
		}
	}
	return false
}

func asBlocks(ts []*transcript.Text) []transcript.Block {
	bs := make([]transcript.Block, len(ts))
	for i, t := range ts {
		bs[i] = t
	}
	return bs
}

// summaryView returns the items a summary request is built from: the view without the
// rehydration records a compaction injects again, with images and documents replaced by
// text markers.
func summaryView(items []item) []item {
	out := make([]item, 0, len(items))
	for _, it := range items {
		if it.rec != nil && it.rec.Rehydration != nil {
			continue
		}
		if slices.ContainsFunc(it.blocks, hasMedia) {
			bs := make([]transcript.Block, len(it.blocks))
			for j, b := range it.blocks {
				bs[j] = withoutMedia(b)
			}
			it.blocks, it.owned = bs, true
		}
		out = append(out, it)
	}
	return out
}

// hasMedia reports whether b is, or is a tool result holding, an image or a document.
func hasMedia(b transcript.Block) bool {
	if tr, ok := b.(*transcript.ToolResult); ok {
		return slices.ContainsFunc(tr.Content, isMedia)
	}
	return isMedia(b)
}

// withoutMedia returns b with images and documents replaced by text markers.
func withoutMedia(b transcript.Block) transcript.Block {
	switch b := b.(type) {
	case *transcript.Image:
		return &transcript.Text{Text: fmt.Sprintf(mediaMarker, mediaName("image", b.Source))}
	case *transcript.Document:
		return &transcript.Text{Text: fmt.Sprintf(mediaMarker, mediaName("document", b.Source))}
	case *transcript.ToolResult:
		if !slices.ContainsFunc(b.Content, isMedia) {
			return b
		}
		c := *b
		c.Content = make([]transcript.Block, len(b.Content))
		for i, cb := range b.Content {
			c.Content[i] = withoutMedia(cb)
		}
		c.StringContent = false
		return &c
	}
	return b
}

func mediaName(kind string, s transcript.MediaSource) string {
	switch {
	case s.MediaType != "" && s.Type == "base64":
		return fmt.Sprintf("%s (%s, %d KB)", kind, s.MediaType, len(s.Data)*3/4/1024)
	case s.MediaType != "":
		return fmt.Sprintf("%s (%s)", kind, s.MediaType)
	}
	return kind
}

// leadingKept returns the index of the first item of a summary view that may be left out to
// fit: the base context, an earlier summary, its kept tail and pinned content at its start
// always stay.
func leadingKept(view []item, boundaryPos int) int {
	i := 0
	for i < len(view) && view[i].installed(boundaryPos) {
		i++
	}
	return i
}

// summaryRequest builds the request a Summarizer gets for view with items[from:skip) left out
// (replaced by a marker), ending with the instruction text instr, and the matching view
// messages.
func (co *compactor) summaryRequest(t *turn, view []item, from, skip int, instr string) (provider.Request, []summarize.Message, error) {
	items := view
	if skip > from {
		marker := item{uuid: transcript.ContentUUID("omitted", fmt.Sprintf("%s\x00%d", view[from].uuid, skip-from)), pos: -1,
			role: transcript.RoleUser, meta: true, origin: "omitted", owned: true,
			blocks: []transcript.Block{&transcript.Text{Text: fmt.Sprintf(omittedText, skip-from)}}}
		items = slices.Concat(view[:from], []item{marker}, view[skip:])
	}
	st := &turn{ctx: t.ctx, now: t.now, in: t.in, chain: t.chain, boundaryPos: t.boundaryPos, levels: t.levels,
		items: items, toolNames: t.toolNameMap(), sessionID: t.sessionID, system: slices.Clone(t.system), report: &Report{}}
	if err := co.normalize.run(st); err != nil {
		return provider.Request{}, nil, err
	}
	if err := co.cache.run(st); err != nil {
		return provider.Request{}, nil, err
	}
	req := st.req
	if len(req.Messages) == 0 {
		return provider.Request{}, nil, errors.New("nothing to summarize")
	}
	req.Model = co.model
	req.System = st.system
	ask := &transcript.Text{Text: instr}
	if last := &req.Messages[len(req.Messages)-1]; last.Role == transcript.RoleUser {
		last.Content = append(slices.Clip(last.Content), ask)
	} else {
		req.Messages = append(req.Messages, provider.Message{Role: transcript.RoleUser, Content: []transcript.Block{ask}})
	}
	req.MaxTokens = co.summaryMax()
	if len(req.Tools) > 0 {
		req.ToolChoice = &provider.ToolChoice{Type: "none"}
	}
	// Thinking stays as the conversation has it, so the prompt cache is shared, unless its
	// budget would take more than half the summary's output: then the summary goes without.
	if th := co.thinking; th != nil && !st.report.ThinkingUnavailable && (th.Type != "enabled" || th.BudgetTokens*2 <= req.MaxTokens) {
		req.Thinking = th
	}
	if req.Thinking == nil {
		// Sent without thinking, the final turn may not hold any (rule 4.5); normalize kept
		// it when the conversation has thinking on.
		dropThinking(req.Messages, finalTurn(req.Messages), co.counter)
	}
	if co.normalize.cfg.KeepReasoningItems {
		dropReasoningItems(req.Messages)
	}
	vm := make([]summarize.Message, len(items))
	for i := range items {
		vm[i] = viewMessage(&items[i])
	}
	return req, vm, nil
}

// viewMessage converts a view item. A failed tool call's result that microcompact cleared
// comes back as written, so that a summarizer reading the view can still say what failed.
func viewMessage(it *item) summarize.Message {
	m := summarize.Message{UUID: it.uuid, Role: it.role, Meta: it.meta, Time: it.at(), Content: withClearedErrors(it)}
	switch {
	case it.rec != nil && it.rec.IsCompactSummary:
		m.Source, m.Meta = summarize.SourceCompactSummary, true
	case it.rec == nil:
		m.Source, m.Meta = summarize.Source(it.origin), true
	}
	return m
}

// withClearedErrors returns the item's blocks with each failed tool result that microcompact
// cleared replaced by the result its record holds; the blocks themselves when there is none.
func withClearedErrors(it *item) []transcript.Block {
	if it.rec == nil || it.rec.Message == nil {
		return it.blocks
	}
	var out []transcript.Block
	for i, b := range it.blocks {
		tr, ok := b.(*transcript.ToolResult)
		if !ok || !tr.IsError || len(tr.Content) != 1 || prose.ResultText(tr) != ClearedToolResultText {
			continue
		}
		for _, ob := range it.rec.Message.Content {
			if o, ok := ob.(*transcript.ToolResult); ok && o.ToolUseID == tr.ToolUseID && o != tr {
				if out == nil {
					out = slices.Clone(it.blocks)
				}
				out[i] = o
			}
		}
	}
	if out == nil {
		return it.blocks
	}
	return out
}

// dropFor returns where the left-out part of view (so far ending at skip) must end so that at
// least gap more counted tokens go, keeping at least the last round. It prefers to end at a
// user message a person typed — leaving out whole user turns with the responses and tool
// results they caused — unless that leaves out more than twice the gap, then ends at any safe
// cut (between API rounds). It returns skip when nothing more can go.
func (co *compactor) dropFor(view []item, skip, gap int) int {
	ok := safeCuts(view)
	last := -1 // the last round stays: it starts at the last safe cut
	for c := len(view) - 1; c > skip; c-- {
		if ok[c] {
			last = c
			break
		}
	}
	if last < 0 {
		return skip
	}
	any, n := -1, 0
	for c := skip + 1; c <= last; c++ {
		n += co.counter.itemTokens(&view[c-1])
		if !ok[c] || n < gap {
			continue
		}
		if any < 0 {
			any = c
		}
		if typedPrompt(&view[c]) {
			if n <= 2*gap || any == c {
				return c
			}
			break
		}
	}
	if any >= 0 {
		return any
	}
	return last // the gap cannot be covered: leave out all but the last round
}

// typedPrompt reports whether a view item is a user message a person wrote: user text that is
// not injected (isMeta, summaries, context) and holds no tool result.
func typedPrompt(it *item) bool {
	if it.role != transcript.RoleUser || it.meta || it.rec == nil || it.rec.IsCompactSummary {
		return false
	}
	for _, b := range it.blocks {
		if b.Kind() == transcript.KindToolResult {
			return false
		}
	}
	return hasText(it.blocks)
}

// isExtractive reports whether s is the extractive summarizer, which calls no model: its
// requests are not trimmed to fit a window, nor raced against ctx.
func isExtractive(s summarize.Summarizer) bool {
	switch s.(type) {
	case summarize.Extractive, *summarize.Extractive:
		return true
	}
	return false
}

// summarizerName names a summarizer in records.
func summarizerName(s summarize.Summarizer, by string) string {
	switch {
	case by != "":
		return by
	case isExtractive(s):
		return "extractive"
	}
	return "summarizer"
}

// summarize asks s for the summary of t's view, leaving out the oldest rounds when the request
// does not fit the window or the provider finds it too long (at most 3 retries), and, when even
// the last round does not fit, sending every tool result and tool input as a short head. It
// returns the summary and the number of calls made: 0 when the request could not be made to
// fit (the summarizer was never called).
func (co *compactor) summarize(ctx context.Context, t *turn, s summarize.Summarizer, trigger, custom string) (*summary, int, error) {
	full := summaryView(t.items)
	view := full
	from := leadingKept(view, t.boundaryPos)
	skip := from
	cal := calibration{ratio: t.report.Pressure.Ratio}
	noWindow := isExtractive(s)
	calls, shrunk := 0, false
	for {
		req, vm, err := co.summaryRequest(t, view, from, skip, instructions(custom))
		if err != nil {
			return nil, calls, err
		}
		counted := co.counter.Request(&req)
		if !noWindow {
			if over := cal.scale(counted) + req.MaxTokens - co.window; over > 0 {
				if next := co.dropFor(view, skip, int(float64(over)/cal.ratio)+1); next > skip {
					skip = next
					continue
				}
				if !shrunk {
					// Even the last round does not fit: every tool result and input goes as
					// its head, and the rounds are left out again from the oldest.
					view, skip, shrunk = shortView(full, co.budget.cfg.preview(co.window)), from, true
					continue
				}
				return nil, calls, fmt.Errorf("the summary request does not fit the window %d even with all but the last round left out and every tool result cut to its head: %w", co.window, errNotSized)
			}
		}
		vo := provider.ValidateOptions{ContextWindow: co.window, InputTokens: counted}
		if noWindow {
			vo.ContextWindow = 0 // no model reads it: the window does not apply
		}
		if err := provider.Validate(req, vo); err != nil {
			return nil, calls, fmt.Errorf("the summary request is invalid: %w", err)
		}
		calls++
		out, err := callSummarizer(ctx, s, summarize.Request{Request: req, View: vm, Instructions: instructions(custom),
			Custom: strings.TrimSpace(custom), MaxOutputTokens: req.MaxTokens, Trigger: trigger, Attempt: calls, Omitted: skip - from})
		if ptl, isPTL := errors.AsType[*provider.PromptTooLongError](err); isPTL {
			if calls > maxPTLRetries {
				return nil, calls, fmt.Errorf("prompt too long after %d retries: %w", maxPTLRetries, err)
			}
			gap := 0
			if ptl.Tokens > 0 && ptl.Limit > 0 && ptl.Tokens > ptl.Limit {
				gap = int(float64(ptl.Tokens-ptl.Limit)/cal.ratio) + 1
			} else {
				for i := skip; i < len(view); i++ {
					gap += co.counter.itemTokens(&view[i])
				}
				gap /= 5 // no figures: a fifth of what is left
			}
			next := co.dropFor(view, skip, gap)
			if next <= skip {
				return nil, calls, fmt.Errorf("prompt too long, and nothing more can be left out: %w", err)
			}
			skip = next
			continue
		}
		if err != nil {
			return nil, calls, err
		}
		text, err := summarize.FromReply(out.Text)
		if err != nil {
			return nil, calls, err
		}
		sum := &summary{text: text, by: summarizerName(s, out.By), through: len(view) - (skip - from), omitted: skip - from, usage: out.Usage}
		cut, n := co.capSummary(text, req.MaxTokens, cal)
		// A summarizer that calls no model writes a summary over its cap again, with its
		// budget scaled down by how far it ran over (at most twice), rather than have it cut.
		for try := 0; cut != text && noWindow && try < 2; try++ {
			again, err := callSummarizer(ctx, s, summarize.Request{Request: req, View: vm, Instructions: instructions(custom),
				Custom: strings.TrimSpace(custom), MaxOutputTokens: req.MaxTokens * req.MaxTokens * 9 / 10 / max(n, 1),
				Trigger: trigger, Attempt: calls, Omitted: skip - from})
			if err != nil {
				break
			}
			smaller, err := summarize.FromReply(again.Text)
			if err != nil {
				break
			}
			text, sum.text = smaller, smaller
			cut, n = co.capSummary(text, req.MaxTokens, cal)
		}
		if cut != text {
			sum.text, sum.cutFrom = cut, n
		}
		return sum, calls, nil
	}
}

// errNotSized marks a summary request the library could not make fit the window: the
// summarizer was never called, so its circuit breaker does not count it.
var errNotSized = errors.New("the summarizer was not called")

// callSummarizer calls s and returns at the latest when ctx is done: a summarizer that ignores
// its context is left to finish on its own, and its late answer is dropped.
func callSummarizer(ctx context.Context, s summarize.Summarizer, req summarize.Request) (summarize.Summary, error) {
	if isExtractive(s) || ctx.Done() == nil {
		return s.Summarize(ctx, req)
	}
	type answer struct {
		out summarize.Summary
		err error
	}
	ch := make(chan answer, 1)
	go func() {
		out, err := s.Summarize(ctx, req)
		ch <- answer{out, err}
	}()
	select {
	case a := <-ch:
		return a.out, a.err
	case <-ctx.Done():
		return summarize.Summary{}, ctx.Err()
	}
}

// summaryCutNote ends a summary cut to its cap.
const summaryCutNote = "\n[The summary ran past its limit of %d tokens and was cut here; %d more lines are not shown.]"

// capSummary returns text cut at a line to at most limit calibrated tokens, with a note, and its
// size before the cut in calibrated tokens; text itself when it is within a tenth of limit (the
// provider's tokenizer is not the counter's). A text too long to count cheaply is cut by bytes
// first.
func (co *compactor) capSummary(text string, limit int, cal calibration) (string, int) {
	n := len(text) / 3 // an estimate: the text is too long to count
	if len(text) <= limit*8 {
		if n = cal.scale(co.counter.Text(text)); n*10 <= limit*11 {
			return text, n
		}
	}
	out, _ := co.fitNoted(text, limit, cal, func(lines int) string { return fmt.Sprintf(summaryCutNote, limit, lines) })
	if out == "" {
		out = fmt.Sprintf(strings.TrimPrefix(summaryCutNote, "\n"), limit, strings.Count(text, "\n")+1)
	}
	return out, n
}

// shortView returns view with every tool result's content cut to a head of about n bytes and
// every tool input over 4n bytes replaced by a note, for a summary request that must fit a
// window its last round alone overflows.
func shortView(view []item, n int) []item {
	out := slices.Clone(view)
	for i := range out {
		var bs []transcript.Block
		for j, b := range out[i].blocks {
			nb := shortBlock(b, n)
			if nb == b {
				continue
			}
			if bs == nil {
				bs = slices.Clone(out[i].blocks)
			}
			bs[j] = nb
		}
		if bs != nil {
			out[i].blocks, out[i].owned = bs, true
		}
	}
	return out
}

// shortBlock is b as shortView sends it.
func shortBlock(b transcript.Block, n int) transcript.Block {
	switch b := b.(type) {
	case *transcript.ToolResult:
		full := prose.ResultText(b)
		head, more := previewHead(full, n)
		if !more {
			return b
		}
		c := *b
		c.Content, c.StringContent = []transcript.Block{&transcript.Text{Text: head + fmt.Sprintf(shortNote, len(full)-len(head))}}, true
		return &c
	case *transcript.ToolUse:
		if len(b.Input) <= 4*n {
			return b
		}
		c := *b
		c.Input = mustJSONObject("note", fmt.Sprintf("an input of %d bytes, left out of this request", len(b.Input)))
		return &c
	}
	return b
}

// shortNote ends a tool result shortView cut.
const shortNote = "\n[… %d more bytes of this result are left out of this request]"

// mustJSONObject encodes the object {key: value}.
func mustJSONObject(key, value string) json.RawMessage {
	return json.RawMessage(`{` + string(mustJSON(key)) + `:` + string(mustJSON(value)) + `}`)
}

// writeSummary gets the summary from the primary summarizer, then from the fallback; each
// failed attempt yields a failure record and its error. A done ctx ends it with ctx's error.
func (co *compactor) writeSummary(ctx context.Context, t *turn, rep *CompactReport, trigger, custom string, primary, fallback summarize.Summarizer, prior int) (*summary, []transcript.Record, []error, error) {
	var failures []transcript.Record
	var errs []error
	for i, s := range []summarize.Summarizer{primary, fallback} {
		if s == nil {
			continue
		}
		isFallback := rep.Fallback || i == 1
		sum, calls, err := co.summarize(ctx, t, s, trigger, custom)
		rep.Attempts += calls
		if err == nil {
			sum.fallback = isFallback
			if sum.cutFrom > 0 {
				t.report.degrade(DegradedSummaryCut, fmt.Sprintf("the summary by %s held about %d tokens, over its cap of %d: it was cut to the cap", sum.by, sum.cutFrom, co.summaryMax()), "")
			}
			return sum, failures, errs, nil
		}
		if cerr := ctx.Err(); cerr != nil {
			return nil, failures, errs, cerr
		}
		name := summarizerName(s, "")
		if errors.Is(err, errNotSized) {
			t.report.degrade(DegradedNotCalled, fmt.Sprintf("%s: %v; this does not count against its circuit breaker", name, err), "")
		}
		errs = append(errs, fmt.Errorf("%s: %w", name, err))
		rep.Failures = append(rep.Failures, name+": "+err.Error())
		failures = append(failures, co.failureRecord(t, transcript.CompactFailure{Trigger: trigger, Summarizer: name, Fallback: isFallback,
			Reason: err.Error(), Attempts: calls, PreTokens: rep.PreTokens, LeafUUID: t.chain.Leaf.UUID}, prior+len(failures)))
	}
	return nil, failures, errs, nil
}
