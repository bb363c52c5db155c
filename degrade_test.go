package agentctx

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentctx/agentctx/summarize"

	"github.com/agentctx/agentctx/provider"

	"github.com/agentctx/agentctx/transcript"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var degradeNow = time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)

// hugeRound returns a conversation whose latest round alone is over a 12,000-token window:
// a prompt, then an answer with ~13,000 tokens of text and a tool call, then its result.
func hugeRound() []transcript.Record {
	k := newTK()
	k.user("Write the design notes.")
	k.assistant(text(filler(40_000)), toolUse("toolu_w", "Write"))
	k.results(result("toolu_w", "written"))
	return k.recs
}

// kinds lists the kinds of the Report's degradations.
func kinds(ds []Degradation) []DegradationKind {
	var out []DegradationKind
	for _, d := range ds {
		out = append(out, d.Kind)
	}
	return out
}

// A summary request that cannot be made to fit the window is not sent: the summarizer is not
// called, its circuit breaker does not count it, the fallback writes the summary, and the
// Report, the records and the logger say each of these.
func TestSummaryRequestNotSized(t *testing.T) {
	var calls atomic.Int32
	var logs bytes.Buffer
	p := newTestPipeline(t, Config{ContextWindow: 12_000, Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		Compact: CompactConfig{Summarizer: summarize.Func(func(context.Context, summarize.Request) (summarize.Summary, error) {
			calls.Add(1)
			return summarize.Summary{Text: "<summary>never</summary>"}, nil
		})}}, degradeNow)
	recs := hugeRound()
	res, err := p.Prepare(t.Context(), Input{Records: recs})
	require.NoError(t, err)
	assert.Zero(t, calls.Load(), "the summarizer is never called with a request over the window")
	c := res.Report.Compaction
	require.NotNil(t, c)
	assert.Equal(t, CompactCompacted, c.Outcome)
	assert.True(t, c.Fallback)
	assert.Equal(t, CompactRungSummaryOnly, c.Rung, "the latest input alone is over the window: only the summary can stay")
	assert.Subset(t, kinds(res.Report.Degradations), []DegradationKind{DegradedNotCalled, DegradedFallback, DegradedRung})
	var failure *transcript.CompactFailure
	for _, r := range res.Append {
		if r.CompactFailure != nil {
			failure = r.CompactFailure
		}
		if r.CompactMetadata != nil {
			assert.Equal(t, string(CompactRungSummaryOnly), r.CompactMetadata.Rung)
			assert.Contains(t, r.CompactMetadata.FallbackReason, "was not called")
		}
	}
	require.NotNil(t, failure, "the attempt is a record")
	assert.Zero(t, failure.Attempts)
	st, err := p.CompactState(append(recs, res.Append...), "")
	require.NoError(t, err)
	assert.Zero(t, st.ConsecutiveFailures, "the breaker does not count a summarizer the library never called")
	for _, k := range []DegradationKind{DegradedNotCalled, DegradedFallback, DegradedRung} {
		assert.Contains(t, logs.String(), "kind="+string(k), "logged")
	}
	assert.Contains(t, logs.String(), "level=WARN msg=\"agentctx: degraded\"")
	assert.Contains(t, logs.String(), "msg=\"agentctx: compaction\"")
	assert.NoError(t, provider.Validate(res.Request, provider.ValidateOptions{ContextWindow: p.Window(), InputTokens: res.Report.InputTokens}))
}

