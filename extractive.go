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
// full, older ones cut in the middle to fit the budget: see [Extractive.Summarize]), what the
// user decided, confirmed or ruled, the files read, edited and written, the commands run and
// which failed, the errors met and what came right after each, the last plan and todo list,
// what the assistant said it would do later and has not shown done, and the last thing the
// assistant said. A summary of an earlier compaction at the start of the view is carried over:
// merged section by section when Extractive wrote it, kept as it is (cut to its share)
// otherwise.
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

// Bounds of one user message in the summary, in characters: the newest one gets up to a
// quarter of the budget; each older one what it needs, within its part of the rest (see
// renderPrompts), at least minPromptChars and at most maxPromptChars.
const (
	minPromptChars = 80
	maxPromptChars = 1_500
)

// Summarize writes the summary of req.View within about req.MaxOutputTokens tokens (three
// characters a token), and within half the characters of the view's text (an earlier summary
// counted whole), so that the summary of a short conversation is shorter than it. Each section has a share of that budget, and passes what it does not
// need on to the sections that need more. User messages are listed oldest first, numbered;
// a message longer than its part is cut in the middle, its head and tail kept and the cut
// marked, each older message getting what it needs within an equal part of what the shorter
// ones leave (between 80 and 1,500 characters), and when even 80 characters each do not fit,
// the oldest are left out and a line says how many. What a message cut or left out decided,
// confirmed or ruled stays in the Decisions section. It never fails on a non-empty view.
func (e Extractive) Summarize(ctx context.Context, req SummaryRequest) (Summary, error) {
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
	alloc := allot(needs, shares, budget)
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
		fmt.Fprintf(&b, "\n## %s\n%s\n", secCustom, neutralTags.Replace(indent(strings.TrimSpace(req.Custom))))
	}
	b.WriteString("</summary>")
	return Summary{Text: b.String(), By: "extractive"}, nil
}

// minBudgetChars is the smallest budget of an extractive summary, in characters.
const minBudgetChars = 1_500

