package agentctx

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/agentctx/agentctx/transcript"
)

// Extractive is a [Summarizer] that calls no model: it builds the summary from the
// conversation's structure, deterministically — the same view always gives the same bytes. Its
// sections follow the library's summary prompt: every message the user typed (the newest in
// full, older ones cut to fit the budget: see [Extractive.Summarize]), the files read, edited
// and written, the commands run and which failed, the errors met and what came right after
// each, the last plan and todo list, and the last thing the assistant said. A summary of an
// earlier compaction at the start of the view is carried over: merged section by section when
// Extractive wrote it, kept as it is (cut to its share) otherwise.
//
// It is the command-line tool's summarizer and the default fallback of a model summarizer
// (see [CompactConfig]). Its zero value is ready to use and safe for concurrent use.
type Extractive struct{}

func (Extractive) windowless() {}

// isExtractive reports whether s is the extractive summarizer.
func isExtractive(s Summarizer) bool {
	switch s.(type) {
	case Extractive, *Extractive:
		return true
	}
	return false
}

// extractiveMark opens every summary Extractive writes, so a later compaction recognises one.
const extractiveMark = "This summary was extracted from the structure of the conversation, without a model: the user's messages are quoted, everything else is listed."

// The sections of an extractive summary, in order.
const (
	secEarlier  = "Earlier summary"
	secPrompts  = "User messages"
	secFiles    = "Files"
	secCommands = "Commands"
	secErrors   = "Errors and what followed"
	secState    = "Plan and todo list"
	secLast     = "Last assistant message"
)

// Shares of the summary's character budget, in percent.
var extractiveShares = map[string]int{
	secEarlier: 20, secPrompts: 45, secFiles: 10, secCommands: 8, secErrors: 8, secState: 5, secLast: 4,
}

// Bounds of one user message in the summary, in characters: the newest one gets up to half
// the messages' share; each older one gets an equal part of the rest, at least minPromptChars.
const (
	minPromptChars = 80
	maxPromptChars = 1_000
)

// Summarize writes the summary of req.View within about req.MaxOutputTokens tokens (three
// characters a token). User messages are listed oldest first, numbered; each older message is
// cut to an equal share of its section's budget (between 80 and 1,000 characters, "…" marking
// a cut) and when even 80 characters each do not fit, the oldest are left out and a line says
// how many. It never fails on a non-empty view.
func (e Extractive) Summarize(ctx context.Context, req SummaryRequest) (Summary, error) {
	if err := ctx.Err(); err != nil {
		return Summary{}, err
	}
	budget := max(req.MaxOutputTokens, 500) * 3
	x := extract(req.View)
	var b strings.Builder
	b.WriteString("<summary>\n" + extractiveMark + "\n")
	section := func(name string, lines []string) {
		if len(lines) == 0 {
			return
		}
		share := budget * extractiveShares[name] / 100
		fmt.Fprintf(&b, "\n## %s\n", name)
		b.WriteString(neutralTags.Replace(fitLines(lines, share)))
	}
	if x.earlier != "" {
		section(secEarlier, []string{indent(cutChars(x.earlier, budget*extractiveShares[secEarlier]/100))})
	}
	section(secPrompts, renderPrompts(x.prompts, x.leftOut, budget*extractiveShares[secPrompts]/100))
	section(secFiles, x.files())
	section(secCommands, x.commands)
	section(secErrors, x.errors)
	section(secState, x.state())
	if x.last != "" {
		section(secLast, []string{indent(cutChars(x.last, budget*extractiveShares[secLast]/100))})
	}
	if req.Omitted > 0 {
		fmt.Fprintf(&b, "\n(%d of the oldest messages were left out of this summary to fit; the transcript keeps them.)\n", req.Omitted)
	}
	if strings.TrimSpace(req.Custom) != "" {
		fmt.Fprintf(&b, "\n## %s\n%s\n", secCustom, neutralTags.Replace(indent(strings.TrimSpace(req.Custom))))
	}
	b.WriteString("</summary>")
	return Summary{Text: b.String(), By: "extractive"}, nil
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
}

