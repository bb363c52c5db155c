package summarize

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/agentctx/agentctx/internal/prose"

	"github.com/agentctx/agentctx/transcript"
)

// Extractive is a [Summarizer] that calls no model: it builds the summary from the
// conversation's structure, deterministically — the same view always gives the same bytes. Its
// sections follow the library's summary prompt: every message the user typed (the newest in
// full, older ones cut in the middle to fit the budget: see [Extractive.Summarize]), what the
// user decided, confirmed or ruled, the files read, edited and written, the commands run and
// which failed, the errors met and what came right after each, the last plan and todo list,
// what the assistant said it would do later and has not shown done, and the last thing the
// assistant said. A summary of an earlier compaction at the start of the view, and the
// summaries of the collapse commits in it, are carried over: merged section by section when
// Extractive wrote them, kept as they are (cut to their share) otherwise.
//
// It is the command-line tool's summarizer and the default fallback of a model summarizer
// (see [github.com/agentctx/agentctx.CompactConfig]). Its zero value is ready to use and safe for concurrent use.
type Extractive struct{}

// extractiveMark opens every summary Extractive writes, so a later compaction recognises one.
const extractiveMark = "This summary was extracted from the structure of the conversation, without a model: the user's messages are quoted, everything else is listed."

// The sections of an extractive summary, in order.
const (
	secEarlier   = "Earlier summary"
	secPrompts   = "User messages"
	secDecisions = "Decisions"
	secFiles     = "Files"
	secCommands  = "Commands"
	secErrors    = "Errors and what followed"
	secState     = "Plan and todo list"
	secOpen      = "Open items"
	secLast      = "Last assistant message"
)

// extractiveSections are the sections in order, each with its share of the summary's
// character budget, in percent. A section that needs less than its share passes the rest on
// to the sections that need more (see allot).
var extractiveSections = []struct {
	name  string
	share int
}{
	{secEarlier, 16}, {secPrompts, 36}, {secDecisions, 8}, {secFiles, 9}, {secCommands, 5},
	{secErrors, 11}, {secState, 5}, {secOpen, 5}, {secLast, 5},
}

// Summarize writes the summary of req.View within about req.MaxOutputTokens tokens (three
// characters a token), and within half the characters of the view's text (an earlier summary
// counted whole), so that the summary of a short conversation is shorter than it. Each section has a share of that budget, and passes what it does not
// need on to the sections that need more. User messages are listed oldest first, numbered;
// a message longer than its part is cut in the middle, its head and tail kept and the cut
// marked, each older message getting what it needs within an equal part of what the shorter
// ones leave (between 80 and 1,500 characters), and when even 80 characters each do not fit,
// the oldest are left out and a line says how many. What a message cut or left out decided,
// confirmed or ruled stays in the Decisions section. It never fails on a non-empty view.
func (e Extractive) Summarize(ctx context.Context, req Request) (Summary, error) {
	if err := ctx.Err(); err != nil {
		return Summary{}, err
	}
	// A summary as long as what it summarizes makes no progress: the budget is at most half
	// the view's new text, plus an earlier summary's (and at least minBudgetChars).
	budget := max(req.MaxOutputTokens, 500) * 3
	if half := viewChars(req.View) / 2; half < budget {
		budget = max(half, minBudgetChars)
	}
	x := extract(req.View)
	var b strings.Builder
	b.WriteString("<summary>\n" + extractiveMark + "\n")
	drafts := x.drafts(budget)
	needs, shares := make([]int, len(drafts)), make([]int, len(drafts))
	for i, d := range drafts {
		needs[i], shares[i] = d.need, extractiveSections[i].share
	}
	alloc := prose.Allot(needs, shares, budget)
	spare := 0
	for i, d := range drafts {
		if d.need == 0 {
			continue
		}
		n := alloc[i] + min(spare, max(d.need-alloc[i], 0))
		spare -= n - alloc[i]
		body := d.render(n)
		if body == "" {
			spare += n
			continue
		}
		spare += max(n-utf8.RuneCountInString(body), 0)
		fmt.Fprintf(&b, "\n## %s\n", extractiveSections[i].name)
		b.WriteString(neutralTags.Replace(body))
	}
	if req.Omitted > 0 {
		fmt.Fprintf(&b, "\n(%d of the oldest messages were left out of this summary to fit; the transcript keeps them.)\n", req.Omitted)
	}
	if strings.TrimSpace(req.Custom) != "" {
		fmt.Fprintf(&b, "\n## %s\n%s\n", secCustom, neutralTags.Replace(prose.Indent(strings.TrimSpace(req.Custom))))
	}
	b.WriteString("</summary>")
	return Summary{Text: b.String(), By: "extractive"}, nil
}