// viewChars returns the characters of the text a view holds: its messages' text, tool inputs
// and tool results; an earlier summary's count twice, so that half the figure carries it whole.
func viewChars(view []ViewMessage) int {
	n := 0
	for _, m := range view {
		if m.Source == ViewCompactSummary {
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
				n += len(resultContent(b))
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
		return draft{need, func(n int) string { return fitLines(lines, n) }}
	}
	text := func(s string) draft {
		if s == "" {
			return draft{}
		}
		return draft{utf8.RuneCountInString(indent(s)) + 1, func(n int) string { return indent(cutChars(s, n-1)) + "\n" }}
	}
	newest := budget / 4
	var shown []bool // shown[i]: prompt i is quoted in full
	prompts := draft{need: promptsNeed(x.prompts, x.leftOut, newest), render: func(n int) string {
		lines, at := renderPrompts(x.prompts, x.leftOut, n, newest)
		body, dropped := fitLinesN(lines, n)
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
	decisions.render = func(n int) string { return fitLines(x.decisionLines(shown), n) }
	files := list(x.files())
	files.render = func(n int) string { return fitLines(x.filesWithin(n), n) }
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
						x.said(t)
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
					status = "failed: " + oneLine(out, 80)
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
		lines = append(lines, "Plan:\n"+indent(cutChars(plan, 4_000)))
	}
	if todos != "" {
		lines = append(lines, "Todo list:\n"+indent(todos))
	}
	return lines
}

// sectionHeading matches the headings of an extractive summary's sections; every other line of
// a section is indented or starts with "- " or a number, so quoted text never looks like one.
var sectionHeading = regexp.MustCompile(`(?m)^## (` + strings.Join([]string{secEarlier, secPrompts, secDecisions, secFiles, secCommands, secErrors, secState, secOpen, secLast, secCustom}, "|") + `)$`)

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
		case secFiles, secCommands, secErrors, secDecisions:
			x.carried[name] = append(x.carried[name], nonEmptyLines(text)...)
		case secOpen:
			for _, l := range nonEmptyLines(text) {
				if it, ok := strings.CutPrefix(l, "- "); ok {
					x.open = append(x.open, openItem{it, distinctWords(it)})
				}
			}
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

// promptLineCost is what a listed user message costs besides its text: its number, a cut mark
// and a newline.
const promptLineCost = 8

// promptsNeed returns the characters renderPrompts takes to list prompts in full (each older
// one within maxPromptChars, the newest within newestMax); left is the number of older
// messages already left out.
func promptsNeed(prompts []string, left, newestMax int) int {
	if len(prompts) == 0 {
		return 0
	}
	n := min(quotedSize(prompts[len(prompts)-1]), newestMax) + promptLineCost
	for _, p := range prompts[:len(prompts)-1] {
		n += min(quotedSize(p), maxPromptChars) + promptLineCost
	}
	if left > 0 {
		n += utf8.RuneCountInString(fmt.Sprintf(leftOutText, left)) + 1
	}
	return n
}

// renderPrompts numbers the user messages within budget characters (see Summarize), the
// newest within newestMax; left is the number of older messages already left out. It returns
// the lines, and for each the index of the prompt it quotes in full, or -1 (the note saying
// how many were left out, or a prompt it cut).
func renderPrompts(prompts []string, left, budget, newestMax int) (lines []string, at []int) {
	if len(prompts) == 0 {
		return nil, nil
	}
	older := prompts[:len(prompts)-1]
	olderNeed := 0
	for _, p := range older {
		olderNeed += min(quotedSize(p), maxPromptChars) + promptLineCost
	}
	newest, newestFull := quote(prompts[len(prompts)-1], min(newestMax, max(budget/2, budget-olderNeed-promptLineCost)))
	rest := budget - utf8.RuneCountInString(newest) - promptLineCost
	drop := 0
	if len(older) > 0 {
		note := utf8.RuneCountInString(fmt.Sprintf(leftOutText, 999_999)) + 1 // says how many went
		if left > 0 {
			rest -= note
		}
		floor := func(p string) int { return min(utf8.RuneCountInString(p), minPromptChars) + promptLineCost }
		total := 0
		for _, p := range older {
			total += floor(p)
		}
		if total > rest {
			if left == 0 {
				rest -= note
			}
			for drop < len(older) && total > rest {
				total -= floor(older[drop])
				drop++
			}
			left += drop
		}
	}
	parts := sharePrompts(older[drop:], rest)
	if left > 0 {
		lines, at = append(lines, fmt.Sprintf(leftOutText, left)), append(at, -1)
	}
	add := func(i int, q string, full bool) {
		lines = append(lines, fmt.Sprintf("%d. %s", len(lines)+1-min(left, 1), q))
		if !full {
			i = -1
		}
		at = append(at, i)
	}
	for i, p := range older[drop:] {
		q, full := quote(p, parts[i])
		add(drop+i, q, full)
	}
	add(len(prompts)-1, newest, newestFull)
	return lines, at
}

// quotedSize is the size of a user message quoted whole: its continuation lines are indented.
func quotedSize(p string) int { return utf8.RuneCountInString(p) + 3*strings.Count(p, "\n") }

// quote returns a user message as a numbered entry shows it, cut in the middle to about n
// characters with its continuation lines indented, and whether it is whole.
func quote(p string, n int) (string, bool) {
	c := cutMiddle(p, n)
	q := strings.ReplaceAll(c, "\n", "\n   ")
	if over := utf8.RuneCountInString(q) - n; over > 0 {
		c = cutMiddle(p, max(n-over, 0))
		q = strings.ReplaceAll(c, "\n", "\n   ")
	}
	return q, c == p
}

// sharePrompts divides rest characters among prompts by need: taken shortest first, each gets
// what it needs (at most maxPromptChars) within an equal part of what is left, and at least
// minPromptChars (or all of a shorter one).
func sharePrompts(prompts []string, rest int) []int {
	need := make([]int, len(prompts))
	order := make([]int, len(prompts))
	for i, p := range prompts {
		need[i], order[i] = min(quotedSize(p), maxPromptChars), i
	}
	slices.SortStableFunc(order, func(a, b int) int { return need[a] - need[b] })
	parts := make([]int, len(prompts))
	left := rest - len(prompts)*promptLineCost
	for k, i := range order {
		parts[i] = max(min(need[i], left/(len(prompts)-k)), min(need[i], minPromptChars))
		left -= parts[i]
	}
	return parts
}

// allot divides budget among sections by need: each section's part of what is left follows
// its share; a section that needs less than its part takes what it needs, and the rest goes
// to the others in proportion to their shares.
func allot(needs, shares []int, budget int) []int {
	alloc := make([]int, len(needs))
	open := make([]bool, len(needs))
	for i, n := range needs {
		open[i] = n > 0
	}
	for {
		total := 0
		for i, o := range open {
			if o {
				total += shares[i]
			}
		}
		if total == 0 {
			return alloc
		}
		settled := false
		for i, o := range open {
			if o && needs[i]*total <= budget*shares[i] {
				alloc[i], open[i], settled = needs[i], false, true
				budget -= needs[i]
			}
		}
		if !settled {
			for i, o := range open {
				if o {
					alloc[i] = budget * shares[i] / total
				}
			}
			return alloc
		}
	}
}

// fitLines joins lines within budget characters, leaving out the oldest (first) lines with a
// note when they do not all fit.
func fitLines(lines []string, budget int) string {
	s, _ := fitLinesN(lines, budget)
	return s
}

// fitLinesN is fitLines, and the number of lines it left out.
func fitLinesN(lines []string, budget int) (string, int) {
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
	return b.String(), from
}

// cutChars cuts s to at most n characters, marking a cut with "…".
func cutChars(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return strings.TrimRight(string(r[:max(n-1, 0)]), " \n") + "…"
}

// cutMark replaces the middle of a user message cut to fit.
const cutMark = " [… %d characters left out here …] "

// cutMiddle cuts s to about n characters by leaving out its middle: the head (three fifths)
// and the tail stay, and a mark says how much went. When that would keep less than 120
// characters it cuts the end instead (cutChars), so that a message keeps at least the head
// that names it.
func cutMiddle(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	keep := n - utf8.RuneCountInString(fmt.Sprintf(cutMark, len(r)))
	if keep < 120 {
		return cutChars(s, n)
	}
	head, tail := keep*3/5, keep-keep*3/5
	from := len(r) - tail
	// The tail starts at a word when one starts soon.
	for i := from; i < len(r) && i < from+20; i++ {
		if r[i] == ' ' || r[i] == '\n' {
			from = i + 1
			break
		}
	}
	h := strings.TrimRight(string(r[:head]), " \n")
	return h + fmt.Sprintf(cutMark, len(r)-head-(len(r)-from)) + strings.TrimLeft(string(r[from:]), " \n")
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