// extract reads a view.
func extract(view []ViewMessage) *extraction {
	x := &extraction{carried: map[string][]string{}, reads: map[string]int{}, edits: map[string]int{}, writes: map[string]int{}}
	calls := map[string]*transcript.ToolUse{}
	pendingErr := -1 // index in x.errors of an error still waiting for what followed
	for _, m := range view {
		switch {
		case m.Source == ViewCompactSummary:
			x.carry(transcript.TextOf(m.Content))
			continue
		case m.Source != "":
			continue // base context, pinned content, collapse summaries, omission markers
		}
		if m.Role == transcript.RoleAssistant {
			for _, b := range m.Content {
				switch b := b.(type) {
				case *transcript.Text:
					if t := strings.TrimSpace(b.Text); t != "" {
						x.last = t
						if pendingErr >= 0 {
							x.errors[pendingErr] += " → then: " + oneLine(t, 200)
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
			out := strings.TrimSpace(resultContent(tr))
			if tu.Name == "Bash" {
				status := "ok"
				if tr.IsError {
					status = "failed: " + oneLine(out, 160)
				}
				x.commands = append(x.commands, fmt.Sprintf("- `%s` → %s", oneLine(inputString(tu.Input, "command"), 200), status))
			}
			if tr.IsError {
				x.errors = append(x.errors, fmt.Sprintf("- %s %s: %s", tu.Name, oneLine(callSubject(tu), 120), oneLine(out, 240)))
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
	path := inputString(tu.Input, "file_path", "notebook_path")
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
		if s := renderTodos(tu.Input); s != "" {
			x.todos = s
		}
	case "ExitPlanMode":
		if s := inputString(tu.Input, "plan"); s != "" {
			x.plan = s
		}
	}
}

// callSubject names what a tool call was about: its file, command, pattern or URL.
func callSubject(tu *transcript.ToolUse) string {
	return inputString(tu.Input, "file_path", "notebook_path", "command", "pattern", "url", "query", "skill")
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

// state lists the last plan and todo list.
func (x *extraction) state() []string {
	var lines []string
	plan, todos := x.plan, x.todos
	if plan == "" && todos == "" {
		return x.carried[secState]
	}
	if plan != "" {
		lines = append(lines, "Plan:\n"+indent(cutChars(plan, 4_000)))
	}
	if todos != "" {
		lines = append(lines, "Todo list:\n"+indent(todos))
	}
	return lines
}

// sectionHeading matches the headings of an extractive summary's sections; every other line of
// a section is indented or starts with "- " or a number, so quoted text never looks like one.
var sectionHeading = regexp.MustCompile(`(?m)^## (` + strings.Join([]string{secEarlier, secPrompts, secFiles, secCommands, secErrors, secState, secLast, secCustom}, "|") + `)$`)

// secCustom is the heading of the instructions an extractive summary was given.
const secCustom = "Instructions given for this summary"

// indent indents every line of s by three spaces, the continuation indent of a section.
func indent(s string) string { return "   " + strings.ReplaceAll(s, "\n", "\n   ") }

// unindent undoes indent.
func unindent(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimPrefix(l, "   ")
	}
	return strings.Join(lines, "\n")
}

// carry takes over an earlier compaction's summary: its sections when Extractive wrote it,
// else the whole text.
func (x *extraction) carry(message string) {
	body, err := extractSummary(message)
	if err != nil {
		body = strings.TrimSpace(message)
	}
	if !strings.HasPrefix(body, extractiveMark) {
		if x.earlier != "" {
			x.earlier += "\n\n"
		}
		x.earlier += body
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
			ps, left := parsePrompts(text)
			x.prompts = append(x.prompts, ps...)
			x.leftOut += left
		case secEarlier:
			x.earlier = unindent(text)
		case secLast:
			x.last = unindent(text)
		case secFiles, secCommands, secErrors:
			x.carried[name] = append(x.carried[name], nonEmptyLines(text)...)
		case secState:
			x.carried[name] = []string{text}
		}
	}
	x.commands = append(slices.Clone(x.carried[secCommands]), x.commands...)
	x.errors = append(slices.Clone(x.carried[secErrors]), x.errors...)
}

var (
	promptEntry = regexp.MustCompile(`^\d+\. `)
	leftOutNote = regexp.MustCompile(`^\((\d+) earlier user messages left out`)
)

// leftOutText says how many of the oldest user messages a summary leaves out.
const leftOutText = "(%d earlier user messages left out to fit; the transcript keeps them.)"

// parsePrompts reads back the user messages of an extractive summary — numbered entries, each
// continued on lines indented by three spaces — and how many it had left out.
func parsePrompts(text string) ([]string, int) {
	var out []string
	left := 0
	for line := range strings.SplitSeq(text, "\n") {
		switch {
		case promptEntry.MatchString(line):
			out = append(out, promptEntry.ReplaceAllString(line, ""))
		case strings.HasPrefix(line, "   ") && len(out) > 0:
			out[len(out)-1] += "\n" + line[3:]
		default:
			if m := leftOutNote.FindStringSubmatch(line); m != nil {
				n := 0
				fmt.Sscan(m[1], &n)
				left += n
			}
		}
	}
	return out, left
}

// renderPrompts numbers the user messages within budget characters (see Summarize); left is
// the number of older messages already left out.
func renderPrompts(prompts []string, left, budget int) []string {
	if len(prompts) == 0 {
		return nil
	}
	newest := cutChars(prompts[len(prompts)-1], budget/2)
	older := prompts[:len(prompts)-1]
	rest := budget - utf8.RuneCountInString(newest)
	// Each line costs its text plus its number, a cut mark and a newline.
	const lineCost = 8
	each := maxPromptChars
	if len(older) > 0 {
		note := utf8.RuneCountInString(fmt.Sprintf(leftOutText, 999_999)) + 1 // says how many went
		if left > 0 {
			rest -= note
		}
		if len(older)*(minPromptChars+lineCost) > rest {
			if left == 0 {
				rest -= note
			}
			fit := max(rest/(minPromptChars+lineCost), 0)
			drop := len(older) - fit
			left += drop
			older = older[drop:]
		}
		if len(older) > 0 {
			each = min(maxPromptChars, max(minPromptChars, rest/len(older)-lineCost))
		}
	}
	var lines []string
	if left > 0 {
		lines = append(lines, fmt.Sprintf(leftOutText, left))
	}
	for i, p := range append(slices.Clone(older), newest) {
		if i < len(older) {
			p = cutChars(p, each)
		}
		lines = append(lines, fmt.Sprintf("%d. %s", i+1, strings.ReplaceAll(p, "\n", "\n   ")))
	}
	return lines
}

// fitLines joins lines within budget characters, leaving out the oldest (first) lines with a
// note when they do not all fit.
func fitLines(lines []string, budget int) string {
	total := 0
	from := len(lines)
	for from > 0 {
		n := utf8.RuneCountInString(lines[from-1]) + 1
		if total+n > budget && from < len(lines) {
			break
		}
		total += n
		from--
	}
	var b strings.Builder
	if from > 0 {
		fmt.Fprintf(&b, "(%d earlier entries left out to fit.)\n", from)
	}
	for _, l := range lines[from:] {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.String()
}

// cutChars cuts s to at most n characters, marking a cut with "…".
func cutChars(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return strings.TrimRight(string(r[:max(n-1, 0)]), " \n") + "…"
}

// oneLine returns s on one line (whitespace runs become one space), cut to n characters.
func oneLine(s string, n int) string {
	return cutChars(strings.Join(strings.Fields(s), " "), n)
}

func nonEmptyLines(s string) []string {
	var out []string
	for l := range strings.SplitSeq(s, "\n") {
		if strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return out
}
