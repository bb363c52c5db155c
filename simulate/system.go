package simulate

import (
	"context"
	"strings"
	"sync"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/provider"
	"github.com/agentctx/agentctx/transcript"
)

// The sources of a [FixedPrefix].
const (
	// PrefixSystem: the system prompt of [Options.System].
	PrefixSystem = "system"
	// PrefixSystemTokens: a synthetic system prompt of [Options.SystemTokens] tokens.
	PrefixSystemTokens = "system_tokens"
	// PrefixEstimate: a synthetic system prompt of the size the file's first usage says its
	// requests lack ([Options.EstimatePrefix]).
	PrefixEstimate = "estimate"
)

// FixedPrefix is the system prompt every simulated request carried, standing for what a
// session file does not hold: the agent's system prompt and the part of its tool definitions
// the declared tools leave out.
type FixedPrefix struct {
	// Tokens is the prompt's counted size.
	Tokens int `json:"tokens"`
	// Source says where it came from: "system", "system_tokens" or "estimate".
	Source string `json:"source"`
	// FirstPrompt and FirstRequest are, for an estimate, the prompt the first response with
	// usage reported (input + cache read + cache write, provider tokens) and the counted size
	// of the request built for it without a system prompt. The estimate is the calibration
	// fit's intercept in counted tokens: the mean over the responses the ratio was fitted on
	// of reported prompt / [Calibration.Ratio] − counted request, at least 0 (on the first
	// response alone, FirstPrompt / Ratio − FirstRequest, when it is the only one).
	FirstPrompt  int `json:"first_prompt,omitzero"`
	FirstRequest int `json:"first_request,omitzero"`
}

// estimatePrefix is the fixed prefix the calibration's points say the file lacks (see
// [FixedPrefix]); none without a point.
func estimatePrefix(pts []calibrationPoint, cal *Calibration) FixedPrefix {
	fp := FixedPrefix{Source: PrefixEstimate}
	if len(pts) == 0 {
		return fp
	}
	fp.FirstPrompt, fp.FirstRequest = pts[0].reported, pts[0].counted
	fp.Tokens = max(0, intercept(pts, cal.Model, cal.Ratio))
	return fp
}

// systemSentences are the synthetic system prompt's text: instructions of the kind an agent's
// system prompt holds, in our own words. Each starts with a space or a line break, so that c
// counts them apart as it counts them together.
var systemSentences = []string{
	"You are a software engineering agent working in the user's repository.",
	" Read the code before you change it, and change only what the task needs.",
	" Prefer the project's existing conventions to your own.",
	" Run the tests that cover a change before you say it is done.",
	" When a command fails, read its output and fix the cause, not the symptom.",
	" Keep answers short: say what you did, what you found and what is left.",
	" Ask before you delete files, rewrite history or touch anything outside the repository.",
	" Never print secrets, keys or tokens, even when a file holds them.",
	" Use the tools to read, search and edit files rather than guessing their content.",
	" Quote file paths and line numbers when you refer to code.",
	"\nA tool call returns its result in the next user message; wait for it before you rely on it.",
	" Several independent calls may be made at once; calls that depend on each other go one after the other.",
	" Large outputs may be cut; ask for the part you need.",
	" A task list keeps track of multi-step work: update it as items start and finish.",
	"\n",
}

// syntheticSystem returns a system prompt of n tokens as c counts them, deterministic: the
// sentences of systemSentences in turn, then single-token words to make up the count. When
// c's count of the whole is not n (a counter that does not add up), the closest text found
// in a few corrections is returned.
func syntheticSystem(c *agentctx.Counter, n int) string {
	if n <= 0 {
		return ""
	}
	var b strings.Builder
	sum := 0
	for i := 0; ; i++ {
		s := systemSentences[i%len(systemSentences)]
		k := c.Text(s)
		if k <= 0 || sum+k > n {
			break
		}
		b.WriteString(s)
		sum += k
	}
	text := b.String()
	const pad = " ok" // one token
	for range 4 {
		got := c.Text(text)
		switch {
		case got < n:
			text += strings.Repeat(pad, n-got)
		case got > n && strings.HasSuffix(text, pad):
			cut := min(got-n, strings.Count(text, pad))
			for range cut {
				text = strings.TrimSuffix(text, pad)
			}
		default:
			return text
		}
	}
	return text
}

