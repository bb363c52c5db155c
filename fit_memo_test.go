package agentctx

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentctx/agentctx/transcript"

	"github.com/agentctx/agentctx/internal/memo"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fitTK is a session of rounds response pairs whose usage grows by the counted size of each
// round times ratio(i), so that every pair weighs differently in the fit.
func fitTK(t *testing.T, rounds int, ratio func(i int) float64) *tk {
	k := newTK()
	p := newTestPipeline(t, Config{}, k.t0)
	prompt := 0
	for i := range rounds {
		u := k.user(fmt.Sprintf("question %d: %s", i, strings.Repeat("tell me about the parser and its lexer. ", 5+i%7)))
		prompt += int(float64(p.counter.Record(u)) * ratio(i))
		a := k.assistant(text(fmt.Sprintf("answer %d: %s", i, strings.Repeat("the lexer reads tokens one by one. ", 4+i%5))))
		a.Message.Usage = &transcript.Usage{InputTokens: prompt, OutputTokens: int(float64(p.counter.Record(a)) * ratio(i))}
		prompt += a.Message.Usage.OutputTokens
	}
	return k
}

// TestFitMemoTurns prepares a sequence of transcripts on one Pipeline and checks that each
// turn's pressure figure (the fitted ratio and its source among it) is the one a fresh Pipeline
// finds: pairs appended, the same records again, a rewind to an earlier response and another
// one written there, the records decoded again, another session copied into the same slice
// (the same record addresses, other records), and the first session again.
func TestFitMemoTurns(t *testing.T) {
	k := fitTK(t, 24, func(i int) float64 { return 1 + float64(i%5)/8 })
	other := fitTK(t, 24, func(i int) float64 { return 1.5 - float64(i%3)/10 })
	full := k.recs
	// live is the caller's slice, appended to in place as a runtime appends to its own; each
	// turn's prompt takes the slot after it.
	live := append(make([]transcript.Record, 0, len(full)+1), full[:24]...)
	prompt := func(recs []transcript.Record, q string) []transcript.Record {
		u := transcript.Record{Type: transcript.TypeUser, UUID: "prompt-" + q, ParentUUID: recs[len(recs)-1].UUID,
			Message: &transcript.Message{Role: transcript.RoleUser, StringContent: true, Content: []transcript.Block{text(q)}}}
		return append(recs, u)
	}
	// rewound is full up to round 15, with round 15's response written again with other usage.
	rewound := func() []transcript.Record {
		live = live[:31]
		a := full[31]
		m := *a.Message
		m.Usage = &transcript.Usage{InputTokens: m.Usage.InputTokens / 2, OutputTokens: m.Usage.OutputTokens}
		a.UUID, a.Message = "rewound", &m
		return append(live, a)
	}
	// buffer is one slice that holds the first session and then the other one.
	buffer := slices.Clone(full)
	turns := []struct {
		name string
		recs func() []transcript.Record
	}{
		{"half", func() []transcript.Record { return prompt(live, "half") }},
		{"all", func() []transcript.Record { live = append(live, full[24:]...); return prompt(live, "all") }},
		{"all again", func() []transcript.Record { return prompt(live, "again") }},
		{"rewound", func() []transcript.Record { return prompt(rewound(), "rewound") }},
		{"all after the rewind", func() []transcript.Record { live = append(live[:31], full[31:]...); return prompt(live, "back") }},
		{"decoded again", func() []transcript.Record { return prompt(roundTrip(t, full), "decoded") }},
		{"buffer: first session", func() []transcript.Record { return buffer }},
		{"buffer: other session", func() []transcript.Record { copy(buffer, other.recs); return buffer }},
		{"buffer: first again, half", func() []transcript.Record { copy(buffer, full); return buffer[:30] }},
		{"all at last", func() []transcript.Record { return prompt(live, "last") }},
	}
	cfg := Config{Model: "claude-sonnet-4-5", ContextWindow: 1_000_000}
	now := k.t0.Add(time.Hour)
	p := newTestPipeline(t, cfg, now)
	for _, tt := range turns {
		got, want := prepareWarmAndFresh(t, p, cfg, now, tt.recs())
		require.Contains(t, want.Report.Pressure.RatioSource, "fitted", tt.name)
		assert.Equal(t, want.Report.Pressure, got.Report.Pressure, tt.name)
	}
}