// minBudgetChars is the smallest budget of an extractive summary, in characters.
const minBudgetChars = 1_500

// viewChars returns the characters of the text a view holds: its messages' text, tool inputs
// and tool results; an earlier summary's count twice, so that half the figure carries it whole.
func viewChars(view []Message) int {
	n := 0
	for _, m := range view {
		if m.Source == SourceCompactSummary || m.Source == SourceCollapse {
			n += 2 * len(transcript.TextOf(m.Content))
			continue
		}
		for _, b := range m.Content {
			switch b := b.(type) {
			case *transcript.Text:
				n += len(b.Text)
			case *transcript.ToolUse:
				n += len(b.Input)
			case *transcript.ToolResult:
				n += len(prose.ResultText(b))
			}
		}
	}
	return n
}

// draft is one section of a summary before its budget is known: the characters it would take
// in full, and its body within n characters ("" for none).
type draft struct {
	need   int
	render func(n int) string
}

// drafts returns the sections of the summary, in the order of extractiveSections, for a
// budget of budget characters.
func (x *extraction) drafts(budget int) []draft {
	list := func(lines []string) draft {
		need := 0
		for _, l := range lines {
			need += utf8.RuneCountInString(l) + 1
		}
		return draft{need, func(n int) string { return prose.FitLines(lines, n) }}
	}
	text := func(s string) draft {
		if s == "" {
			return draft{}
		}
		return draft{utf8.RuneCountInString(prose.Indent(s)) + 1, func(n int) string { return prose.Indent(prose.CutChars(s, n-1)) + "\n" }}
	}
	newest := budget / 4
	var shown []bool // shown[i]: prompt i is quoted in full
	prompts := draft{need: prose.PromptsNeed(x.prompts, x.leftOut, newest), render: func(n int) string {
		lines, at := prose.RenderPrompts(x.prompts, x.leftOut, n, newest)
		body, dropped := prose.FitLinesN(lines, n)
		full := make([]bool, len(x.prompts))
		for j, i := range at {
			if i >= 0 {
				full[i] = j >= dropped
			}
		}
		shown = full
		return body
	}}
	decisions := list(x.decisionLines(nil))
	decisions.render = func(n int) string { return prose.FitLines(x.decisionLines(shown), n) }
	files := list(x.files())
	files.render = func(n int) string { return prose.FitLines(x.filesWithin(n), n) }
	// A foreign earlier summary is cut to its share: what the others leave does not grow it.
	earlier := text(x.earlier)
	earlier.need = min(earlier.need, budget*extractiveSections[0].share/100)
	return []draft{
		earlier, prompts, decisions, files, list(x.commands),
		list(x.errors), list(x.state()), list(x.openLines()), text(x.last),
	}
}

// neutralTags keeps quoted text from closing or opening the summary's own tags.
var neutralTags = strings.NewReplacer("<summary>", "‹summary›", "</summary>", "‹/summary›", "<analysis>", "‹analysis›", "</analysis>", "‹/analysis›")

// extraction is what Extractive reads off a view.
type extraction struct {
	earlier  string   // a foreign earlier summary, kept as is
	prompts  []string // user messages, oldest first (those of an earlier extractive summary first)
	leftOut  int      // user messages an earlier extractive summary had already left out
	carried  map[string][]string
	reads    map[string]int
	edits    map[string]int
	writes   map[string]int
	order    []string // file paths in order of first mention
	commands []string
	errors   []string
	plan     string
	todos    string
	last     string
	open     []openItem // what the assistant put off for later, not yet reported done
	decided  [][]string // the sentences of each prompt that decide, confirm or rule (see decisionLines)
}