// systemTokens counts a system prompt's text blocks.
func systemTokens(c *agentctx.Counter, system []*transcript.Text) int {
	n := 0
	for _, t := range system {
		n += c.Text(t.Text)
	}
	return n
}

// fixedPrefix decides the system prompt every request carries and the calibration's conversion
// of counted tokens to provider tokens (see [Options]), and reports them in sim. records are the file's as the session ran
// — with its own compactions, also under [ReplayPolicy] — since its usage measured the
// requests built from them; points and groups are their responses (see [recordedResponses]).
func fixedPrefix(ctx context.Context, records []transcript.Record, points []int, groups map[int]*recordedResponse,
	cfg agentctx.Config, opts Options, tools []provider.Tool, c *agentctx.Counter, sim *Result) ([]*transcript.Text, scales, error) {
	// The tools' definitions counted, once, when the calibration's parts or the warm split
	// first need them.
	toolTokens := sync.OnceValue(func() int {
		n := 0
		for _, t := range tools {
			n += c.Text(string(t.Definition))
		}
		return n
	})
	estimate := opts.System == nil && opts.SystemTokens <= 0 && opts.EstimatePrefix
	cal := Calibration{Ratio: 1}
	var pts []calibrationPoint
	if opts.Calibrate || estimate {
		var err error
		if pts, err = firstRequests(ctx, records, cfg, tools, points, groups); err != nil {
			return nil, scales{}, err
		}
		cal = calibrate(pts)
		cal.Scaled = opts.Calibrate
		sim.Calibration = &cal
	}
	// scale converts counted tokens to provider tokens at the calibration: the replay's
	// figures are scaled by it with opts.Calibrate, and a warm start reads a first response's
	// cache read through it either way.
	scale := func(system []*transcript.Text) scales {
		s := scales{main: uniform(cal.Ratio)}
		if sim.Calibration == nil || len(cal.Models) == 0 {
			return s
		}
		tokens := toolTokens()
		sim.Calibration.fixParts(pts, tokens)
		if !opts.ResponseModels {
			return s
		}
		fixed := tokens + systemTokens(c, system)
		s.models = map[string]scaler{}
		for _, m := range sim.Calibration.Models {
			s.models[m.Model] = scaler{ratio: m.Ratio, fixed: fixed, fixedTo: float64(m.Fixed)}
		}
		return s
	}
	switch {
	case opts.System != nil:
		if n := systemTokens(c, opts.System); n > 0 {
			sim.FixedPrefix = &FixedPrefix{Tokens: n, Source: PrefixSystem}
		}
		return opts.System, scale(opts.System), nil
	case opts.SystemTokens > 0:
		sim.FixedPrefix = &FixedPrefix{Source: PrefixSystemTokens}
	case estimate:
		fp := estimatePrefix(pts, &cal)
		sim.FixedPrefix = &fp
	default:
		return nil, scale(nil), nil
	}
	n := opts.SystemTokens
	if sim.FixedPrefix.Source == PrefixEstimate {
		n = sim.FixedPrefix.Tokens
	}
	var system []*transcript.Text
	for _, k := range splitWarm(points, groups, toolTokens, cal.Ratio, n) {
		if text := syntheticSystem(c, k); text != "" {
			system = append(system, &transcript.Text{Text: text})
		}
	}
	sim.FixedPrefix.Tokens = systemTokens(c, system)
	return system, scale(system), nil
}

// splitWarm divides a synthetic system prompt of n counted tokens into the part the file's
// first response read from the cache and the rest, as a real agent's system prompt holds a
// part shared by its sessions (which an earlier session cached) and a part of its own (the
// working directory, the project's instructions): the first part is what that read covers
// beyond the tool definitions (toolTokens counts them), at ratio provider tokens per counted
// token. One part when the first response read nothing, or at least the whole prefix, or no
// more than the tools.
func splitWarm(points []int, groups map[int]*recordedResponse, toolTokens func() int, ratio float64, n int) []int {
	if len(points) == 0 {
		return []int{n}
	}
	u := groups[points[0]].usage
	if u == nil || u.CacheReadInputTokens <= 0 {
		return []int{n}
	}
	shared := int(float64(u.CacheReadInputTokens)/ratio) - toolTokens()
	if shared <= 0 || shared >= n {
		return []int{n}
	}
	return []int{shared, n - shared}
}
