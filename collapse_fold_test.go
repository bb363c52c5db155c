package agentctx

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentctx/agentctx/summarize"

	"github.com/agentctx/agentctx/provider"
	"github.com/agentctx/agentctx/transcript"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFoldOldest(t *testing.T) {
	tests := []struct {
		name     string
		tokens   []int
		rounds   []int
		pressure int
		target   int
		want     FoldSpan
	}{
		{name: "one round is enough", tokens: []int{400, 400, 400, 400, 400}, rounds: []int{0, 2, 4}, pressure: 1000, target: 600, want: FoldSpan{From: 0, To: 2}},
		{name: "two rounds needed", tokens: []int{100, 100, 400, 400, 400}, rounds: []int{0, 2, 4}, pressure: 1000, target: 400, want: FoldSpan{From: 0, To: 4}},
		{name: "everything up to the tail when short", tokens: []int{100, 100, 100, 100, 400}, rounds: []int{1, 3}, pressure: 1000, target: 100, want: FoldSpan{From: 1, To: 3}},
		{name: "too little to gain", tokens: []int{10, 10, 900}, rounds: []int{0, 2}, pressure: 1000, target: 500},
		{name: "no round", tokens: []int{500, 500}, rounds: []int{1}, pressure: 1000, target: 500},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := FoldOldest{}.Fold(t.Context(), FoldRequest{Tokens: tt.tokens, Rounds: tt.rounds, Pressure: tt.pressure, Target: tt.target})
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

// foldSession returns a session of n rounds, each a prompt, a Read call, a result of size
// characters and an answer.
func foldSession(n, size int) *tk {
	k := newTK()
	for i := range n {
		k.user(fmt.Sprintf("step %d: look at the next file", i))
		tu := toolUse(fmt.Sprintf("toolu_%03d", i), "Read")
		k.assistant(text(fmt.Sprintf("Reading file %d.", i)), tu)
		k.results(result(tu.ID, fmt.Sprintf("file %d: ", i)+filler(size)))
		k.assistant(text(fmt.Sprintf("File %d holds the lexer's table %d.", i, i)))
	}
	k.user("what next?")
	return k
}

// TestCollapseProducer checks the producer on a session just over the commit level: the fold
// comes before auto-compact (no compaction), its commit is the first record to append, the
// span ends at a round and covers the oldest rounds, and appending it gives the same request
// with nothing new and no summarizer call; without a Producer nothing changes.
func TestCollapseProducer(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 6, 0, 0, time.UTC)
	k := foldSession(11, 1800)
	var calls []summarize.Request
	sum := summarize.Func(func(_ context.Context, req summarize.Request) (summarize.Summary, error) {
		calls = append(calls, req)
		return summarize.Summary{Text: "<summary>The first files hold the lexer's tables.</summary>", By: "scripted"}, nil
	})
	cfg := func(producer CollapseProducer) Config {
		return Config{ContextWindow: 12_000, Tokens: EstimateCounter{}, Budget: BudgetConfig{Store: &MapStore{}},
			Compact: CompactConfig{Summarizer: sum}, Collapse: CollapseConfig{Producer: producer}, Cache: CacheConfig{MinGain: -1}}
	}
	off := newTestPipeline(t, cfg(nil), now)
	base, err := off.Prepare(t.Context(), Input{Records: k.recs})
	require.NoError(t, err)
	require.GreaterOrEqual(t, base.Report.Pressure.Tokens, off.Levels().Threshold*9/10, "the session is at the commit level")
	require.Less(t, base.Report.Pressure.Tokens, off.Levels().Threshold, "and under the threshold")
	assert.Empty(t, calls)

	p := newTestPipeline(t, cfg(FoldOldest{}), now)
	for _, in := range []Input{{Records: k.recs, NoCompact: true}, {Records: k.recs, SkipCacheWrite: true}} {
		none, err := p.Prepare(t.Context(), in)
		require.NoError(t, err)
		assert.Empty(t, none.Append, "no fold for a fork or with NoCompact")
	}
	disabled := cfg(FoldOldest{})
	disabled.Collapse.Disable = true
	none, err := newTestPipeline(t, disabled, now).Prepare(t.Context(), Input{Records: k.recs})
	require.NoError(t, err)
	assert.Empty(t, none.Append, "no fold with Collapse.Disable")
	assert.Empty(t, calls)

	res, err := p.Prepare(t.Context(), Input{Records: k.recs})
	require.NoError(t, err)
	require.Len(t, calls, 1)
	assert.Equal(t, transcript.TriggerCollapse, calls[0].Trigger)
	assert.Nil(t, res.Report.Compaction)
	require.NotEmpty(t, res.Append)
	c := res.Append[0]
	require.Equal(t, transcript.SubtypeCollapseCommit, c.Subtype)
	assert.Equal(t, k.recs[0].UUID, c.Collapse.FirstUUID, "the oldest round first")
	assert.NotContains(t, res.Report.String(), "span extended", "the span cuts no tool pair")
	assert.Less(t, recordIndex(k.recs, c.Collapse.LastUUID), len(k.recs)/2, "only the oldest rounds")
	assert.Less(t, res.Report.Pressure.Tokens, base.Report.Pressure.Tokens)
	assert.Contains(t, res.Report.String(), "folded")
	assert.Contains(t, requestText(res.Request), "The first files hold the lexer's tables.")

	calls = nil
	again, err := p.Prepare(t.Context(), Input{Records: append(clone(k.recs), res.Append...)})
	require.NoError(t, err)
	assert.Equal(t, string(requestBytes(t, res.Request)), string(requestBytes(t, again.Request)))
	assert.Empty(t, again.Append)
	assert.Empty(t, calls, "no summarizer call on replay")
}

// TestCollapseProducerFailure checks that a failed fold is a record: preparing the same turn
// again with it does not retry; compaction's breaker does not count it; after three failures
// in a row the producer rests; a span that is not a run of rounds fails the attempt too.
func TestCollapseProducerFailure(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 6, 0, 0, time.UTC)
	k := foldSession(11, 1800)
	calls := 0
	failing := summarize.Func(func(context.Context, summarize.Request) (summarize.Summary, error) {
		calls++
		return summarize.Summary{}, errors.New("the model is overloaded")
	})
	p := newTestPipeline(t, Config{ContextWindow: 12_000, Tokens: EstimateCounter{}, Budget: BudgetConfig{Store: &MapStore{}},
		Compact: CompactConfig{Summarizer: failing}, Collapse: CollapseConfig{Producer: FoldOldest{}}, Cache: CacheConfig{MinGain: -1}}, now)
	recs := clone(k.recs)
	for turn := range 4 {
		calls = 0
		res, err := p.Prepare(t.Context(), Input{Records: recs})
		require.NoError(t, err)
		if turn == 3 {
			assert.Zero(t, calls, "the producer rests after three failures")
			assert.Empty(t, res.Append)
			assert.Contains(t, res.Report.String(), "failed 3 times in a row")
			break
		}
		require.Equal(t, 1, calls, "turn %d", turn)
		require.Len(t, res.Append, 1)
		f := res.Append[0]
		require.Equal(t, transcript.SubtypeCompactFailure, f.Subtype)
		assert.Equal(t, transcript.TriggerCollapse, f.CompactFailure.Trigger)
		assert.Contains(t, f.CompactFailure.Reason, "overloaded")
		recs = append(recs, res.Append...)

		calls = 0
		again, err := p.Prepare(t.Context(), Input{Records: recs})
		require.NoError(t, err)
		assert.Zero(t, calls, "the same turn is not tried again")
		assert.Empty(t, again.Append)
		st, err := p.CompactState(recs, "")
		require.NoError(t, err)
		assert.Zero(t, st.ConsecutiveFailures, "compaction's breaker does not count a fold")

		// The next turn: a response and a prompt.
		k.recs = recs
		k.assistant(text(fmt.Sprintf("Still here %d.", turn)))
		k.user(fmt.Sprintf("go on %d", turn))
		recs = clone(k.recs)
	}

	bad := newTestPipeline(t, Config{ContextWindow: 12_000, Tokens: EstimateCounter{}, Budget: BudgetConfig{Store: &MapStore{}},
		Collapse: CollapseConfig{Producer: CollapseProducerFunc(func(_ context.Context, req FoldRequest) (FoldSpan, error) {
			return FoldSpan{From: req.Rounds[0], To: req.Rounds[0] + 2, Summary: "half a response"}, nil
		})}, Cache: CacheConfig{MinGain: -1}}, now)
	res, err := bad.Prepare(t.Context(), Input{Records: foldSession(11, 1800).recs})
	require.NoError(t, err)
	require.Len(t, res.Append, 1)
	assert.Contains(t, res.Append[0].CompactFailure.Reason, "does not start and end at rounds")
}

