package agentctx

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/agentctx/agentctx/internal/prose"
	"github.com/agentctx/agentctx/transcript"
)

// CompactRung names how far a compaction had to go to bring the request under its limits: the
// rungs of its ladder, from the least lossy. A compaction starts at [CompactRungTail] (at
// [CompactRungNoRehydrate] in aggressive mode, after thrash) and takes the first rung whose
// request is under its target (half the auto-compact threshold by default: see
// [CompactConfig.TargetFraction]); when none is, the smallest rung that keeps the latest
// input verbatim and can be sent. [CompactRungPreviews] and [CompactRungSummaryOnly]
// change what the model sees of its latest input, so they run only when nothing before them
// can be sent at all. The rung is in the Report ([CompactReport.Rung]) and on the compact
// boundary ([transcript.CompactMetadata.Rung]).
type CompactRung string

// The rungs of the compaction ladder, in order.
const (
	// CompactRungTail keeps the configured tail (see [TailConfig]) and re-injects files,
	// skills, the plan and the todo list within their budgets (see [RehydrateConfig]).
	CompactRungTail CompactRung = "tail"
	// CompactRungSmallerTail keeps a tail with half the budgets.
	CompactRungSmallerTail CompactRung = "smaller_tail"
	// CompactRungNoRehydrate keeps the smaller tail and re-injects nothing.
	CompactRungNoRehydrate CompactRung = "no_rehydrate"
	// CompactRungClearResults keeps the configured tail again, re-injects nothing, and clears
	// the kept tail's tool results older than the latest input, as microcompact does (a
	// [transcript.SubtypeMicrocompact] record with trigger "compact"): the conversation's turns stay, their
	// bulky outputs go.
	CompactRungClearResults CompactRung = "clear_results"
	// CompactRungLatestOnly keeps only the latest input and the response it answers.
	CompactRungLatestOnly CompactRung = "latest_only"
	// CompactRungPreviews keeps the latest input with its tool results replaced by their
	// previews, stored in full like the budget's (a [transcript.SubtypeToolResultBudget] record).
	CompactRungPreviews CompactRung = "previews"
	// CompactRungSummaryOnly keeps nothing but the summary, which covers the latest input too;
	// never when the latest input holds a prompt the user typed.
	CompactRungSummaryOnly CompactRung = "summary_only"
)

// rungText says in a few words what a rung gives up.
func rungText(r CompactRung) string {
	switch r {
	case CompactRungSmallerTail:
		return "a kept tail with half the budgets"
	case CompactRungNoRehydrate:
		return "a smaller kept tail, no files or skills re-read"
	case CompactRungClearResults:
		return "the kept tail's older tool results cleared, nothing re-read"
	case CompactRungLatestOnly:
		return "only the latest input kept, nothing re-read"
	case CompactRungPreviews:
		return "only the latest input kept, its tool results as previews"
	case CompactRungSummaryOnly:
		return "only the summary: the latest input is summarized too"
	}
	return "the configured kept tail"
}

// lossy reports whether the rung changes what the model sees of its latest input.
func (r CompactRung) lossy() bool { return r == CompactRungPreviews || r == CompactRungSummaryOnly }

// ladder returns the rungs to try from start, in order, leaving out the rungs that would
// change nothing over the one before or that may not run.
func (pl tailPlan) ladder(start CompactRung, all int) []tailStep {
	rungs := []tailStep{
		{rung: CompactRungTail, cut: pl.cut, rehydrate: 1},
		{rung: CompactRungSmallerTail, cut: pl.half, rehydrate: 1},
		{rung: CompactRungNoRehydrate, cut: pl.half},
		{rung: CompactRungClearResults, cut: pl.cut, clear: true},
		{rung: CompactRungLatestOnly, cut: pl.minCut},
		{rung: CompactRungPreviews, cut: pl.minCut, previews: true},
		{rung: CompactRungSummaryOnly, cut: all},
	}
	i := slices.IndexFunc(rungs, func(s tailStep) bool { return s.rung == start })
	var out []tailStep
	for _, s := range rungs[max(i, 0):] {
		switch {
		case s.clear && !pl.older:
			continue // nothing older than the latest input to clear
		case s.previews && pl.floorPreviews >= pl.floor:
			continue // no tool result of the latest input has a shorter preview
		case s.rung == CompactRungSummaryOnly && !pl.bare:
			continue
		}
		if n := len(out); n > 0 && out[n-1].cut == s.cut && out[n-1].rehydrate == s.rehydrate && !s.clear && !s.previews {
			continue // the same as the rung before, which gives up less
		}
		out = append(out, s)
	}
	return out
}

// startRung returns the rung a compaction starts from: the first whose floor is under the
// blocking limit, from [CompactRungTail] or, in aggressive mode, [CompactRungNoRehydrate];
// "" when no rung can bring the request under the blocking limit.
func (pl tailPlan) startRung(blocking int, aggressive bool) CompactRung {
	switch {
	case pl.floor < blocking && aggressive:
		return CompactRungNoRehydrate
	case pl.floor < blocking:
		return CompactRungTail
	case pl.floorPreviews < blocking:
		return CompactRungPreviews
	case pl.bare && pl.floorBare < blocking:
		return CompactRungSummaryOnly
	}
	return ""
}

