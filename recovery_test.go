package agentctx

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/agentctx/agentctx/transcript"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var recoverNow = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// recoverPipeline is a small-window pipeline with cfg's compaction settings.
func recoverPipeline(t *testing.T, compact CompactConfig) *Pipeline {
	t.Helper()
	return windowPipeline(t, 12_000, compact)
}

func windowPipeline(t *testing.T, window int, compact CompactConfig) *Pipeline {
	t.Helper()
	p, err := New(Config{Model: "claude-sonnet-4-5", ContextWindow: window, MaxOutputTokens: 16_000, Tokens: EstimateCounter{},
		Compact: compact, Now: func() time.Time { return recoverNow }})
	require.NoError(t, err)
	return p
}

// recoverConversation is a session of rounds user/answer rounds, then a user prompt.
func recoverConversation(t *testing.T, rounds int) *Session {
	t.Helper()
	n := 0
	s := NewSession(SessionOptions{ID: "s-recover", Now: func() time.Time { return recoverNow },
		NewUUID: func() string { n++; return fmt.Sprintf("00000000-0000-4000-8000-%012d", n) }})
	for i := range rounds {
		_, err := s.User(fmt.Sprintf("Round %d. ", i) + filler(1500))
		require.NoError(t, err)
		_, err = s.Assistant(&transcript.Message{ID: fmt.Sprintf("msg_%d", i), Type: "message", Role: transcript.RoleAssistant, Model: "claude-sonnet-4-5",
			Content: []transcript.Block{&transcript.Text{Text: "Done. " + filler(300)}}, StopReason: "end_turn", Usage: &transcript.Usage{InputTokens: 500 * (i + 1), OutputTokens: 80}})
		require.NoError(t, err)
	}
	_, err := s.User("What is left?")
	require.NoError(t, err)
	return s
}

// ptlError is a prompt-too-long error as an adapter reports it.
func ptlError(tokens int) error {
	return &providerError{class: ClassPromptTooLong, tree: []error{&PromptTooLongError{Tokens: tokens, Limit: 12_000}}}
}

func TestRecoverPassesWhatIsNotOurs(t *testing.T) {
	p := recoverPipeline(t, CompactConfig{})
	s := recoverConversation(t, 1)
	for _, err := range []error{
		&providerError{class: ClassRetryable},
		&providerError{class: ClassInvalidRequest},
		&providerError{class: ClassFatal},
		context.DeadlineExceeded,
	} {
		res, rerr := p.Recover(t.Context(), Input{Records: s.Records()}, err)
		assert.True(t, err == rerr, "%v: the error goes back as it is", err)
		assert.Empty(t, res.Append, "%v: nothing to record", err)
		require.NotNil(t, res.Report.Recovery)
		assert.Equal(t, RecoveryPassed, res.Report.Recovery.Outcome)
		assert.Equal(t, ClassOf(err), res.Report.Recovery.Class)
	}
	_, err := p.Recover(t.Context(), Input{Records: s.Records()}, nil)
	assert.ErrorContains(t, err, "no error to recover from")
}

// The prompt-too-long rung: once per response. Whether it ran is read from the records, so
// a restarted process (a new Pipeline on the records read back from JSON) finds it spent,
// and a new response resets it.
func TestRecoverPromptTooLongRestart(t *testing.T) {
	p := recoverPipeline(t, CompactConfig{})
	s := recoverConversation(t, 3)
	ctx := t.Context()
	res, err := s.Recover(ctx, p, Input{}, ptlError(12_850))
	require.NoError(t, err)
	assert.Equal(t, RecoveryRecovered, res.Report.Recovery.Outcome)
	require.NotNil(t, res.Report.Compaction)
	assert.Equal(t, CompactCompacted, res.Report.Compaction.Outcome)
	assert.Equal(t, "extractive", res.Report.Compaction.Summarizer, "without a Summarizer, what Compact uses")

	// A restart: the transcript read back, a new pipeline.
	restarted := recoverPipeline(t, CompactConfig{})
	records := roundTrip(t, s.Records())
	again, err := restarted.Recover(ctx, Input{Records: records}, ptlError(12_400))
	var ptl *PromptTooLongError
	require.ErrorAs(t, err, &ptl)
	assert.Equal(t, 12_400, ptl.Tokens, "the provider's figures")
	assert.Equal(t, RecoveryTerminal, again.Report.Recovery.Outcome)
	assert.Empty(t, again.Append)

	// A response, then the provider refuses again: the rung runs again.
	r2, err := ResumeSession(records, SessionOptions{Now: func() time.Time { return recoverNow }})
	require.NoError(t, err)
	_, err = r2.Assistant(&transcript.Message{ID: "msg_after", Type: "message", Role: transcript.RoleAssistant, Model: "claude-sonnet-4-5",
		Content: []transcript.Block{&transcript.Text{Text: "Nothing is left."}}, StopReason: "end_turn", Usage: &transcript.Usage{InputTokens: 900, OutputTokens: 5}})
	require.NoError(t, err)
	_, err = r2.User("Then " + filler(2000))
	require.NoError(t, err)
	third, err := restarted.Recover(ctx, Input{Records: r2.Records()}, ptlError(12_900))
	require.NoError(t, err)
	assert.Equal(t, RecoveryRecovered, third.Report.Recovery.Outcome)
}

