package htmlreport

import (
	"github.com/agentctx/agentctx"
)

// The decisions the timeline marks, one row each, in the order of its rows.
const (
	markBudget       = "budget replacement"
	markSnip         = "snip"
	markMicrocompact = "microcompact clearing"
	markCollapse     = "collapse"
	markCompaction   = "compaction"
	markCompactFail  = "compaction failed or skipped"
	markFallback     = "fallback summary"
	markBreaker      = "breaker open"
	markThrash       = "thrash mode"
	markRung         = "compaction rung"
	markDegraded     = "other degradation"
	markRecovery     = "recovery rung"
	markExpired      = "cache expired"
	markError        = "not sent"
)

// markRow is one row of the timeline's marks.
type markRow struct{ name, color string }

// markRows lists the marks with their colours, in row order.
func markRows() []markRow {
	return []markRow{
		{markBudget, "#2b8cbe"}, {markSnip, "#41ab5d"}, {markMicrocompact, "#807dba"},
		{markCollapse, "#ec7014"}, {markCompaction, "#54278f"}, {markCompactFail, "#cb181d"},
		{markFallback, "#d94801"}, {markBreaker, "#a50f15"}, {markThrash, "#e7298a"},
		{markRung, "#8c6d31"}, {markDegraded, "#737373"}, {markRecovery, "#67000d"}, {markExpired, "#6baed6"}, {markError, "#000000"},
	}
}

// stageMark names the decision a stage's report marks, or "": a new decision of the budget
// (a result replaced by its preview), snip, microcompact or collapse. A decision applied
// again on a later turn is not marked again: budget's are reported as reapplied; the others
// carry out a decision record seen before, which seen remembers.
func stageMark(sr agentctx.StageReport, seen map[string]bool) string {
	mark := ""
	for _, a := range sr.Actions {
		kind := ""
		switch a.Kind {
		case agentctx.ActionReplaced:
			kind = markBudget
		case agentctx.ActionSnipped:
			kind = markSnip
		case agentctx.ActionCleared, agentctx.ActionMarked:
			kind = markMicrocompact
		case agentctx.ActionCollapsed:
			kind = markCollapse
		default:
			continue
		}
		key := a.Record
		if key == "" {
			key = string(a.Kind) + "\x00" + a.UUID + "\x00" + a.ToolUseID
		}
		if !seen[key] {
			seen[key] = true
			mark = kind
		}
	}
	return mark
}

// degradationMark names the mark of a degradation.
func degradationMark(k agentctx.DegradationKind) string {
	switch k {
	case agentctx.DegradedFallback:
		return markFallback
	case agentctx.DegradedBreaker:
		return markBreaker
	case agentctx.DegradedAggressive:
		return markThrash
	case agentctx.DegradedRung:
		return markRung
	}
	return markDegraded
}

// compactionMark names the mark of a compaction attempt.
func compactionMark(cr *agentctx.CompactReport) string {
	if cr.Outcome == agentctx.CompactCompacted {
		return markCompaction
	}
	return markCompactFail
}
