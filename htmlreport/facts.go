package htmlreport

import (
	"encoding/json"
	"path"
	"strings"

	"github.com/agentctx/agentctx/internal/prose"
	"github.com/agentctx/agentctx/provider"
	"github.com/agentctx/agentctx/transcript"
)

// The kinds of fact the compaction check looks for, and how many of the latest of each it
// keeps.
const (
	factPrompt   = "prompt"
	factDecision = "decision"
	factFile     = "file"
	factError    = "error"
	factCommand  = "command"
	factsEach    = 25
	factChars    = 60
)

// checkFacts lists what the messages a compaction replaced (before: the request of the turn
// before it) named by name — the user's prompts and decisions (the sentences the extractive
// summary's cue reads as a decision, confirmation or rule: see [prose.UserDecision]), the files
// the tools touched, the errors they returned, the commands they ran — and says for each whether the summary names it, or else
// the compacted request (after: its kept tail, re-read files, pinned content), or neither: a
// planted-fact check run on the session's own facts.
func checkFacts(before []provider.Message, summary string, after []provider.Message) []fact {
	found := map[string][]string{}
	seen := map[string]bool{}
	add := func(kind, text string) {
		text = strings.TrimSpace(text)
		if len([]rune(text)) < 4 || seen[kind+"\x00"+text] {
			return
		}
		seen[kind+"\x00"+text] = true
		found[kind] = append(found[kind], text)
	}
	for _, m := range before {
		for _, b := range m.Content {
			switch b := b.(type) {
			case *transcript.Text:
				if m.Role == transcript.RoleUser && !prose.TypedOutput(b.Text) {
					add(factPrompt, firstLine(b.Text))
					for _, d := range prose.Matching(b.Text, prose.UserDecision) {
						add(factDecision, firstLine(d))
					}
				}
			case *transcript.ToolUse:
				var in map[string]any
				if json.Unmarshal(b.Input, &in) != nil {
					continue
				}
				for _, k := range []string{"file_path", "path", "notebook_path"} {
					if s, ok := in[k].(string); ok {
						add(factFile, s)
					}
				}
				if s, ok := in["command"].(string); ok {
					add(factCommand, firstLine(s))
				}
			case *transcript.ToolResult:
				if b.IsError {
					add(factError, firstLine(resultText(b)))
				}
			}
		}
	}
	sum := squash(summary)
	var rest strings.Builder
	for _, m := range after {
		for _, b := range m.Content {
			switch b := b.(type) {
			case *transcript.Text:
				if b.Text != summary {
					rest.WriteString(b.Text)
				}
			case *transcript.ToolUse:
				rest.Write(b.Input)
			case *transcript.ToolResult:
				rest.WriteString(resultText(b))
			}
			rest.WriteByte('\n')
		}
	}
	kept := squash(rest.String())
	var out []fact
	for _, kind := range []string{factPrompt, factDecision, factFile, factError, factCommand} {
		list := found[kind]
		list = list[max(0, len(list)-factsEach):]
		for _, text := range list {
			needles := []string{squash(text)}
			if kind == factFile {
				needles = append(needles, squash(path.Base(text)))
			}
			f := fact{Kind: kind, Text: visible(text)}
			switch {
			case containsAny(sum, needles):
				f.Where = "summary"
			case containsAny(kept, needles):
				f.Where = "kept"
			}
			out = append(out, f)
		}
	}
	return out
}

// firstLine is the first non-blank line of s, cut to factChars characters at a word.
func firstLine(s string) string {
	for l := range strings.Lines(s) {
		if l = strings.TrimSpace(l); l != "" {
			s = l
			break
		}
	}
	r := []rune(s)
	if len(r) <= factChars {
		return s
	}
	cut := string(r[:factChars])
	if i := strings.LastIndexByte(cut, ' '); i > factChars/2 {
		cut = cut[:i]
	}
	return cut
}

// squash lowercases s and folds its runs of white space to one space, so that a fact matches
// however the summary wraps it.
func squash(s string) string {
	return strings.Join(strings.Fields(strings.ToLower(s)), " ")
}

// containsAny reports whether s contains one of the needles.
func containsAny(s string, needles []string) bool {
	for _, n := range needles {
		if n != "" && strings.Contains(s, n) {
			return true
		}
	}
	return false
}