// extract reads a view.
func extract(view []Message) *extraction {
	x := &extraction{carried: map[string][]string{}, reads: map[string]int{}, edits: map[string]int{}, writes: map[string]int{}}
	calls := map[string]*transcript.ToolUse{}
	pendingErr := -1 // index in x.errors of an error still waiting for what followed
	for _, m := range view {
		switch {
		case m.Source == SourceCompactSummary, m.Source == SourceCollapse:
			x.carry(transcript.TextOf(m.Content))
			pendingErr = -1
			continue
		case m.Source != "":
			continue // base context, pinned content, omission markers
		}
		if m.Role == transcript.RoleAssistant {
			for _, b := range m.Content {
				switch b := b.(type) {
				case *transcript.Text:
					if t := strings.TrimSpace(b.Text); t != "" {
						x.last = t
						x.said(t)
						if pendingErr >= 0 {
							x.errors[pendingErr] += " → then: " + prose.OneLine(t, 200)
							pendingErr = -1
						}
					}
				case *transcript.ToolUse:
					calls[b.ID] = b
					x.call(b)
				}
			}
			continue
		}
		typed := !m.Meta
		for _, b := range m.Content {
			tr, ok := b.(*transcript.ToolResult)
			if !ok {
				continue
			}
			typed = false
			tu := calls[tr.ToolUseID]
			if tu == nil {
				continue
			}
			out := strings.TrimSpace(prose.ResultText(tr))
			if tu.Name == "Bash" {
				status := "ok"
				if tr.IsError {
					status = "failed: " + prose.OneLine(out, 80)
				}
				x.commands = append(x.commands, fmt.Sprintf("- `%s` → %s", prose.OneLine(prose.InputString(tu.Input, "command"), 200), status))
			}
			if tr.IsError {
				x.errors = append(x.errors, fmt.Sprintf("- %s %s: %s", tu.Name, prose.OneLine(callSubject(tu), 120), prose.OneLine(out, 240)))
				pendingErr = len(x.errors) - 1
			}
		}
		if typed {
			if t := strings.TrimSpace(transcript.TextOf(m.Content)); t != "" {
				x.prompts = append(x.prompts, t)
			}
		}
	}
	return x
}

// call records a tool call's file or state.
func (x *extraction) call(tu *transcript.ToolUse) {
	path := prose.InputString(tu.Input, "file_path", "notebook_path")
	count := func(m map[string]int) {
		if path == "" {
			return
		}
		if x.reads[path]+x.edits[path]+x.writes[path] == 0 {
			x.order = append(x.order, path)
		}
		m[path]++
	}
	switch tu.Name {
	case "Read":
		count(x.reads)
	case "Edit", "MultiEdit", "NotebookEdit":
		count(x.edits)
	case "Write":
		count(x.writes)
	case "TodoWrite":
		if s := prose.Todos(tu.Input); s != "" {
			x.todos = s
		}
	case "ExitPlanMode":
		if s := prose.InputString(tu.Input, "plan"); s != "" {
			x.plan = s
		}
	}
}

// callSubject names what a tool call was about: its file, command, pattern or URL.
func callSubject(tu *transcript.ToolUse) string {
	return prose.InputString(tu.Input, "file_path", "notebook_path", "command", "pattern", "url", "query", "skill")
}

// files lists the files, in order of first mention.
func (x *extraction) files() []string {
	lines := slices.Clone(x.carried[secFiles])
	for _, p := range x.order {
		var parts []string
		for _, k := range []struct {
			what string
			n    int
		}{{"read", x.reads[p]}, {"edited", x.edits[p]}, {"written", x.writes[p]}} {
			switch {
			case k.n == 1:
				parts = append(parts, k.what)
			case k.n > 1:
				parts = append(parts, fmt.Sprintf("%s ×%d", k.what, k.n))
			}
		}
		lines = append(lines, fmt.Sprintf("- %s: %s", p, strings.Join(parts, ", ")))
	}
	return lines
}

