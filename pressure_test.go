package agentctx

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/agentctx/agentctx/summarize"

	"github.com/agentctx/agentctx/provider"

	"github.com/agentctx/agentctx/transcript"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDefaultLevels(t *testing.T) {
	tests := []struct {
		window, maxOut                                 int
		warning, threshold, blocking, effective, error int
	}{
		// Claude Code's figures for large windows.
		{200_000, 64_000, 147_000, 167_000, 177_000, 180_000, 147_000},
		{200_000, 8_192, 158_808, 178_808, 188_808, 191_808, 158_808},
		{1_000_000, 128_000, 947_000, 967_000, 977_000, 980_000, 947_000},
		{160_000, 64_000, 107_000, 127_000, 137_000, 140_000, 107_000},
		{104_000, 64_000, 58_000, 71_000, 81_000, 84_000, 58_000}, // the warning buffer is capped at window/8
		// Small windows scale the reserves instead of going negative.
		{30_000, 64_000, 15_000, 18_750, 21_563, 22_500, 15_000},
		{40_000, 64_000, 20_000, 25_000, 28_750, 30_000, 20_000},
		{2_000, 32_000, 1_000, 1_250, 1_438, 1_500, 1_000},
		{0, 0, 0, 0, 0, 0, 0},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d/%d", tt.window, tt.maxOut), func(t *testing.T) {
			l := DefaultLevels(tt.window, tt.maxOut)
			assert.Equal(t, tt.warning, l.Warning, "warning")
			assert.Equal(t, tt.error, l.Error, "error")
			assert.Equal(t, tt.threshold, l.Threshold, "threshold")
			assert.Equal(t, tt.blocking, l.Blocking, "blocking")
			assert.Equal(t, tt.effective, l.Effective, "effective")
			assert.Equal(t, tt.threshold, AutoCompactThreshold(tt.window, tt.maxOut))
			assert.True(t, 0 <= l.Warning && l.Warning <= l.Error && l.Error <= l.Threshold && l.Threshold <= l.Blocking && l.Blocking <= l.Effective && l.Effective <= l.Window)
		})
	}
}

func TestLevelsOf(t *testing.T) {
	l := DefaultLevels(200_000, 64_000)
	for tokens, want := range map[int]Level{0: LevelOK, 146_999: LevelOK, 147_000: LevelWarning, 166_999: LevelWarning,
		167_000: LevelCompact, 176_999: LevelCompact, 177_000: LevelBlocking, 500_000: LevelBlocking} {
		assert.Equal(t, want, l.Of(tokens), "%d", tokens)
	}
	l.Error = 160_000 // an error level above the warning level is its own level
	assert.Equal(t, LevelWarning, l.Of(159_999))
	assert.Equal(t, LevelError, l.Of(160_000))
}

func TestPressureConfigLevels(t *testing.T) {
	tests := []struct {
		name string
		cfg  PressureConfig
		want Levels
		err  string
	}{
		{"fraction threshold", PressureConfig{Threshold: Limit{Fraction: 0.5}},
			Levels{Window: 200_000, Effective: 180_000, Warning: 80_000, Error: 80_000, Threshold: 100_000, Blocking: 177_000}, ""},
		{"absolute threshold above the default blocking limit", PressureConfig{Threshold: Limit{Tokens: 190_000}},
			Levels{Window: 200_000, Effective: 180_000, Warning: 170_000, Error: 170_000, Threshold: 190_000, Blocking: 190_000}, ""},
		{"every level", PressureConfig{Warning: Limit{Tokens: 10}, Error: Limit{Tokens: 20}, Threshold: Limit{Tokens: 30}, Blocking: Limit{Fraction: 0.5}},
			Levels{Window: 200_000, Effective: 180_000, Warning: 10, Error: 20, Threshold: 30, Blocking: 100_000}, ""},
		{"out of order", PressureConfig{Blocking: Limit{Tokens: 1000}}, Levels{}, "out of order"},
		{"above the window", PressureConfig{Blocking: Limit{Tokens: 300_000}}, Levels{}, "out of order"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := New(Config{ContextWindow: 200_000, MaxOutputTokens: 64_000, Tokens: EstimateCounter{}, Pressure: tt.cfg})
			if tt.err != "" {
				assert.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, p.Levels())
		})
	}
	for _, bad := range []PressureConfig{{Threshold: Limit{Tokens: -1}}, {Warning: Limit{Fraction: 1.5}}, {Ratio: 5}, {DefaultRatio: 0.1}, {MinOutputTokens: -3}} {
		_, err := New(Config{ContextWindow: 200_000, Tokens: EstimateCounter{}, Pressure: bad})
		assert.Error(t, err, "%+v", bad)
	}
}