func TestCollapseConfigValidate(t *testing.T) {
	for _, c := range []CollapseConfig{{CommitFraction: -0.1}, {TargetFraction: 1.5}, {CommitFraction: 0.8, TargetFraction: 0.8}} {
		_, err := New(Config{ContextWindow: 12_000, Collapse: c})
		assert.Error(t, err, "%+v", c)
	}
}

func recordIndex(recs []transcript.Record, u string) int {
	for i := range recs {
		if recs[i].UUID == u {
			return i
		}
	}
	return -1
}

func clone(recs []transcript.Record) []transcript.Record {
	return append([]transcript.Record(nil), recs...)
}

// requestText is the text of every block of a request's messages.
func requestText(req provider.Request) string {
	var b strings.Builder
	for _, m := range req.Messages {
		b.WriteString(transcript.TextOf(m.Content) + "\n")
	}
	return b.String()
}

// TestCollapseProducerLongSession runs the generated agent session of
// TestLongSessionThroughCompaction with the producer on: every request is under the threshold,
// the producer folds and never fails, there are fewer compactions than without it, and a
// resume of the final transcript gives the final request's bytes.
func TestCollapseProducerLongSession(t *testing.T) {
	n := 600
	if testing.Short() || raceEnabled {
		n = 300
	}
	now := time.Date(2026, 1, 3, 0, 0, 0, 0, time.UTC)
	cfg := Config{Model: "claude-sonnet-4-5", ContextWindow: 60_000, Compact: CompactConfig{Summarizer: summarize.Extractive{}}}
	off := newTestPipeline(t, cfg, now)
	cfg.Collapse.Producer = FoldOldest{}
	p := newTestPipeline(t, cfg, now)
	_, offReps := liveLoop(t, off, n, 7, false)
	recs, reps := liveLoop(t, p, n, 7, false)
	count := func(reps []Report) (compactions, folds int) {
		for _, r := range reps {
			if c := r.Compaction; c != nil && c.Outcome == CompactCompacted {
				compactions++
			}
			if strings.Contains(r.String(), "folded ") {
				folds++
			}
			assert.NotContains(t, r.String(), "fold failed")
		}
		return compactions, folds
	}
	for i, r := range reps {
		assert.Less(t, r.Pressure.Tokens, p.Levels().Threshold, "turn %d: under the threshold\n%s", i, r.String())
	}
	without, _ := count(offReps)
	with, folds := count(reps)
	t.Logf("%d turns: %d compactions without the producer, %d with it and %d folds", n, without, with, folds)
	assert.Positive(t, folds)
	assert.Less(t, with, without)

	final, err := p.Prepare(t.Context(), Input{Records: recs})
	require.NoError(t, err)
	back, err := transcript.Read(strings.NewReader(jsonlOf(t, recs)), "long", transcript.ReadOptions{Strict: true})
	require.NoError(t, err)
	again, err := p.Prepare(t.Context(), Input{Records: back.Records})
	require.NoError(t, err)
	assert.Equal(t, string(requestBytes(t, final.Request)), string(requestBytes(t, again.Request)))
}