// floorOf is the irreducible floor of the rungs from start on.
func (pl tailPlan) floorOf(start CompactRung) int {
	switch start {
	case CompactRungPreviews:
		return pl.floorPreviews
	case CompactRungSummaryOnly:
		return pl.floorBare
	}
	return pl.floor
}

// clearable reports whether b is a tool result the clear-results rung may clear: one that
// still holds content and names no tool (tool_reference blocks declare the tools a tool
// search found).
func clearable(b transcript.Block) bool {
	tr, ok := b.(*transcript.ToolResult)
	if !ok || len(tr.Content) == 0 {
		return false
	}
	if len(tr.Content) == 1 {
		if tx, ok := tr.Content[0].(*transcript.Text); ok && tx.Text == ClearedToolResultText {
			return false
		}
	}
	return !slices.ContainsFunc(tr.Content, func(b transcript.Block) bool { return b.Kind() == transcript.KindToolReference })
}

// clearRecord returns the microcompact decision that clears the tool results of
// items[from:to], or nil when there are none.
func (co *compactor) clearRecord(t *turn, from, to int) *transcript.Record {
	var ids []string
	for i := from; i < to; i++ {
		if t.items[i].role != transcript.RoleUser {
			continue
		}
		for _, b := range t.items[i].blocks {
			if clearable(b) {
				ids = append(ids, b.(*transcript.ToolResult).ToolUseID)
			}
		}
	}
	if len(ids) == 0 {
		return nil
	}
	key := t.chain.Leaf.UUID + "\x00" + strings.Join(ids, "\x00")
	r := t.newDecision(transcript.SubtypeMicrocompact, mcTriggerCompact+"\x00"+key,
		fmt.Sprintf("Compaction cleared %d older tool results of the kept tail to fit the window", len(ids)))
	r.IsSidechain = t.chain.Leaf.IsSidechain
	r.Microcompact = &transcript.MicrocompactDecision{Trigger: mcTriggerCompact, ClearedToolUseIDs: ids}
	return &r
}

// previewCandidates returns the budget entries of the tool results of the user items from
// from on that a preview can replace: not replaced already, holding no media.
func previewCandidates(t *turn, from int) []*budgetEntry {
	var out []*budgetEntry
	seen := map[string]bool{}
	for i := from; i < len(t.items); i++ {
		if t.items[i].role != transcript.RoleUser {
			continue
		}
		for j, b := range t.items[i].blocks {
			tr, ok := b.(*transcript.ToolResult)
			if !ok || seen[tr.ToolUseID] || slices.ContainsFunc(tr.Content, isMedia) || strings.HasPrefix(transcript.TextOf(tr.Content), "<persisted-output>") {
				continue
			}
			seen[tr.ToolUseID] = true
			e := &budgetEntry{id: tr.ToolUseID, size: -1}
			e.slots = append(e.one[:0], budgetSlot{item: i, block: j, tr: tr})
			e.res = transcript.BudgetResult{ToolUseID: tr.ToolUseID}
			out = append(out, e)
		}
	}
	return out
}

// previewSavings estimates, in counted tokens, what replacing the latest input's tool results
// (the user items from from on) by their previews saves: the floor of [CompactRungPreviews].
func (co *compactor) previewSavings(t *turn, from int) int {
	saved := 0
	n := co.budget.cfg.preview(co.window)
	for _, e := range previewCandidates(t, from) {
		tr := e.slots[0].tr
		full := prose.ResultText(tr)
		size := resultChars(tr)
		pv := persistedPreview(full, size, "transcript:"+t.items[e.slots[0].item].uuid, n, co.budget.cfg.keepsTail(t.toolName(e.id)))
		if len(pv) >= len(full) {
			continue
		}
		saved += max(0, co.counter.Block(tr)-co.counter.Block(replacedResult(tr, pv)))
	}
	return saved
}

// previewRecord stores the latest input's tool results (the user items from from on) in full
// and returns the budget decision that replaces each by its preview, or nil when none has a
// shorter one.
func (co *compactor) previewRecord(t *turn, from int) (*transcript.Record, error) {
	var d transcript.BudgetDecision
	for _, e := range previewCandidates(t, from) {
		e.measure()
		ok, err := co.budget.replaceResult(t, e)
		if err != nil {
			return nil, err
		}
		if ok {
			d.Results = append(d.Results, e.res)
		}
	}
	if len(d.Results) == 0 {
		return nil, nil
	}
	slices.SortFunc(d.Results, func(a, b transcript.BudgetResult) int { return cmp.Compare(a.ToolUseID, b.ToolUseID) })
	r, err := t.budgetRecord(&d, fmt.Sprintf("Compaction replaced %d tool results of the latest input by a preview to fit the window", len(d.Results)))
	if err != nil {
		return nil, err
	}
	r.IsSidechain = t.chain.Leaf.IsSidechain
	return &r, nil
}
