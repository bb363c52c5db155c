package prose

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"
)

// Bounds of one user message in the summary, in characters: the newest one gets up to a
// quarter of the budget; each older one what it needs, within its part of the rest (see
// RenderPrompts), at least MinPromptChars and at most MaxPromptChars.
const (
	MinPromptChars = 80
	MaxPromptChars = 1_500
)

var (
	promptEntry = regexp.MustCompile(`^\d+\. `)
	leftOutNote = regexp.MustCompile(`^\((\d+) earlier user messages left out`)
)

// leftOutText says how many of the oldest user messages a summary leaves out.
const leftOutText = "(%d earlier user messages left out to fit; the transcript keeps them.)"

// ParsePrompts reads back the user messages of an extractive summary — numbered entries, each
// continued on lines indented by three spaces — and how many it had left out.
func ParsePrompts(text string) ([]string, int) {
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

// PromptsNeed returns the characters RenderPrompts takes to list prompts in full (each older
// one within MaxPromptChars, the newest within newestMax); left is the number of older
// messages already left out.
func PromptsNeed(prompts []string, left, newestMax int) int {
	if len(prompts) == 0 {
		return 0
	}
	n := min(quotedSize(prompts[len(prompts)-1]), newestMax) + promptLineCost
	for _, p := range prompts[:len(prompts)-1] {
		n += min(quotedSize(p), MaxPromptChars) + promptLineCost
	}
	if left > 0 {
		n += utf8.RuneCountInString(fmt.Sprintf(leftOutText, left)) + 1
	}
	return n
}

// RenderPrompts numbers the user messages within budget characters (see Summarize), the
// newest within newestMax; left is the number of older messages already left out. It returns
// the lines, and for each the index of the prompt it quotes in full, or -1 (the note saying
// how many were left out, or a prompt it cut).
func RenderPrompts(prompts []string, left, budget, newestMax int) (lines []string, at []int) {
	if len(prompts) == 0 {
		return nil, nil
	}
	older := prompts[:len(prompts)-1]
	olderNeed := 0
	for _, p := range older {
		olderNeed += min(quotedSize(p), MaxPromptChars) + promptLineCost
	}
	newest, newestFull := quote(prompts[len(prompts)-1], min(newestMax, max(budget/2, budget-olderNeed-promptLineCost)))
	rest := budget - utf8.RuneCountInString(newest) - promptLineCost
	drop := 0
	if len(older) > 0 {
		note := utf8.RuneCountInString(fmt.Sprintf(leftOutText, 999_999)) + 1 // says how many went
		if left > 0 {
			rest -= note
		}
		floor := func(p string) int { return min(utf8.RuneCountInString(p), MinPromptChars) + promptLineCost }
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
	c := CutMiddle(p, n)
	q := strings.ReplaceAll(c, "\n", "\n   ")
	if over := utf8.RuneCountInString(q) - n; over > 0 {
		c = CutMiddle(p, max(n-over, 0))
		q = strings.ReplaceAll(c, "\n", "\n   ")
	}
	return q, c == p
}

// sharePrompts divides rest characters among prompts by need: taken shortest first, each gets
// what it needs (at most MaxPromptChars) within an equal part of what is left, and at least
// MinPromptChars (or all of a shorter one).
func sharePrompts(prompts []string, rest int) []int {
	need := make([]int, len(prompts))
	order := make([]int, len(prompts))
	for i, p := range prompts {
		need[i], order[i] = min(quotedSize(p), MaxPromptChars), i
	}
	slices.SortStableFunc(order, func(a, b int) int { return need[a] - need[b] })
	parts := make([]int, len(prompts))
	left := rest - len(prompts)*promptLineCost
	for k, i := range order {
		parts[i] = max(min(need[i], left/(len(prompts)-k)), min(need[i], MinPromptChars))
		left -= parts[i]
	}
	return parts
}