// A summary far over its cap is cut to it, with a note, and the cut is reported: the summary a
// summarizer returns never fills the window (a 10 MB answer against a cap of a few thousand
// tokens once wrote 2.5M tokens into a transcript).
func TestSummaryOverCapIsCut(t *testing.T) {
	huge := "<summary>\n" + strings.Repeat("the loader keeps every key of the file\n", 250_000) + "</summary>"
	require.Greater(t, len(huge), 9<<20)
	p := newTestPipeline(t, Config{ContextWindow: 30_000, Compact: CompactConfig{Summarizer: summarize.Func(func(context.Context, summarize.Request) (summarize.Summary, error) {
		return summarize.Summary{Text: huge}, nil
	})}}, degradeNow)
	k := newTK()
	for i := range 12 {
		k.user(filler(3_000))
		k.assistant(text(filler(3_000 + i)))
	}
	res, err := p.Compact(t.Context(), Input{Records: k.recs}, CompactOptions{})
	require.NoError(t, err)
	var summary string
	for _, r := range res.Append {
		if r.IsCompactSummary {
			summary = transcript.TextOf(r.Message.Content)
		}
	}
	capTokens := p.compactor.summaryMax()
	assert.LessOrEqual(t, p.Counter().Text(summary), capTokens+200, "the summary holds at most its cap, with the note and the wrapper")
	assert.Contains(t, summary, "ran past its limit")
	assert.Contains(t, kinds(res.Report.Degradations), DegradedSummaryCut)
	assert.Less(t, res.Report.Pressure.Tokens, p.Levels().Threshold)
}

// Prepare returns when its context ends, even if the summarizer ignores it: the late answer is
// dropped, nothing is installed, and nothing waits for the summarizer.
func TestSummarizerIgnoringContext(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	started := make(chan struct{})
	p := newTestPipeline(t, Config{ContextWindow: 30_000, Compact: CompactConfig{Summarizer: summarize.Func(func(context.Context, summarize.Request) (summarize.Summary, error) {
		close(started)
		<-release // ignores its context: returns only when the test ends
		return summarize.Summary{Text: "<summary>late</summary>"}, nil
	})}}, degradeNow)
	k := newTK()
	for range 12 {
		k.user(filler(3_000))
		k.assistant(text(filler(3_000)))
	}
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		<-started
		cancel()
	}()
	_, err := p.Compact(ctx, Input{Records: k.recs}, CompactOptions{})
	assert.ErrorIs(t, err, context.Canceled, "Compact returned while the summarizer still runs")
}

// A summarizer that keeps answering "prompt too long" is called once and retried at most
// three times, each retry leaving out more of the oldest rounds; then the attempt fails.
func TestSummaryPromptTooLongRetries(t *testing.T) {
	var omitted []int
	p := newTestPipeline(t, Config{ContextWindow: 30_000, Compact: CompactConfig{DisableFallback: true, Summarizer: summarize.Func(func(_ context.Context, req summarize.Request) (summarize.Summary, error) {
		omitted = append(omitted, req.Omitted)
		return summarize.Summary{}, &provider.PromptTooLongError{}
	})}}, degradeNow)
	k := newTK()
	for range 16 {
		k.user(filler(2_000))
		k.assistant(text(filler(2_000)))
	}
	res, err := p.Compact(t.Context(), Input{Records: k.recs}, CompactOptions{})
	require.Error(t, err)
	require.Len(t, omitted, 1+maxPTLRetries, "one call and three retries")
	for i := 1; i < len(omitted); i++ {
		assert.Greater(t, omitted[i], omitted[i-1], "each retry leaves out more")
	}
	require.NotNil(t, res.Report.Compaction)
	assert.Equal(t, 1+maxPTLRetries, res.Report.Compaction.Attempts)
}

// A request whose system prompt alone is over the blocking limit cannot be helped by any rung:
// Prepare refuses it with a typed error saying so, and a manual compaction does the same.
func TestNoRungCanHelp(t *testing.T) {
	p := newTestPipeline(t, Config{ContextWindow: 12_000, Compact: CompactConfig{Summarizer: summarize.Extractive{}}}, degradeNow)
	k := newTK()
	k.user("hello")
	k.assistant(text("hi"))
	k.user("go on")
	in := Input{Records: k.recs, System: []*transcript.Text{{Text: filler(30_000)}}}
	_, err := p.Prepare(t.Context(), in)
	var ptl *provider.PromptTooLongError
	require.ErrorAs(t, err, &ptl)
	assert.Contains(t, ptl.Reason, "no compaction can make the request fit")
	_, err = p.Compact(t.Context(), in, CompactOptions{})
	require.ErrorAs(t, err, &ptl, "a manual compaction skipped for the floor returns the typed error")
	assert.True(t, errors.Is(err, provider.ErrPromptTooLong))
}