// usageTK builds a conversation whose responses report usage that grows by ratio times the
// counted growth (EstimateCounter), like a provider whose tokenizer counts ratio times more.
func usageTK(t *testing.T, ratio float64, rounds int) *tk {
	k := newTK()
	p := newTestPipeline(t, Config{}, k.t0)
	prompt := 0
	for i := range rounds {
		u := k.user(fmt.Sprintf("question %d: %s", i, strings.Repeat("tell me about the parser and its lexer. ", 20)))
		prompt += int(float64(p.counter.Record(u)) * ratio)
		a := k.assistant(text(fmt.Sprintf("answer %d: %s", i, strings.Repeat("the lexer reads tokens one by one. ", 15))))
		a.Message.Usage = &transcript.Usage{InputTokens: prompt, OutputTokens: int(float64(p.counter.Record(a)) * ratio)}
		prompt += a.Message.Usage.OutputTokens
	}
	return k
}

func TestPressureCalibration(t *testing.T) {
	for _, ratio := range []float64{1.0, 1.27, 1.6} {
		t.Run(fmt.Sprint(ratio), func(t *testing.T) {
			k := usageTK(t, ratio, 8)
			k.user("and now?")
			p := newTestPipeline(t, Config{}, k.at(time.Second))
			res, err := p.Prepare(t.Context(), Input{Records: k.recs})
			require.NoError(t, err)
			pr := res.Report.Pressure
			assert.InDelta(t, ratio, pr.Ratio, 0.02, pr.RatioSource)
			assert.Contains(t, pr.RatioSource, "fitted on 7 response pairs")
			last := k.recs[len(k.recs)-2].Message.Usage
			assert.Equal(t, last.Total(), pr.Anchor, "anchored on the last response's usage")
			assert.Equal(t, pr.Anchor+pr.Added, pr.Tokens)
			assert.Positive(t, pr.Added)
		})
	}
	t.Run("deletions reported by the provider", func(t *testing.T) {
		// Every response's context shrank by what its cache_edits deleted: the fit adds the
		// deleted tokens back, and finds the ratio.
		k := usageTK(t, 1.27, 8)
		deleted := 0
		for i := range k.recs {
			if u := k.recs[i].Message.Usage; u != nil && k.recs[i].Type == transcript.TypeAssistant {
				u.InputTokens -= deleted
				u.Extra = map[string]json.RawMessage{"cache_deleted_input_tokens": json.RawMessage(fmt.Sprint(300))}
				deleted += 300
			}
		}
		k.user("and now?")
		res, err := newTestPipeline(t, Config{}, k.at(time.Second)).Prepare(t.Context(), Input{Records: k.recs})
		require.NoError(t, err)
		assert.InDelta(t, 1.27, res.Report.Pressure.Ratio, 0.02, res.Report.Pressure.RatioSource)
	})
	t.Run("too little data", func(t *testing.T) {
		k := usageTK(t, 1.27, 2)
		p := newTestPipeline(t, Config{}, k.at(time.Second))
		res, err := p.Prepare(t.Context(), Input{Records: k.recs})
		require.NoError(t, err)
		assert.Equal(t, 1.0, res.Report.Pressure.Ratio)
		assert.Contains(t, res.Report.Pressure.RatioSource, "default")
	})
	t.Run("configured", func(t *testing.T) {
		k := usageTK(t, 1.27, 8)
		p := newTestPipeline(t, Config{Pressure: PressureConfig{Ratio: 1.5}}, k.at(time.Second))
		res, err := p.Prepare(t.Context(), Input{Records: k.recs})
		require.NoError(t, err)
		assert.Equal(t, 1.5, res.Report.Pressure.Ratio)
		assert.Equal(t, "configured", res.Report.Pressure.RatioSource)
	})
	t.Run("bounded", func(t *testing.T) {
		k := usageTK(t, 2.9, 8)
		p := newTestPipeline(t, Config{}, k.at(time.Second))
		res, err := p.Prepare(t.Context(), Input{Records: k.recs})
		require.NoError(t, err)
		assert.Equal(t, maxRatio, res.Report.Pressure.Ratio)
	})
}