// filesWithin lists the files within about n characters: when they do not all fit, the files
// only read go first, the oldest first (fitLines leaves out more of the oldest if need be).
func (x *extraction) filesWithin(n int) []string {
	lines := x.files()
	size := 0
	for _, l := range lines {
		size += utf8.RuneCountInString(l) + 1
	}
	for i := 0; i < len(lines) && size > n; {
		if p := strings.TrimPrefix(lines[i], "- "); !strings.HasPrefix(lines[i], "- ") || x.edits[pathOf(p)]+x.writes[pathOf(p)] > 0 ||
			strings.Contains(p, ": edited") || strings.Contains(p, "written") {
			i++
			continue
		}
		size -= utf8.RuneCountInString(lines[i]) + 1
		lines = slices.Delete(lines, i, i+1)
	}
	return lines
}

// pathOf returns the path of a Files entry ("path: read ×2, edited").
func pathOf(entry string) string {
	if i := strings.LastIndex(entry, ": "); i >= 0 {
		return entry[:i]
	}
	return entry
}

// state lists the last plan and todo list.
func (x *extraction) state() []string {
	var lines []string
	plan, todos := x.plan, x.todos
	if plan == "" && todos == "" {
		return x.carried[secState]
	}
	if plan != "" {
		lines = append(lines, "Plan:\n"+prose.Indent(prose.CutChars(plan, 4_000)))
	}
	if todos != "" {
		lines = append(lines, "Todo list:\n"+prose.Indent(todos))
	}
	return lines
}

// sectionHeading matches the headings of an extractive summary's sections; every other line of
// a section is indented or starts with "- " or a number, so quoted text never looks like one.
var sectionHeading = regexp.MustCompile(`(?m)^## (` + strings.Join([]string{secEarlier, secPrompts, secDecisions, secFiles, secCommands, secErrors, secState, secOpen, secLast, secCustom}, "|") + `)$`)

// secCustom is the heading of the instructions an extractive summary was given.
const secCustom = "Instructions given for this summary"

// carry takes over an earlier compaction's summary or a collapse commit's, after those already
// carried: its sections when Extractive wrote it, else the whole text.
func (x *extraction) carry(message string) {
	body, err := FromReply(message)
	if err != nil {
		body = strings.TrimSpace(message)
	}
	body = unwrapCollapsed(body)
	if !strings.HasPrefix(body, extractiveMark) {
		x.addEarlier(body)
		return
	}
	locs := sectionHeading.FindAllStringSubmatchIndex(body, -1)
	for i, l := range locs {
		name := body[l[2]:l[3]]
		end := len(body)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		}
		text := strings.Trim(body[l[1]:end], "\n")
		switch name {
		case secPrompts:
			ps, left := prose.ParsePrompts(text)
			x.prompts = append(x.prompts, ps...)
			x.leftOut += left
		case secEarlier:
			x.addEarlier(prose.Unindent(text))
		case secLast:
			x.last = prose.Unindent(text)
		case secCommands:
			x.commands = append(x.commands, prose.NonEmptyLines(text)...)
		case secErrors:
			x.errors = append(x.errors, prose.NonEmptyLines(text)...)
		case secFiles, secDecisions:
			x.carried[name] = append(x.carried[name], prose.NonEmptyLines(text)...)
		case secOpen:
			for _, l := range prose.NonEmptyLines(text) {
				if it, ok := strings.CutPrefix(l, "- "); ok {
					x.open = append(x.open, openItem{it, prose.DistinctWords(it)})
				}
			}
		case secState:
			x.carried[name] = []string{text}
		}
	}
}

// unwrapCollapsed returns the summary a collapse's message holds inside its
// <collapsed id="…"> wrapper, so that an extractive one is carried section by section like an
// earlier compaction's; any other text is returned as it is.
func unwrapCollapsed(text string) string {
	if !strings.HasPrefix(text, "<collapsed id=\"") || !strings.HasSuffix(text, "\n</collapsed>") {
		return text
	}
	_, inner, ok := strings.Cut(text, ">\n")
	if !ok {
		return text
	}
	return strings.TrimSpace(strings.TrimSuffix(inner, "\n</collapsed>"))
}

// addEarlier adds a foreign earlier summary, or an extractive one's Earlier summary section,
// after those already carried.
func (x *extraction) addEarlier(s string) {
	if x.earlier != "" {
		x.earlier += "\n\n"
	}
	x.earlier += s
}
