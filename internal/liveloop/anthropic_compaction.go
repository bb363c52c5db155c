package liveloop

import (
	"encoding/json"
	"strings"
)

// compactEdit is the compact_20260112 edit of a request's context_management: the
// provider's server-side compaction, as the request asks for it.
type compactEdit struct {
	trigger int
	pause   bool
}

// compactEditOf reads the compaction edit from a request body's head; ok is false when the
// request asks for none. A trigger left out is the provider's default, 150,000 tokens.
func compactEditOf(head []byte) (e compactEdit, ok bool) {
	var b struct {
		ContextManagement *struct {
			Edits []struct {
				Type    string `json:"type"`
				Trigger *struct {
					Value int `json:"value"`
				} `json:"trigger"`
				Pause bool `json:"pause_after_compaction"`
			} `json:"edits"`
		} `json:"context_management"`
	}
	if json.Unmarshal(head, &b) != nil || b.ContextManagement == nil {
		return e, false
	}
	for _, ed := range b.ContextManagement.Edits {
		if ed.Type != "compact_20260112" {
			continue
		}
		e = compactEdit{trigger: 150_000, pause: ed.Pause}
		if ed.Trigger != nil {
			e.trigger = ed.Trigger.Value
		}
		return e, true
	}
	return e, false
}

// compactReply is the provider's answer to a request whose prompt passed the compaction
// edit's trigger, as Anthropic's documentation describes it: an extra sampling step
// summarizes the whole prompt (billed as the compaction iteration: u, the prompt's usage,
// and the summary as output), and the answer opens with a compaction block holding that
// summary. With pause, the answer ends there (stop_reason "compaction"); otherwise the
// model answers from the compacted context (the message iteration: the tools, the system
// prompt and the summary as input), and the top-level usage is that iteration's.
func (pv *fakeProvider) compactReply(p *prompt, u usage, fixed int, pause bool) (answer, usage) {
	summary := pv.model.summary(p.tokens, p.maxTokens)
	// The block holds the summary alone, without the model's draft.
	if _, after, ok := strings.Cut(summary, "<summary>\n"); ok {
		summary = strings.TrimSuffix(after, "</summary>")
	}
	sumTokens := pv.outputTokens(answer{text: summary})
	cu := u
	cu.output = sumTokens
	pv.mu.Lock()
	pv.stats.Compactions++
	pv.mu.Unlock()
	if pause {
		cu.iterations = []iteration{{kind: "compaction", usage: cu}}
		return answer{compaction: summary, stop: "compaction"}, cu
	}
	a, out := pv.reply(p)
	a.compaction = summary
	mu := usage{input: fixed + sumTokens, output: out}
	mu.iterations = []iteration{{kind: "compaction", usage: cu}, {kind: "message", usage: mu}}
	return a, mu
}

// iteration is one sampling step of an answer, in the usage's "iterations".
type iteration struct {
	kind  string
	usage usage
}

// anthropicIterations returns the usage's "iterations" member.
func anthropicIterations(its []iteration) []map[string]any {
	out := make([]map[string]any, len(its))
	for i, it := range its {
		out[i] = map[string]any{"type": it.kind, "input_tokens": it.usage.input, "cache_read_input_tokens": it.usage.cacheRead,
			"cache_creation_input_tokens": it.usage.cacheWrite, "output_tokens": it.usage.output}
	}
	return out
}