// The reactive compaction counts toward the circuit breaker: a failed attempt is recorded
// as an auto failure, and the rung ends with the prompt-too-long error.
func TestRecoverPromptTooLongBreaker(t *testing.T) {
	failing := SummarizerFunc(func(context.Context, SummaryRequest) (Summary, error) {
		return Summary{}, errors.New("summarizer down")
	})
	p := recoverPipeline(t, CompactConfig{Summarizer: failing, DisableFallback: true})
	s := recoverConversation(t, 3)
	res, err := s.Recover(t.Context(), p, Input{}, ptlError(12_850))
	require.ErrorIs(t, err, ErrPromptTooLong)
	assert.Equal(t, RecoveryTerminal, res.Report.Recovery.Outcome)
	require.Len(t, res.Append, 2)
	assert.Equal(t, transcript.SubtypeRecovery, res.Append[0].Subtype)
	assert.Equal(t, transcript.SubtypeCompactFailure, res.Append[1].Subtype)
	st, err := p.CompactState(s.Records(), s.Leaf())
	require.NoError(t, err)
	assert.Equal(t, 1, st.ConsecutiveFailures)
}

func TestRecoverForkNeverCompacts(t *testing.T) {
	p := recoverPipeline(t, CompactConfig{})
	s := recoverConversation(t, 3)
	res, err := p.Recover(t.Context(), Input{Records: s.Records(), SkipCacheWrite: true}, ptlError(12_850))
	assert.ErrorContains(t, err, "a fork never compacts")
	assert.Equal(t, RecoveryTerminal, res.Report.Recovery.Outcome)
}

// truncate appends a response cut at max_tokens.
func truncate(t *testing.T, s *Session, id string) {
	t.Helper()
	_, err := s.Assistant(&transcript.Message{ID: id, Type: "message", Role: transcript.RoleAssistant, Model: "claude-sonnet-4-5",
		Content: []transcript.Block{&transcript.Text{Text: "The guide: " + id}}, StopReason: "max_tokens", Usage: &transcript.Usage{InputTokens: 900, OutputTokens: 16_000}})
	require.NoError(t, err)
}

// The output rungs are counted from the records along the chain: a restart continues the
// count, and a branch from before the continuations starts it again.
func TestRecoverOutputRestartAndBranch(t *testing.T) {
	p := windowPipeline(t, 200_000, CompactConfig{})
	s := recoverConversation(t, 1)
	ctx := t.Context()

	_, err := s.Recover(ctx, p, Input{}, ErrOutputTruncated)
	assert.ErrorContains(t, err, "no response that stopped at max_tokens")

	truncate(t, s, "msg_cut_0")
	res, err := s.Recover(ctx, p, Input{}, ErrOutputTruncated)
	require.NoError(t, err)
	assert.Equal(t, RungOutputCap, res.Report.Recovery.Rung)
	assert.Equal(t, 64_000, res.Request.MaxTokens, "the raised cap: the model's maximum")
	for _, m := range res.Request.Messages {
		for _, b := range m.Content {
			if tx, ok := b.(*transcript.Text); ok {
				assert.NotContains(t, tx.Text, "msg_cut_0", "the cut response is asked for again, not sent")
			}
		}
	}
	truncate(t, s, "msg_cut_1")
	branch := s.Leaf() // a response cut after the cap was raised
	res, err = s.Recover(ctx, p, Input{}, ErrOutputTruncated)
	require.NoError(t, err)
	assert.Equal(t, RungContinue, res.Report.Recovery.Rung)
	truncate(t, s, "msg_cut_2")

	// A restart continues the count.
	restarted := windowPipeline(t, 200_000, CompactConfig{})
	records := roundTrip(t, s.Records())
	r2, err := ResumeSession(records, SessionOptions{Now: func() time.Time { return recoverNow }})
	require.NoError(t, err)
	res, err = r2.Recover(ctx, restarted, Input{}, ErrOutputTruncated)
	require.NoError(t, err)
	assert.Equal(t, 2, res.Append[0].Recovery.Continuation)

	// A branch from the first cut response after the raise has had no continuation yet; its
	// continuation record is a new one.
	res, err = restarted.Recover(ctx, Input{Records: r2.Records(), Leaf: branch}, ErrOutputTruncated)
	require.NoError(t, err)
	assert.Equal(t, 1, res.Append[0].Recovery.Continuation)
	assert.Equal(t, res.Leaf, res.Append[0].UUID)
	for _, r := range r2.Records() {
		assert.NotEqual(t, r.UUID, res.Append[0].UUID, "the branch's continuation is a record of its own")
	}

	// The main line: two more cut responses use up the continuations.
	truncate(t, r2, "msg_cut_3")
	_, err = r2.Recover(ctx, restarted, Input{}, ErrOutputTruncated)
	require.NoError(t, err)
	truncate(t, r2, "msg_cut_4")
	res, err = r2.Recover(ctx, restarted, Input{}, ErrOutputTruncated)
	var ote *OutputTruncatedError
	require.ErrorAs(t, err, &ote)
	assert.Equal(t, maxContinuations, ote.Continuations)
	assert.ErrorIs(t, err, ErrOutputTruncated)
	assert.Equal(t, RecoveryTerminal, res.Report.Recovery.Outcome)
}