// TestCollapseProducerThenCompact checks a fold that does not bring the request under the
// threshold: auto-compact runs on the folded view in the same turn, the commit stays first in
// Result.Append before the compaction's records, and appending them gives the same request
// with nothing new and no summarizer call.
func TestCollapseProducerThenCompact(t *testing.T) {
	k := foldSession(14, 1800)
	calls := 0
	sum := summarize.Func(func(_ context.Context, req summarize.Request) (summarize.Summary, error) {
		calls++
		return summarize.Summary{Text: "<summary>The files hold the lexer's tables (" + req.Trigger + ").</summary>"}, nil
	})
	firstRound := CollapseProducerFunc(func(_ context.Context, req FoldRequest) (FoldSpan, error) {
		return FoldSpan{From: req.Rounds[0], To: req.Rounds[1]}, nil
	})
	p := newTestPipeline(t, Config{ContextWindow: 12_000, Tokens: EstimateCounter{}, Budget: BudgetConfig{Store: &MapStore{}},
		Compact: CompactConfig{Summarizer: sum}, Collapse: CollapseConfig{Producer: firstRound}, Cache: CacheConfig{MinGain: -1}}, time.Date(2026, 1, 2, 3, 6, 0, 0, time.UTC))
	res, err := p.Prepare(t.Context(), Input{Records: k.recs})
	require.NoError(t, err)
	require.NotNil(t, res.Report.Compaction)
	assert.Equal(t, CompactCompacted, res.Report.Compaction.Outcome)
	assert.Equal(t, 2, calls, "the fold's summary, then the compaction's")
	require.Greater(t, len(res.Append), 2)
	assert.Equal(t, transcript.SubtypeCollapseCommit, res.Append[0].Subtype)
	assert.True(t, res.Append[1].IsCompactBoundary())

	calls = 0
	again, err := p.Prepare(t.Context(), Input{Records: append(clone(k.recs), roundTrip(t, res.Append)...)})
	require.NoError(t, err)
	assert.Equal(t, string(requestBytes(t, res.Request)), string(requestBytes(t, again.Request)))
	assert.Empty(t, again.Append)
	assert.Zero(t, calls)
}

