package prose

import (
	"regexp"
	"slices"
	"strings"
	"unicode"
)

// NoteChars bounds one listed sentence, in characters.
const NoteChars = 300

// notesPerMessage bounds the sentences one message gives a section: the first and the last
// ones when it has more.
const notesPerMessage = 4

// A Cue is a wording matched sentence by sentence: re matches a sentence, and every sentence
// it matches holds one of words (lower-cased), which rules out most texts at the cost of a
// substring search.
type Cue struct {
	re    *regexp.Regexp
	words []string
}

// UserDecision matches a sentence in which the user decides, confirms or sets a rule: a
// confirmation that opens it, a choice, or a directive (never, must, has to, only … may, no
// new …, leave … alone).
var UserDecision = Cue{regexp.MustCompile(`(?i)^(yes|yeah|yep|ok|okay|sure|right|fine|great|perfect|confirmed|agreed|approved|correct|exactly|sounds good|go ahead|lgtm)\b|` +
	`\b(go with|go for|let'?s (use|go|do|keep|drop|switch|stick|try)|i'?ve decided|i have decided|we'?ve decided|we have decided|i decided|we decided|decided to|we'?ll (use|go|keep|drop)|instead of|i prefer|prefer to|it is:|` +
	`never|always|must|do not|don'?t|should ?n[o']t|make sure|avoid|from now on|only use|keep (it|them|the|every|all|this)|` +
	`(has|have|needs?) to (stay|be|keep|remain|use|go)|no (new|more|breaking|further|extra)|no \w+ changes|` +
	`only\b.{1,40}\b(may|can|should)|nothing\b.{1,40}\bshould|leave\b.{1,40}\b(off|alone|as is|untouched))\b`),
	[]string{"yes", "yeah", "yep", "ok", "sure", "right", "fine", "great", "perfect", "confirmed", "agreed", "approved", "correct",
		"exactly", "sounds good", "go ahead", "lgtm", "go with", "go for", "let", "decided", "we'll", "well", "instead of", "prefer",
		"it is:", "never", "always", "must", "do not", "don", "should", "make sure", "avoid", "from now on", "only", "keep",
		" to ", "no ", "nothing", "leave"}}

// Deferred matches a sentence in which the assistant puts work off for later, or says it is
// not done yet.
var Deferred = Cue{regexp.MustCompile(`(?i)\b(later|afterwards|after that|next step|next up|follow[- ]?up|at some point|` +
	`still (needs?|have to|has to|owe|to do|missing|lacks?)|left to do|remains? to be|(is|are|remains?|still) pending|pending:|come back|revisit|` +
	`i'?ll also|i will also|we'?ll also|i should also|i plan to|we plan to|` +
	`(not|n't) .{0,60}\byet\b|once .{1,80}\b(i'?ll|i will|we'?ll|we will)|todo:)`),
	[]string{"later", "afterwards", "after that", "next", "follow", "some point", "still", "left to do", "remain", "pending",
		"come back", "revisit", "ll also", "will also", "should also", "plan to", "yet", "once", "todo:"}}

// Completion matches a sentence that reports work done.
var Completion = Cue{regexp.MustCompile(`(?i)\b(done|added|updated|fixed|implemented|completed|removed|created|wrote|written|finished|resolved|committed)\b`),
	[]string{"done", "added", "updated", "fixed", "implemented", "completed", "removed", "created", "wrote", "written", "finished", "resolved", "committed"}}

// Sentences splits text into sentences: at line ends and after ".", "!" or "?" followed by a
// space. Fenced code blocks are left out.
func Sentences(text string) []string {
	var out []string
	fence := false
	for line := range strings.SplitSeq(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fence = !fence
			continue
		}
		if fence {
			continue
		}
		start := 0
		for i := 0; i < len(line); i++ {
			if c := line[i]; (c == '.' || c == '!' || c == '?') && (i+1 == len(line) || line[i+1] == ' ') {
				out = appendSentence(out, line[start:i+1])
				start = i + 1
			}
		}
		out = appendSentence(out, line[start:])
	}
	return out
}

// appendSentence appends s without its list or heading marks, unless it is a table row or
// has fewer than four words.
func appendSentence(out []string, s string) []string {
	s = strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(s), "-*#>0123456789. "))
	if strings.HasPrefix(s, "|") || len(strings.Fields(s)) < 4 {
		return out
	}
	return append(out, OneLine(s, NoteChars))
}

// Matching returns the sentences of text that c matches, at most notesPerMessage: the first
// and the last ones when there are more.
func Matching(text string, c Cue) []string {
	lower := strings.ToLower(text)
	if !slices.ContainsFunc(c.words, func(w string) bool { return strings.Contains(lower, w) }) {
		return nil
	}
	var out []string
	for _, s := range Sentences(text) {
		if c.re.MatchString(s) {
			out = append(out, s)
		}
	}
	if len(out) > notesPerMessage {
		out = append(out[:notesPerMessage/2], out[len(out)-notesPerMessage/2:]...)
	}
	return out
}

// TypedOutput reports whether a user message is a command or its output echoed into the
// conversation (Claude Code's <command-name>, <bash-stdout> …) rather than prose.
func TypedOutput(text string) bool {
	return strings.HasPrefix(strings.TrimSpace(text), "<")
}

// ReportsDone reports whether a report of work done (lower-cased) names at least half of
// words, and at least two.
func ReportsDone(report string, words []string) bool {
	n := 0
	for _, w := range words {
		if strings.Contains(report, w) {
			n++
		}
	}
	return n >= 2 && 2*n >= len(words)
}

// DistinctWords returns the lower-cased words of s of five letters or more that are not
// common ones.
func DistinctWords(s string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_' }) {
		if len([]rune(w)) >= 5 && !commonWords[w] && !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	return out
}

// commonWords are the words DistinctWords passes over: the wording of putting work off.
var commonWords = map[string]bool{
	"later": true, "afterwards": true, "after": true, "still": true, "needs": true, "there": true, "their": true,
	"these": true, "those": true, "which": true, "would": true, "should": true, "could": true, "about": true,
	"again": true, "first": true, "follow": true, "remains": true, "where": true, "while": true, "other": true,
	"every": true, "because": true, "before": true, "being": true,
}