// A stripped image stays out of every later request: the next turns, a compaction's summary
// request, and the request after the compaction, wherever the same bytes come back.
func TestRecoverMediaStaysStripped(t *testing.T) {
	var summaries []SummaryRequest
	sum := SummarizerFunc(func(_ context.Context, req SummaryRequest) (Summary, error) {
		summaries = append(summaries, req)
		return Summary{Text: "<summary>The user sent screenshots.</summary>", By: "fake"}, nil
	})
	p := recoverPipeline(t, CompactConfig{Summarizer: sum})
	s := recoverConversation(t, 1)
	big := imageSpec{Bytes: 3000, Seed: 9}.block()
	_, err := s.UserBlocks(&transcript.Text{Text: "The crash dialog."}, big)
	require.NoError(t, err)
	ctx := t.Context()
	res, err := s.Prepare(ctx, p, Input{})
	require.NoError(t, err)
	path := ""
	for _, m := range mediaOf(&res.Request) {
		path = m.path
	}
	require.NotEmpty(t, path)
	rejected := &providerError{class: ClassMediaRejected, tree: []error{&MediaRejectedError{Paths: []string{path}, Message: "image exceeds 5 MB maximum"}}}
	res, err = s.Recover(ctx, p, Input{}, rejected)
	require.NoError(t, err)
	hash := MediaHash(big.Source)
	noImage := func(what string, req Request) {
		t.Helper()
		for _, m := range mediaOf(&req) {
			assert.NotEqual(t, hash, MediaHash(m.src), "%s: the refused image at %s", what, m.path)
		}
		assert.Contains(t, string(requestBytes(t, req)), "image removed", what)
	}
	noImage("after the decision", res.Request)
	// The same bytes again, in a tool result this time.
	_, err = s.Assistant(&transcript.Message{ID: "msg_shot", Type: "message", Role: transcript.RoleAssistant, Model: "claude-sonnet-4-5",
		Content: []transcript.Block{&transcript.ToolUse{ID: "toolu_shot", Name: "Screenshot", Input: []byte(`{}`)}}, Usage: &transcript.Usage{InputTokens: 900, OutputTokens: 5}})
	require.NoError(t, err)
	_, err = s.ToolResults(&transcript.ToolResult{ToolUseID: "toolu_shot", Content: []transcript.Block{&transcript.Text{Text: "taken"}, big}})
	require.NoError(t, err)
	res, err = s.Prepare(ctx, p, Input{})
	require.NoError(t, err)
	noImage("the same bytes in a tool result", res.Request)
	res, err = p.Compact(ctx, Input{Records: s.Records(), Leaf: s.Leaf()}, CompactOptions{})
	require.NoError(t, err)
	require.NotEmpty(t, summaries)
	for _, m := range mediaOf(&summaries[len(summaries)-1].Request) {
		assert.NotEqual(t, hash, MediaHash(m.src), "the summary request holds the refused image")
	}
	require.NoError(t, s.Append(res.Append...))
	// A second refusal naming the same (now replaced) position is terminal.
	_, err = p.Recover(ctx, Input{Records: s.Records()}, rejected)
	assert.ErrorContains(t, err, "media rejected again")
}

