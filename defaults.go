package agentctx

import (
	"fmt"
	"strings"
)

// referenceWindow is the window at which every window-scaled default takes the value Claude
// Code uses: its own window. Above it the defaults stay as they are; below it they shrink in
// proportion, down to a floor.
const referenceWindow = 200_000

// scaled returns a default whose value is v at the reference window (200,000 tokens) for a
// window: v at 200,000 tokens and above, v × window / 200,000 below, and never less than floor.
func scaled(v, floor, window int) int {
	if window >= referenceWindow {
		return v
	}
	return max(floor, int(int64(v)*int64(max(window, 0))/referenceWindow))
}

// defaultRow is one line of the table of window-scaled defaults in the package doc.
type defaultRow struct {
	name, rule string
	at         func(window int) int
}

// defaultRows lists the window-scaled defaults as the package doc's table gives them; the
// values come from the same functions the stages use, and TestDefaultsTable checks the doc
// against them. The levels assume a maximum output of at least 20,000 tokens.
func defaultRows() []defaultRow {
	var c Config
	levels := func(f func(Levels) int) func(int) int {
		return func(w int) int { return f(DefaultLevels(w, 64_000)) }
	}
	return []defaultRow{
		{"auto-compact threshold", "effective − min(13,000, W/8)", levels(func(l Levels) int { return l.Threshold })},
		{"blocking limit", "effective − min(3,000, W/32)", levels(func(l Levels) int { return l.Blocking })},
		{"Budget.MaxResultChars", "50,000 × s, ≥ 2,000", c.Budget.maxResult},
		{"Budget.MaxMessageChars", "200,000 × s, ≥ 8,000", c.Budget.maxMessage},
		{"Budget.ExemptMaxChars", "100,000 × s, ≥ 4,000", c.Budget.exemptMax},
		{"Budget.PreviewBytes", "2,000 × s, ≥ 500", c.Budget.preview},
		{"Bash cap (ToolMaxChars)", "30,000 × s, ≥ 2,000", func(w int) int { return c.Budget.toolMax("Bash", w) }},
		{"Grep cap (ToolMaxChars)", "20,000 × s, ≥ 2,000", func(w int) int { return c.Budget.toolMax("Grep", w) }},
		{"Compact.SummaryMaxTokens", "20,000 × s, ≥ min(1,024, W/8)", func(w int) int { return c.Compact.summaryMax(w, 64_000) }},
		{"Compact.PinnedMaxTokens", "8,000 × s, ≥ 500", c.Compact.pinnedMax},
		{"Tail.MinTokens", "10,000 × s, ≥ 400", c.Compact.Tail.minTokens},
		{"Tail.MaxTokens", "40,000 × s, ≥ 1,600", c.Compact.Tail.maxTokens},
		{"Rehydrate.MaxFileTokens", "5,000 × s, ≥ 200", c.Compact.Rehydrate.maxFileTokens},
		{"Rehydrate.MaxFilesTokens", "50,000 × s, ≥ 2,000", c.Compact.Rehydrate.maxFilesTokens},
		{"Rehydrate.MaxSkillTokens", "5,000 × s, ≥ 200", c.Compact.Rehydrate.maxSkillTokens},
		{"Rehydrate.MaxSkillsTokens", "25,000 × s, ≥ 1,000", c.Compact.Rehydrate.maxSkillsTokens},
		{"Microcompact.CachedTriggerTokens", "100,000 × s, ≥ 4,000", c.Microcompact.cachedTrigger},
	}
}

// defaultsTableWindows are the windows the package doc's table shows.
var defaultsTableWindows = []int{8_000, 32_000, 128_000, 200_000, 1_000_000}

// defaultsTable renders the table of window-scaled defaults as the package doc holds it.
func defaultsTable() string {
	var b strings.Builder
	b.WriteString("//	default                           rule                          8k     32k     128k    200k    1M\n")
	for _, r := range defaultRows() {
		var line strings.Builder
		fmt.Fprintf(&line, "//	%-33s %-29s", r.name, r.rule)
		for i, w := range defaultsTableWindows {
			width := 7
			if i == 0 {
				width = 6
			}
			fmt.Fprintf(&line, " %-*d", width, r.at(w))
		}
		b.WriteString(strings.TrimRight(line.String(), " ") + "\n")
	}
	return b.String()
}