// TestFitMemoConcurrent prepares the turns of more conversations than the memo keeps at once
// on one Pipeline, each conversation appending to its own slice, and checks every turn's
// pressure figure against a fresh Pipeline's.
func TestFitMemoConcurrent(t *testing.T) {
	const convs, rounds = memo.ConvEntries + 3, 12
	cfg := Config{Model: "claude-sonnet-4-5", ContextWindow: 1_000_000}
	sessions := make([]*tk, convs)
	for c := range convs {
		sessions[c] = fitTK(t, rounds, func(i int) float64 { return 1 + float64((i+c)%6)/7 })
	}
	now := sessions[0].t0.Add(time.Hour)
	p := newTestPipeline(t, cfg, now)
	var wg sync.WaitGroup
	errs := make([]error, convs)
	for c := range convs {
		wg.Go(func() {
			full := sessions[c].recs
			live := make([]transcript.Record, 0, len(full))
			for turn := 4; turn <= rounds; turn++ {
				live = append(live, full[len(live):2*turn]...)
				got, err := p.Prepare(t.Context(), Input{Records: live})
				if err != nil {
					errs[c] = err
					return
				}
				want, err := newTestPipeline(t, cfg, now).Prepare(t.Context(), Input{Records: live})
				if err != nil {
					errs[c] = err
					return
				}
				if got.Report.Pressure != want.Report.Pressure {
					errs[c] = fmt.Errorf("conversation %d, turn %d: pressure %+v, want %+v", c, turn, got.Report.Pressure, want.Report.Pressure)
					return
				}
			}
		})
	}
	wg.Wait()
	for c := range convs {
		require.NoError(t, errs[c], "conversation %d", c)
	}
}

// TestFitMemoBudgetReplacements runs a live session whose large tool results the budget
// replaces, each replacement recorded before the response after it: the fit counts those
// results as their previews, and a warm Pipeline that sums only the new pairs finds each
// turn's figure as a fresh one does, a rewind to before a replacement included.
func TestFitMemoBudgetReplacements(t *testing.T) {
	cfg := Config{Model: "claude-sonnet-4-5", ContextWindow: 1_000_000,
		Budget: BudgetConfig{MaxResultChars: 1000, PreviewBytes: 100, Store: &MapStore{}}}
	k := newTK()
	now := k.t0.Add(24 * time.Hour)
	p := newTestPipeline(t, cfg, now)
	counter := newTestPipeline(t, cfg, now).counter
	live := make([]transcript.Record, 0, 256)
	context := 0 // the provider's count of the context so far
	var rewindAt int
	for round := range 12 {
		if round == 7 {
			rewindAt = len(live)
		}
		ratio := 1.1 + float64(round%4)/10
		from := len(k.recs)
		u := k.user(fmt.Sprintf("question %d: %s", round, strings.Repeat("look at the build log and tell me what failed. ", 8+round%4)))
		tu := toolUse(fmt.Sprintf("toolu_%02d", round), "Bash")
		k.assistant(text("Running it: "+strings.Repeat("the build step. ", 10)), tu)
		written := 0 // the response's two records
		for i := len(k.recs) - 2; i < len(k.recs); i++ {
			written += counter.Record(&k.recs[i])
		}
		usage := &transcript.Usage{InputTokens: context + int(float64(counter.Record(u))*ratio), OutputTokens: int(float64(written) * ratio)}
		for i := len(k.recs) - 2; i < len(k.recs); i++ {
			k.recs[i].Message.Usage = usage // every record of a split response carries its usage
		}
		context = usage.InputTokens + usage.OutputTokens
		out := strings.Repeat("step ok: compiled the package and ran its tests.\n", 6)
		if round%3 == 0 {
			out = strings.Repeat("a long log line the budget replaces by its preview.\n", 120) // over MaxResultChars
		}
		res := k.results(result(tu.ID, out))
		live = append(live, k.recs[from:]...)

		got, want := prepareWarmAndFresh(t, p, cfg, now, live)
		assert.Equal(t, want.Report.Pressure, got.Report.Pressure, "round %d", round)
		// The turn's decisions are recorded before the next response, as a runtime appends
		// Result.Append; the provider is sent the preview from then on.
		live = append(live, want.Append...)
		k.recs = append(k.recs, want.Append...)
		if len(want.Append) > 0 {
			k.last = want.Leaf
		}
		from = len(k.recs)
		b := k.assistant(text(fmt.Sprintf("The log says %d: %s", round, strings.Repeat("all steps passed. ", 8))))
		b.Message.Usage = &transcript.Usage{InputTokens: context + int(float64(counter.Record(res))*ratio), OutputTokens: int(float64(counter.Record(b)) * ratio)}
		context = b.Message.Usage.InputTokens + b.Message.Usage.OutputTokens
		live = append(live, k.recs[from:]...)
	}
	got, want := prepareWarmAndFresh(t, p, cfg, now, live)
	require.Contains(t, want.Report.Pressure.RatioSource, "fitted")
	assert.Equal(t, want.Report.Pressure, got.Report.Pressure, "the whole session")
	require.NotEmpty(t, budgetDecisions(live), "the budget replaced results")

	// A rewind in place to round 7, the later replacements gone with it.
	live = live[:rewindAt]
	got, want = prepareWarmAndFresh(t, p, cfg, now, live)
	assert.Equal(t, want.Report.Pressure, got.Report.Pressure, "rewound")
}
