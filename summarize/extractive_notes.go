package summarize

import (
	"slices"
	"strings"

	"github.com/agentctx/agentctx/internal/prose"
)

// The Decisions and Open items sections of an extractive summary are read off the wording of
// the messages, sentence by sentence: the user's decisions, confirmations and rules, and what
// the assistant put off for later. A sentence is listed as it was written (cut to
// noteChars), so the summary quotes and never paraphrases.

// decisionLines lists what the user decided, confirmed or ruled: the carried lines of an
// earlier summary, then the sentences of each user message that shown (when not nil) does not
// quote in full.
func (x *extraction) decisionLines(shown []bool) []string {
	lines := slices.Clone(x.carried[secDecisions])
	seen := map[string]bool{}
	for _, l := range lines {
		seen[l] = true
	}
	if x.decided == nil {
		x.decided = make([][]string, len(x.prompts))
		for i, p := range x.prompts {
			if !prose.TypedOutput(p) {
				x.decided[i] = prose.Matching(p, prose.UserDecision)
			}
		}
	}
	for i, notes := range x.decided {
		if shown != nil && i < len(shown) && shown[i] {
			continue
		}
		for _, s := range notes {
			if l := "- " + s; !seen[l] {
				seen[l] = true
				lines = append(lines, l)
			}
		}
	}
	return lines
}

// openItem is something the assistant said it would do later.
type openItem struct {
	text  string
	words []string // its distinctive words, which a report of the work done repeats
}

// said notes an assistant text: the open items it reports done go, and the work it puts off
// comes.
func (x *extraction) said(text string) {
	if len(x.open) > 0 {
		done := prose.Matching(text, prose.Completion)
		if len(done) > 0 {
			lower := strings.ToLower(strings.Join(done, " "))
			x.open = slices.DeleteFunc(x.open, func(it openItem) bool { return prose.ReportsDone(lower, it.words) })
		}
	}
	for _, s := range prose.Matching(text, prose.Deferred) {
		if !slices.ContainsFunc(x.open, func(it openItem) bool { return it.text == s }) {
			x.open = append(x.open, openItem{s, prose.DistinctWords(s)})
		}
	}
}

// openLines lists the open items, oldest first (those of an earlier summary first).
func (x *extraction) openLines() []string {
	var lines []string
	for _, it := range x.open {
		if l := "- " + it.text; !slices.Contains(lines, l) {
			lines = append(lines, l)
		}
	}
	return lines
}