func TestPickMedia(t *testing.T) {
	img := func(seed byte, n int) *transcript.Image { return imageSpec{Bytes: n, Seed: seed}.block() }
	req := Request{Messages: []RequestMessage{
		{Role: transcript.RoleUser, Content: []transcript.Block{img(1, 100), img(2, 6000)}},
		{Role: transcript.RoleAssistant, Content: []transcript.Block{&transcript.ToolUse{ID: "t1", Name: "Shot", Input: []byte(`{}`)}}},
		{Role: transcript.RoleUser, Content: []transcript.Block{&transcript.ToolResult{ToolUseID: "t1", Content: []transcript.Block{img(3, 100), img(1, 100)}}, &transcript.Text{Text: "see"}}},
	}}
	paths := func(picked []transcript.StrippedMedia) []string {
		var out []string
		for _, m := range picked {
			out = append(out, m.Path)
		}
		return out
	}
	tests := []struct {
		name string
		e    MediaRejectedError
		want []string
	}{
		{"paths", MediaRejectedError{Paths: []string{"messages.2.content.0.content.0"}}, []string{"messages.2.content.0.content.0"}},
		{"a path naming no media", MediaRejectedError{Paths: []string{"messages.2.content.1"}}, nil},
		{"size", MediaRejectedError{MaxBytes: 5000}, []string{"messages.0.content.1"}},
		{"count: the oldest beyond it, each block once", MediaRejectedError{MaxImages: 2}, []string{"messages.0.content.0", "messages.0.content.1"}},
		{"nothing named: the latest message's media", MediaRejectedError{}, []string{"messages.2.content.0.content.0", "messages.2.content.0.content.1"}},
	}
	for _, tt := range tests {
		got, rule := pickMedia(&req, &tt.e)
		assert.Equal(t, tt.want, paths(got), "%s (%s)", tt.name, rule)
	}
	// A source met twice is one block to strip: the count rule's oldest image (seed 1) also
	// stands in the last message, and is listed once.
	got, _ := pickMedia(&Request{Messages: []RequestMessage{{Role: transcript.RoleUser, Content: []transcript.Block{img(1, 100), img(1, 100)}}}}, &MediaRejectedError{})
	assert.Len(t, got, 1)
	assert.Equal(t, "image", got[0].Kind)
}

// A 413 the reactive compaction cannot cure — the conversation is its latest input, which
// every compaction keeps — strips the request's largest media, recorded after the
// compaction's records; the request fits, and the next Prepare builds the same one.
func TestRecoverRequestTooLargeStrips(t *testing.T) {
	p := recoverPipeline(t, CompactConfig{})
	s := recoverConversation(t, 0)
	small, big := imageSpec{Bytes: 200, Seed: 4}.block(), imageSpec{Bytes: 9000, Seed: 5}.block()
	_, err := s.UserBlocks(&transcript.Text{Text: "Both captures."}, small, big)
	require.NoError(t, err)
	ctx := t.Context()
	_, err = s.Prepare(ctx, p, Input{})
	require.NoError(t, err)
	res, err := s.Recover(ctx, p, Input{}, &providerError{class: ClassRequestTooLarge})
	require.NoError(t, err, "%v", res.Report.Recovery)
	assert.Equal(t, RungRequestTooLarge, res.Report.Recovery.Rung)
	require.NotNil(t, res.Report.Compaction)
	assert.Equal(t, CompactCompacted, res.Report.Compaction.Outcome, "the earlier prompt is summarized; the latest input stays")
	var subtypes []string
	for _, r := range res.Append {
		subtypes = append(subtypes, string(r.Subtype))
	}
	assert.Equal(t, []string{"agentctx_recovery", "compact_boundary", "", "agentctx_recovery"}, subtypes)
	last := res.Append[len(res.Append)-1].Recovery
	require.Len(t, last.Media, 1, "only the largest image goes")
	assert.Equal(t, MediaHash(big.Source), last.Media[0].Hash)
	limit := res.Append[0].Recovery.Bytes - 1
	body := requestBytes(t, res.Request)
	assert.Less(t, len(body), limit, "the body fits the lowered limit")
	assert.Contains(t, string(body), small.Source.Data, "the small image stays")
	before := s.Records()[:len(s.Records())-len(res.Append)]
	cin, cres := recoveredInput(before, res)
	checkConservation(t, "413 strip", cin, cres)

	again, err := p.Prepare(ctx, Input{Records: s.Records(), Leaf: s.Leaf()})
	require.NoError(t, err)
	assert.Equal(t, string(body), string(requestBytes(t, again.Request)))
	assert.Empty(t, again.Append)
}

// A recovery cut short by the caller's context records nothing: the rung was not tried.
func TestRecoverCanceledRecordsNothing(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	sum := SummarizerFunc(func(ctx context.Context, _ SummaryRequest) (Summary, error) {
		cancel()
		return Summary{}, ctx.Err()
	})
	p := recoverPipeline(t, CompactConfig{Summarizer: sum, DisableFallback: true})
	s := recoverConversation(t, 3)
	before := len(s.Records())
	res, err := s.Recover(ctx, p, Input{}, ptlError(12_850))
	assert.ErrorIs(t, err, context.Canceled)
	assert.Empty(t, res.Append)
	assert.Len(t, s.Records(), before)
}
