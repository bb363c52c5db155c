package agentctx

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/agentctx/agentctx/provider"
	"github.com/agentctx/agentctx/summarize"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestObserver follows a compaction whose summarizer fails into the fallback, a recovery, an
// error passed back and a failed turn through Config.Observer: the start is seen before the summarizer is called,
// then the outcome, each degradation, the recovery and the error, with the caller's ctx.
func TestObserver(t *testing.T) {
	type key struct{}
	var events []string
	var summarizerCalls int
	seen := func(ctx context.Context, s string) {
		events = append(events, fmt.Sprintf("%v: %s", ctx.Value(key{}), s))
	}
	failing := summarize.Func(func(ctx context.Context, req summarize.Request) (summarize.Summary, error) {
		summarizerCalls++
		events = append(events, "summarizer called")
		return summarize.Summary{}, errors.New("model down")
	})
	obs := Observer{
		CompactStart: func(ctx context.Context, e CompactEvent) { seen(ctx, "compaction starts, trigger "+e.Trigger) },
		Compaction:   func(ctx context.Context, r CompactReport) { seen(ctx, "compaction "+string(r.Outcome)) },
		Degraded:     func(ctx context.Context, d Degradation) { seen(ctx, "degraded "+string(d.Kind)) },
		Recovery:     func(ctx context.Context, r RecoveryReport) { seen(ctx, "recovery "+string(r.Outcome)) },
		Failed:       func(ctx context.Context, err error) { seen(ctx, "failed") },
	}
	k := compactTK()
	p := newTestPipeline(t, Config{ContextWindow: 12_000, MaxOutputTokens: 2_000, Observer: obs,
		Compact: CompactConfig{Summarizer: failing}}, k.at(0))
	ctx := context.WithValue(t.Context(), key{}, "session-1")

	res, err := p.Prepare(ctx, Input{Records: k.recs})
	require.NoError(t, err)
	require.NotNil(t, res.Report.Compaction)
	require.Equal(t, 1, summarizerCalls)
	assert.Equal(t, []string{
		"session-1: compaction starts, trigger auto",
		"summarizer called",
		"session-1: degraded fallback_summary",
		"session-1: compaction compacted",
	}, events)

	events = nil
	rec, err := p.Recover(ctx, Input{Records: k.recs}, &provider.PromptTooLongError{Tokens: 13_000, Limit: 12_000})
	require.NoError(t, err)
	assert.Contains(t, events, "session-1: recovery "+string(rec.Report.Recovery.Outcome))
	assert.NotContains(t, events, "session-1: failed")

	events = nil
	passed := errors.New("connection reset")
	_, err = p.Recover(ctx, Input{Records: k.recs}, passed)
	require.ErrorIs(t, err, passed)
	assert.Equal(t, []string{"session-1: recovery passed", "session-1: failed"}, events)

	events = nil
	_, err = p.Prepare(ctx, Input{})
	require.ErrorIs(t, err, ErrNoMessages)
	assert.Equal(t, []string{"session-1: failed"}, events)
}
