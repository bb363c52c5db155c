package prose

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Indent indents every line of s by three spaces, the continuation indent of a section.
func Indent(s string) string { return "   " + strings.ReplaceAll(s, "\n", "\n   ") }

// Unindent undoes Indent.
func Unindent(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimPrefix(l, "   ")
	}
	return strings.Join(lines, "\n")
}

// Allot divides budget among sections by need: each section's part of what is left follows
// its share; a section that needs less than its part takes what it needs, and the rest goes
// to the others in proportion to their shares.
func Allot(needs, shares []int, budget int) []int {
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

// FitLines joins lines within budget characters, leaving out the oldest (first) lines with a
// note when they do not all fit.
func FitLines(lines []string, budget int) string {
	s, _ := FitLinesN(lines, budget)
	return s
}

// FitLinesN is FitLines, and the number of lines it left out.
func FitLinesN(lines []string, budget int) (string, int) {
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

// CutChars cuts s to at most n characters, marking a cut with "…".
func CutChars(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return strings.TrimRight(string(r[:max(n-1, 0)]), " \n") + "…"
}

// cutMark replaces the middle of a user message cut to fit.
const cutMark = " [… %d characters left out here …] "

// CutMiddle cuts s to about n characters by leaving out its middle: the head (three fifths)
// and the tail stay, and a mark says how much went. When that would keep less than 120
// characters it cuts the end instead (CutChars), so that a message keeps at least the head
// that names it.
func CutMiddle(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	keep := n - utf8.RuneCountInString(fmt.Sprintf(cutMark, len(r)))
	if keep < 120 {
		return CutChars(s, n)
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

// OneLine returns s on one line (whitespace runs become one space), cut to n characters.
func OneLine(s string, n int) string {
	return CutChars(strings.Join(strings.Fields(s), " "), n)
}

func NonEmptyLines(s string) []string {
	var out []string
	for l := range strings.SplitSeq(s, "\n") {
		if strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return out
}