// TestPressureFreed checks that a reduction made this turn on what the anchor covers lowers
// the figure, and that one the anchor's request already had does not lower it twice.
func TestPressureFreed(t *testing.T) {
	k := newTK()
	k.user("read it")
	k.assistant(toolUse("t1", "Read"))
	k.results(result("t1", strings.Repeat("line of the file\n", 500)))
	a := k.assistant(text("done"))
	a.Message.Usage = &transcript.Usage{InputTokens: 4000, OutputTokens: 5}
	k.user("next")
	// Two hours later microcompact clears the old result: freed before the anchor.
	p := newTestPipeline(t, Config{Microcompact: MicrocompactConfig{KeepRecent: 1}}, k.at(2*time.Hour))
	k2 := *k
	k2.recs = append([]transcript.Record(nil), k.recs...)
	k2.assistant(toolUse("t2", "Read")) // a newer result so that t1 is not among the newest
	k2.results(result("t2", "short"))
	b := k2.assistant(text("ok"))
	b.Message.Usage = &transcript.Usage{InputTokens: 4100, OutputTokens: 5}
	k2.user("again")
	res, err := p.Prepare(t.Context(), Input{Records: k2.recs})
	require.NoError(t, err)
	pr := res.Report.Pressure
	require.Positive(t, pr.Freed, res.Report.String())
	assert.Equal(t, pr.Anchor+pr.Added-pr.Freed, pr.Tokens)

	// After appending the clearing and a new response that saw it, nothing is freed twice.
	recs := append(append([]transcript.Record(nil), k2.recs...), roundTrip(t, res.Append)...)
	k3 := &tk{recs: recs, t0: k2.t0, n: k2.n, last: k2.last, msgN: k2.msgN}
	c := k3.assistant(text("fine"))
	c.Message.Usage = &transcript.Usage{InputTokens: 3000, OutputTokens: 5}
	k3.user("last")
	res, err = p.Prepare(t.Context(), Input{Records: k3.recs})
	require.NoError(t, err)
	assert.Zero(t, res.Report.Pressure.Freed, res.Report.String())
}

// TestPressureFreedFloor checks that a figure lowered by what this turn freed is never below
// the counted request at the ratio: the freed tokens are an estimate, and an anchor that
// reported less than the view held must not let max_tokens fill a room the provider does not
// have.
func TestPressureFreedFloor(t *testing.T) {
	k := newTK()
	k.user("read it")
	k.assistant(toolUse("t1", "Read"))
	k.results(result("t1", strings.Repeat("line of the file\n", 500)))
	k.assistant(toolUse("t2", "Read"))
	k.results(result("t2", strings.Repeat("another line\n", 200)))
	b := k.assistant(text("ok"))
	b.Message.Usage = &transcript.Usage{InputTokens: 900, OutputTokens: 5} // under what the view holds
	k.user("again")
	p := newTestPipeline(t, Config{ContextWindow: 20_000, Microcompact: MicrocompactConfig{KeepRecent: 1}, Pressure: PressureConfig{Ratio: 1.25}}, k.at(2*time.Hour))
	res, err := p.Prepare(t.Context(), Input{Records: k.recs})
	require.NoError(t, err)
	pr := res.Report.Pressure
	require.Positive(t, pr.Freed, res.Report.String())
	assert.Less(t, max(pr.Anchor+pr.Added-pr.Freed, pr.Counted), pr.Tokens)
	assert.Equal(t, int(math.Ceil(float64(pr.Counted)*pr.Ratio)), pr.Tokens)
	assert.Contains(t, pr.Why, "since this turn freed tokens")
	assert.LessOrEqual(t, pr.Tokens+res.Request.MaxTokens, 20_000, "max_tokens leaves the figure its room")
}

func TestPressureNeverBelowCounted(t *testing.T) {
	k := newTK()
	k.user(strings.Repeat("a long prompt ", 400))
	k.assistant(text("answer")) // reports 15 tokens: a usage figure that cannot be right
	k.user("next")
	p := newTestPipeline(t, Config{}, k.at(time.Second))
	res, err := p.Prepare(t.Context(), Input{Records: k.recs})
	require.NoError(t, err)
	pr := res.Report.Pressure
	assert.Equal(t, pr.Counted, pr.Tokens)
	assert.Contains(t, pr.Why, "raised to the counted size")
}

// TestPrepareBlocking checks the honest answer over the window: a typed error with the figures,
// never a request that cannot fit, and max_tokens never below its floor.
// Without a Summarizer, a history at the blocking limit is compacted with Extractive rather
// than refused, and the Report says so; below the limit nothing is compacted.
func TestNoSummarizerAtTheLimit(t *testing.T) {
	k := newTK()
	for range 6 {
		k.user(strings.Repeat("x", 3_000))
		k.assistant(text(strings.Repeat("y", 3_000)))
	}
	k.user("go on")
	p := newTestPipeline(t, Config{ContextWindow: 12_000}, k.at(time.Second))
	res, err := p.Prepare(t.Context(), Input{Records: k.recs})
	require.NoError(t, err)
	require.NotNil(t, res.Report.Compaction)
	assert.Equal(t, CompactCompacted, res.Report.Compaction.Outcome)
	assert.Contains(t, kinds(res.Report.Degradations), DegradedFallback)
	res, err = p.Prepare(t.Context(), Input{Records: k.recs[:8]})
	require.NoError(t, err)
	assert.Nil(t, res.Report.Compaction, "over the threshold, under the blocking limit: no Summarizer, no compaction")
	assert.Contains(t, res.Report.Pressure.Why, "no Summarizer is configured")
}