// A fold on a turn whose budget stage replaces a new result appends the budget's record once:
// the turn built again after the commit makes it again, with the same uuid, and the
// transcript takes each record once (the live loop's session refused the turn before).
func TestCollapseProducerBudgetRecord(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 6, 0, 0, time.UTC)
	k := foldSession(11, 1800)
	tu := toolUse("toolu_big", "Read")
	k.assistant(text("Reading the generated table."), tu)
	k.results(result(tu.ID, "table: "+filler(6000)))
	sum := summarize.Func(func(context.Context, summarize.Request) (summarize.Summary, error) {
		return summarize.Summary{Text: "<summary>The first files hold the lexer's tables.</summary>", By: "scripted"}, nil
	})
	p := newTestPipeline(t, Config{ContextWindow: 12_000, Tokens: EstimateCounter{}, Budget: BudgetConfig{Store: &MapStore{}},
		Compact: CompactConfig{Summarizer: sum}, Collapse: CollapseConfig{Producer: FoldOldest{}}, Cache: CacheConfig{MinGain: -1}}, now)
	res, err := p.Prepare(t.Context(), Input{Records: k.recs})
	require.NoError(t, err)
	require.Nil(t, res.Report.Compaction)
	subtypes := map[transcript.Subtype]int{}
	seen := map[string]bool{}
	for _, r := range res.Append {
		subtypes[r.Subtype]++
		assert.False(t, seen[r.UUID], "record %s appended twice", r.UUID)
		seen[r.UUID] = true
	}
	assert.Equal(t, map[transcript.Subtype]int{transcript.SubtypeCollapseCommit: 1, transcript.SubtypeToolResultBudget: 1}, subtypes)
	assert.Equal(t, transcript.SubtypeCollapseCommit, res.Append[0].Subtype, "the commit first")
	again, err := p.Prepare(t.Context(), Input{Records: append(clone(k.recs), res.Append...)})
	require.NoError(t, err)
	assert.Equal(t, string(requestBytes(t, res.Request)), string(requestBytes(t, again.Request)))
	assert.Empty(t, again.Append)
}