func TestPrepareBlocking(t *testing.T) {
	k := newTK()
	k.user(strings.Repeat("x", 30_000)) // 10,000 tokens with the bytes/3 estimate
	for _, tt := range []struct {
		name   string
		cfg    Config
		reason string
	}{
		{"no summarizer, a prompt over the limit", Config{ContextWindow: 12_000}, "the request is at or above the blocking limit 8625; compaction skipped: the irreducible floor"},
		{"auto-compact disabled", Config{ContextWindow: 12_000, Compact: CompactConfig{Summarizer: summarize.Extractive{}, DisableAuto: true}}, "disabled"},
		{"floor over the blocking limit", Config{ContextWindow: 12_000, Compact: CompactConfig{Summarizer: summarize.Extractive{}}}, "irreducible floor"},
		{"max_tokens floor", Config{ContextWindow: 11_000, Pressure: PressureConfig{MinOutputTokens: 2_000, Blocking: Limit{Fraction: 1}}}, "below its floor of 2000"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := newTestPipeline(t, tt.cfg, k.at(time.Second))
			res, err := p.Prepare(t.Context(), Input{Records: k.recs})
			var ptl *provider.PromptTooLongError
			require.ErrorAs(t, err, &ptl)
			assert.ErrorIs(t, err, provider.ErrPromptTooLong)
			assert.Contains(t, ptl.Error(), tt.reason)
			assert.Equal(t, res.Report.Pressure.Tokens, ptl.Tokens)
			assert.Equal(t, p.Levels().Blocking, ptl.Limit)
			assert.Equal(t, p.Window(), ptl.Window)
			assert.NotEmpty(t, res.Report.Stages, "the report is filled in")
		})
	}
}

// TestLastResponse checks lastResponse against the last of responses: on hand-made views where
// a response's records are split around another response's (which responses orders by first
// record), cut by the boundary or followed by records without usage, and on every corpus
// session's view.
func TestLastResponse(t *testing.T) {
	rec := func(model string, total int) *transcript.Record {
		return &transcript.Record{Type: transcript.TypeAssistant, Message: &transcript.Message{Role: transcript.RoleAssistant, Model: model,
			Usage: &transcript.Usage{InputTokens: total / 2, OutputTokens: total - total/2}}}
	}
	at := func(id string, pos int, r *transcript.Record) item {
		return item{rec: r, uuid: fmt.Sprintf("u%d", pos), pos: pos, role: transcript.RoleAssistant, msgID: id}
	}
	user := item{role: transcript.RoleUser, pos: 0}
	views := map[string][]item{
		"none":        {user},
		"one":         {user, at("a", 1, rec("m", 10)), at("a", 2, rec("m", 12))},
		"two":         {at("a", 1, rec("m", 10)), user, at("b", 3, rec("m", 20)), at("b", 4, rec("m", 19))},
		"split":       {at("a", 1, rec("m", 10)), at("b", 2, rec("m", 20)), at("a", 3, rec("m", 11))},
		"split later": {at("b", 1, rec("m", 5)), at("a", 2, rec("m", 10)), at("b", 3, rec("m", 20)), at("a", 4, rec("m", 11))},
		"no usage":    {at("a", 1, rec("m", 10)), at("b", 2, rec("m", 0)), at("c", 3, rec(transcript.SyntheticModel, 9))},
		"boundary":    {at("a", 1, rec("m", 10)), at("b", 5, rec("m", 20)), at("a", 6, rec("m", 30))},
	}
	for name, items := range views {
		for _, boundary := range []int{-1, 1, 4} {
			rs := responses(items, boundary)
			got, ok := lastResponse(items, boundary)
			require.Equal(t, len(rs) > 0, ok, "%s, boundary %d", name, boundary)
			if ok {
				assert.Equal(t, rs[len(rs)-1], got, "%s, boundary %d", name, boundary)
			}
		}
	}
	p, err := New(Config{ContextWindow: 200_000, Tokens: EstimateCounter{}})
	require.NoError(t, err)
	for _, cs := range corpusSessions(t) {
		tr, err := p.build(t.Context(), &Input{Records: cs.records})
		if err != nil {
			continue
		}
		rs := responses(tr.items, tr.boundaryPos)
		got, ok := lastResponse(tr.items, tr.boundaryPos)
		require.Equal(t, len(rs) > 0, ok, cs.path)
		if ok {
			assert.Equal(t, rs[len(rs)-1], got, cs.path)
		}
	}
}
