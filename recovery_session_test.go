// The recovery tests that drive a session.Session: external tests, since session imports the
// root package. It reaches the internal tests' helpers through recovery_export_test.go.

package agentctx_test

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"testing"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/provider"
	"github.com/agentctx/agentctx/session"
	"github.com/agentctx/agentctx/summarize"
	"github.com/agentctx/agentctx/transcript"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// recoverConversation is a session of rounds user/answer rounds, then a user prompt.
func recoverConversation(t *testing.T, rounds int) *session.Session {
	t.Helper()
	n := 0
	s := session.New(session.Options{ID: "s-recover", Now: func() time.Time { return agentctx.RecoverNow },
		NewUUID: func() string { n++; return fmt.Sprintf("00000000-0000-4000-8000-%012d", n) }})
	for i := range rounds {
		_, err := s.User(fmt.Sprintf("Round %d. ", i) + agentctx.Filler(1500))
		require.NoError(t, err)
		_, err = s.Assistant(&transcript.Message{ID: fmt.Sprintf("msg_%d", i), Type: "message", Role: transcript.RoleAssistant, Model: "claude-sonnet-4-5",
			Content: []transcript.Block{&transcript.Text{Text: "Done. " + agentctx.Filler(300)}}, StopReason: "end_turn", Usage: &transcript.Usage{InputTokens: 500 * (i + 1), OutputTokens: 80}})
		require.NoError(t, err)
	}
	_, err := s.User("What is left?")
	require.NoError(t, err)
	return s
}

// The prompt-too-long rung: once per response. Whether it ran is read from the records, so
// a restarted process (a new Pipeline on the records read back from JSON) finds it spent,
// and a new response resets it.
func TestRecoverPromptTooLongRestart(t *testing.T) {
	p := agentctx.RecoverPipeline(t, agentctx.CompactConfig{})
	s := recoverConversation(t, 3)
	ctx := t.Context()
	res, err := s.Recover(ctx, p, agentctx.Input{}, agentctx.PTLError(12_850))
	require.NoError(t, err)
	assert.Equal(t, agentctx.RecoveryRecovered, res.Report.Recovery.Outcome)
	require.NotNil(t, res.Report.Compaction)
	assert.Equal(t, agentctx.CompactCompacted, res.Report.Compaction.Outcome)
	assert.Equal(t, "extractive", res.Report.Compaction.Summarizer, "without a Summarizer, what Compact uses")

	// A restart: the transcript read back, a new pipeline.
	restarted := agentctx.RecoverPipeline(t, agentctx.CompactConfig{})
	records := agentctx.RoundTrip(t, s.Records())
	again, err := restarted.Recover(ctx, agentctx.Input{Records: records}, agentctx.PTLError(12_400))
	var ptl *provider.PromptTooLongError
	require.ErrorAs(t, err, &ptl)
	assert.Equal(t, 12_400, ptl.Tokens, "the provider's figures")
	assert.Equal(t, agentctx.RecoveryTerminal, again.Report.Recovery.Outcome)
	assert.Empty(t, again.Append)

	// A response, then the provider refuses again: the rung runs again.
	r2, err := session.Resume(records, session.Options{Now: func() time.Time { return agentctx.RecoverNow }})
	require.NoError(t, err)
	_, err = r2.Assistant(&transcript.Message{ID: "msg_after", Type: "message", Role: transcript.RoleAssistant, Model: "claude-sonnet-4-5",
		Content: []transcript.Block{&transcript.Text{Text: "Nothing is left."}}, StopReason: "end_turn", Usage: &transcript.Usage{InputTokens: 900, OutputTokens: 5}})
	require.NoError(t, err)
	_, err = r2.User("Then " + agentctx.Filler(2000))
	require.NoError(t, err)
	third, err := restarted.Recover(ctx, agentctx.Input{Records: r2.Records()}, agentctx.PTLError(12_900))
	require.NoError(t, err)
	assert.Equal(t, agentctx.RecoveryRecovered, third.Report.Recovery.Outcome)
}

// truncate appends a response cut at max_tokens.
func truncate(t *testing.T, s *session.Session, id string) {
	t.Helper()
	_, err := s.Assistant(&transcript.Message{ID: id, Type: "message", Role: transcript.RoleAssistant, Model: "claude-sonnet-4-5",
		Content: []transcript.Block{&transcript.Text{Text: "The guide: " + id}}, StopReason: "max_tokens", Usage: &transcript.Usage{InputTokens: 900, OutputTokens: 16_000}})
	require.NoError(t, err)
}

// The output rungs are counted from the records along the chain: a restart continues the
// count, and a branch from before the continuations starts it again.
func TestRecoverOutputRestartAndBranch(t *testing.T) {
	p := agentctx.WindowPipeline(t, 200_000, agentctx.CompactConfig{})
	s := recoverConversation(t, 1)
	ctx := t.Context()

	_, err := s.Recover(ctx, p, agentctx.Input{}, provider.ErrOutputTruncated)
	assert.ErrorContains(t, err, "no response that stopped at max_tokens")

	truncate(t, s, "msg_cut_0")
	res, err := s.Recover(ctx, p, agentctx.Input{}, provider.ErrOutputTruncated)
	require.NoError(t, err)
	assert.Equal(t, transcript.RungOutputCap, res.Report.Recovery.Rung)
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
	res, err = s.Recover(ctx, p, agentctx.Input{}, provider.ErrOutputTruncated)
	require.NoError(t, err)
	assert.Equal(t, transcript.RungContinue, res.Report.Recovery.Rung)
	truncate(t, s, "msg_cut_2")

	// A restart continues the count.
	restarted := agentctx.WindowPipeline(t, 200_000, agentctx.CompactConfig{})
	records := agentctx.RoundTrip(t, s.Records())
	r2, err := session.Resume(records, session.Options{Now: func() time.Time { return agentctx.RecoverNow }})
	require.NoError(t, err)
	res, err = r2.Recover(ctx, restarted, agentctx.Input{}, provider.ErrOutputTruncated)
	require.NoError(t, err)
	assert.Equal(t, 2, res.Append[0].Recovery.Continuation)

	// A branch from the first cut response after the raise has had no continuation yet; its
	// continuation record is a new one.
	res, err = restarted.Recover(ctx, agentctx.Input{Records: r2.Records(), Leaf: branch}, provider.ErrOutputTruncated)
	require.NoError(t, err)
	assert.Equal(t, 1, res.Append[0].Recovery.Continuation)
	assert.Equal(t, res.Leaf, res.Append[0].UUID)
	for _, r := range r2.Records() {
		assert.NotEqual(t, r.UUID, res.Append[0].UUID, "the branch's continuation is a record of its own")
	}

	// The main line: two more cut responses use up the continuations.
	truncate(t, r2, "msg_cut_3")
	_, err = r2.Recover(ctx, restarted, agentctx.Input{}, provider.ErrOutputTruncated)
	require.NoError(t, err)
	truncate(t, r2, "msg_cut_4")
	res, err = r2.Recover(ctx, restarted, agentctx.Input{}, provider.ErrOutputTruncated)
	var ote *provider.OutputTruncatedError
	require.ErrorAs(t, err, &ote)
	assert.Equal(t, 3, ote.Continuations, "at most three continuation turns")
	assert.ErrorIs(t, err, provider.ErrOutputTruncated)
	assert.Equal(t, agentctx.RecoveryTerminal, res.Report.Recovery.Outcome)
}

// A 413 on the first request of a conversation, whose one message holds a large image: the
// doc says the largest media blocks are stripped when the body is still over after the
// reactive compaction.
func TestRegressRequestTooLargeSingleMessage(t *testing.T) {
	p := agentctx.RecoverPipeline(t, agentctx.CompactConfig{})
	s := session.New(session.Options{ID: "s-413", Now: func() time.Time { return agentctx.RecoverNow }})
	big := agentctx.ImageSpec{Bytes: 9000, Seed: 5}.Block()
	_, err := s.UserBlocks(&transcript.Text{Text: "One capture."}, big)
	require.NoError(t, err)
	_, err = s.Prepare(t.Context(), p, agentctx.Input{})
	require.NoError(t, err)
	res, err := s.Recover(t.Context(), p, agentctx.Input{}, agentctx.NewProviderError(provider.ClassRequestTooLarge))
	require.NoError(t, err, "%+v", res.Report.Recovery)
	require.NotContains(t, string(agentctx.RequestBytes(t, res.Request)), big.Source.Data)
}

func TestRecoverPassesWhatIsNotOurs(t *testing.T) {
	p := agentctx.RecoverPipeline(t, agentctx.CompactConfig{})
	s := recoverConversation(t, 1)
	for _, err := range []error{
		agentctx.NewProviderError(provider.ClassRetryable),
		agentctx.NewProviderError(provider.ClassInvalidRequest),
		agentctx.NewProviderError(provider.ClassFatal),
		context.DeadlineExceeded,
	} {
		res, rerr := p.Recover(t.Context(), agentctx.Input{Records: s.Records()}, err)
		assert.True(t, err == rerr, "%v: the error goes back as it is", err)
		assert.Empty(t, res.Append, "%v: nothing to record", err)
		require.NotNil(t, res.Report.Recovery)
		assert.Equal(t, agentctx.RecoveryPassed, res.Report.Recovery.Outcome)
		assert.Equal(t, provider.ClassOf(err), res.Report.Recovery.Class)
	}
	_, err := p.Recover(t.Context(), agentctx.Input{Records: s.Records()}, nil)
	assert.ErrorContains(t, err, "no error to recover from")
}

// The reactive compaction counts toward the circuit breaker: a failed attempt is recorded
// as an auto failure, and the rung ends with the prompt-too-long error.
func TestRecoverPromptTooLongBreaker(t *testing.T) {
	failing := summarize.Func(func(context.Context, summarize.Request) (summarize.Summary, error) {
		return summarize.Summary{}, errors.New("summarizer down")
	})
	p := agentctx.RecoverPipeline(t, agentctx.CompactConfig{Summarizer: failing, DisableFallback: true})
	s := recoverConversation(t, 3)
	res, err := s.Recover(t.Context(), p, agentctx.Input{}, agentctx.PTLError(12_850))
	require.ErrorIs(t, err, provider.ErrPromptTooLong)
	assert.Equal(t, agentctx.RecoveryTerminal, res.Report.Recovery.Outcome)
	require.Len(t, res.Append, 2)
	assert.Equal(t, transcript.SubtypeRecovery, res.Append[0].Subtype)
	assert.Equal(t, transcript.SubtypeCompactFailure, res.Append[1].Subtype)
	st, err := p.CompactState(s.Records(), s.Leaf())
	require.NoError(t, err)
	assert.Equal(t, 1, st.ConsecutiveFailures)
}

func TestRecoverForkNeverCompacts(t *testing.T) {
	p := agentctx.RecoverPipeline(t, agentctx.CompactConfig{})
	s := recoverConversation(t, 3)
	res, err := p.Recover(t.Context(), agentctx.Input{Records: s.Records(), SkipCacheWrite: true}, agentctx.PTLError(12_850))
	assert.ErrorContains(t, err, "a fork never compacts")
	assert.Equal(t, agentctx.RecoveryTerminal, res.Report.Recovery.Outcome)
}

// A stripped image stays out of every later request: the next turns, a compaction's summary
// request, and the request after the compaction, wherever the same bytes come back.
func TestRecoverMediaStaysStripped(t *testing.T) {
	var summaries []summarize.Request
	sum := summarize.Func(func(_ context.Context, req summarize.Request) (summarize.Summary, error) {
		summaries = append(summaries, req)
		return summarize.Summary{Text: "<summary>The user sent screenshots.</summary>", By: "fake"}, nil
	})
	p := agentctx.RecoverPipeline(t, agentctx.CompactConfig{Summarizer: sum})
	s := recoverConversation(t, 1)
	big := agentctx.ImageSpec{Bytes: 3000, Seed: 9}.Block()
	_, err := s.UserBlocks(&transcript.Text{Text: "The crash dialog."}, big)
	require.NoError(t, err)
	ctx := t.Context()
	res, err := s.Prepare(ctx, p, agentctx.Input{})
	require.NoError(t, err)
	path := ""
	for i, m := range res.Request.Messages { // the last media block's path, as the provider names it
		for j, b := range m.Content {
			if b.Kind() == transcript.KindImage || b.Kind() == transcript.KindDocument {
				path = fmt.Sprintf("messages.%d.content.%d", i, j)
			}
		}
	}
	require.NotEmpty(t, path)
	rejected := agentctx.NewProviderError(provider.ClassMediaRejected, &provider.MediaRejectedError{Paths: []string{path}, Message: "image exceeds 5 MB maximum"})
	res, err = s.Recover(ctx, p, agentctx.Input{}, rejected)
	require.NoError(t, err)
	hash := transcript.MediaHash(big.Source)
	noImage := func(what string, req provider.Request) {
		t.Helper()
		for _, img := range imagesOf(req) {
			assert.NotEqual(t, hash, transcript.MediaHash(img.Source), "%s: the refused image", what)
		}
		assert.Contains(t, string(agentctx.RequestBytes(t, req)), "image removed", what)
	}
	noImage("after the decision", res.Request)
	// The same bytes again, in a tool result this time.
	_, err = s.Assistant(&transcript.Message{ID: "msg_shot", Type: "message", Role: transcript.RoleAssistant, Model: "claude-sonnet-4-5",
		Content: []transcript.Block{&transcript.ToolUse{ID: "toolu_shot", Name: "Screenshot", Input: []byte(`{}`)}}, Usage: &transcript.Usage{InputTokens: 900, OutputTokens: 5}})
	require.NoError(t, err)
	_, err = s.ToolResults(&transcript.ToolResult{ToolUseID: "toolu_shot", Content: []transcript.Block{&transcript.Text{Text: "taken"}, big}})
	require.NoError(t, err)
	res, err = s.Prepare(ctx, p, agentctx.Input{})
	require.NoError(t, err)
	noImage("the same bytes in a tool result", res.Request)
	res, err = p.Compact(ctx, agentctx.Input{Records: s.Records(), Leaf: s.Leaf()}, agentctx.CompactOptions{})
	require.NoError(t, err)
	require.NotEmpty(t, summaries)
	for _, img := range imagesOf(summaries[len(summaries)-1].Request) {
		assert.NotEqual(t, hash, transcript.MediaHash(img.Source), "the summary request holds the refused image")
	}
	require.NoError(t, s.Append(res.Append...))
	// A second refusal naming the same (now replaced) position is terminal.
	_, err = p.Recover(ctx, agentctx.Input{Records: s.Records()}, rejected)
	assert.ErrorContains(t, err, "media rejected again")
}

// A recovery cut short by the caller's context records nothing: the rung was not tried.
func TestRecoverCanceledRecordsNothing(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	sum := summarize.Func(func(ctx context.Context, _ summarize.Request) (summarize.Summary, error) {
		cancel()
		return summarize.Summary{}, ctx.Err()
	})
	p := agentctx.RecoverPipeline(t, agentctx.CompactConfig{Summarizer: sum, DisableFallback: true})
	s := recoverConversation(t, 3)
	before := len(s.Records())
	res, err := s.Recover(ctx, p, agentctx.Input{}, agentctx.PTLError(12_850))
	assert.ErrorIs(t, err, context.Canceled)
	assert.Empty(t, res.Append)
	assert.Len(t, s.Records(), before)
}

// TestRegressStripLargestCanceledPanics cancels the context at every point of a 413's rung
// (the reactive compaction, then the media strip): Recover never panics and, cut short,
// records nothing.
func TestRegressStripLargestCanceledPanics(t *testing.T) {
	p := agentctx.RecoverPipeline(t, agentctx.CompactConfig{})
	s := recoverConversation(t, 0)
	small, big := agentctx.ImageSpec{Bytes: 200, Seed: 4}.Block(), agentctx.ImageSpec{Bytes: 9000, Seed: 5}.Block()
	_, err := s.UserBlocks(&transcript.Text{Text: "Both captures."}, small, big)
	require.NoError(t, err)
	in := agentctx.Input{Records: s.Records(), Leaf: s.Leaf()}
	for n := range int64(400) {
		ctx := agentctx.NewCancelAfter(n)
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("Err cancelled on call %d: Recover panics: %v\n%s", n+1, r, debug.Stack())
				}
			}()
			res, err := p.Recover(ctx, in, agentctx.NewProviderError(provider.ClassRequestTooLarge))
			if errors.Is(err, context.Canceled) {
				require.Empty(t, res.Append, "cut short at Err call %d: nothing is recorded", n+1)
				require.NotNil(t, res.Report.Recovery)
			}
		}()
	}
}

func TestRegressRecoverConcurrent(t *testing.T) {
	p := agentctx.RecoverPipeline(t, agentctx.CompactConfig{})
	var wg sync.WaitGroup
	for g := range 4 {
		s := recoverConversation(t, 3)
		if g%2 == 1 {
			truncate(t, s, "msg_cut")
		}
		in := agentctx.Input{Records: s.Records(), Leaf: s.Leaf()}
		wg.Go(func() {
			if g%2 == 1 {
				_, _ = p.Recover(context.Background(), in, provider.ErrOutputTruncated)
			} else {
				_, _ = p.Recover(context.Background(), in, agentctx.PTLError(12_850))
			}
		})
	}
	wg.Wait()
}

// Recover's doc: "Result.Report.Recovery says which rung ran and why, also with an error."
// TestRegressRecoverReportOnBuildError: the report is there when the records cannot rebuild
// the refused request.
func TestRegressRecoverReportOnBuildError(t *testing.T) {
	p := agentctx.RecoverPipeline(t, agentctx.CompactConfig{})
	s := recoverConversation(t, 1)
	res, err := p.Recover(t.Context(), agentctx.Input{Records: s.Records(), Leaf: "no-such-uuid"}, agentctx.PTLError(12_850))
	require.Error(t, err)
	require.NotNil(t, res.Report.Recovery, "err: %v", err)
	require.Equal(t, agentctx.RecoveryPassed, res.Report.Recovery.Outcome)
	require.Empty(t, res.Append)
}

// TestRegressOutputCapRaiseHasNoEffect: when the window leaves no room above the output cap,
// raising it would resend the refused request (max_tokens is clamped by the room left), so
// Recover goes straight to a continuation and keeps the raise unspent.
func TestRegressOutputCapRaiseHasNoEffect(t *testing.T) {
	p, err := agentctx.New(agentctx.Config{Model: "claude-sonnet-4-5", ContextWindow: 200_000, MaxOutputTokens: 32_000, Tokens: agentctx.EstimateCounter{},
		Now: func() time.Time { return agentctx.RecoverNow }})
	require.NoError(t, err)
	s := recoverConversation(t, 1)
	// a long conversation: little room left under the window
	for i := range 43 {
		_, err := s.User(fmt.Sprintf("More %d ", i) + agentctx.Filler(12000))
		require.NoError(t, err)
		_, err = s.Assistant(&transcript.Message{ID: fmt.Sprintf("m_%d", i), Type: "message", Role: transcript.RoleAssistant, Model: "claude-sonnet-4-5",
			Content: []transcript.Block{&transcript.Text{Text: "ok"}}, StopReason: "end_turn"})
		require.NoError(t, err)
	}
	_, err = s.User("go on")
	require.NoError(t, err)
	first, err := s.Prepare(t.Context(), p, agentctx.Input{NoCompact: true})
	t.Logf("first max_tokens %d, pressure %d, err %v", first.Request.MaxTokens, first.Report.Pressure.Tokens, err)
	truncate(t, s, "msg_cut")
	res, err := s.Recover(t.Context(), p, agentctx.Input{NoCompact: true}, provider.ErrOutputTruncated)
	t.Logf("rung %s outcome %s: max_tokens %d (err %v)", res.Report.Recovery.Rung, res.Report.Recovery.Outcome, res.Request.MaxTokens, err)
	require.NoError(t, err)
	require.Equal(t, transcript.RungContinue, res.Report.Recovery.Rung, "no raise that raises nothing")
	require.Len(t, res.Append, 1)
	require.NotNil(t, res.Append[0].Recovery)
	require.Equal(t, transcript.RungContinue, res.Append[0].Recovery.Rung)
	require.NotEqual(t, first.Request.Messages, res.Request.Messages, "the request asks for the rest")
}

// imagesOf returns the images of req, those inside tool results included.
func imagesOf(req provider.Request) []*transcript.Image {
	var out []*transcript.Image
	for _, m := range req.Messages {
		for _, b := range m.Content {
			blocks := []transcript.Block{b}
			if tr, ok := b.(*transcript.ToolResult); ok {
				blocks = append(blocks, tr.Content...)
			}
			for _, b := range blocks {
				if img, ok := b.(*transcript.Image); ok {
					out = append(out, img)
				}
			}
		}
	}
	return out
}

// hostError is a host's own error type for a provider refusal, which agentctx's adapters
// never made.
type hostError struct{ code string }

func (e *hostError) Error() string { return "host provider: " + e.code }

// Config.ClassifyError lets a host's own errors reach the recovery ladder: the host maps its
// context-length error to ClassPromptTooLong and Recover compacts, without figures; an error
// the hook leaves (ClassNone) is classified by provider.ClassOf; without the hook the host's
// error passes as not the context's.
func TestRecoverClassifyError(t *testing.T) {
	classify := func(err error) provider.ErrorClass {
		if e, ok := errors.AsType[*hostError](err); ok && e.code == "context_length_exceeded" {
			return provider.ClassPromptTooLong
		}
		return provider.ClassNone
	}
	cfg := func(hook func(error) provider.ErrorClass) agentctx.Config {
		return agentctx.Config{Model: "claude-sonnet-4-5", ContextWindow: 12_000, MaxOutputTokens: 16_000, Tokens: agentctx.EstimateCounter{},
			Now: func() time.Time { return agentctx.RecoverNow }, ClassifyError: hook}
	}
	hosted, err := agentctx.New(cfg(classify))
	require.NoError(t, err)
	plain, err := agentctx.New(cfg(nil))
	require.NoError(t, err)

	s := recoverConversation(t, 3)
	res, err := hosted.Recover(t.Context(), agentctx.Input{Records: s.Records()}, &hostError{code: "context_length_exceeded"})
	require.NoError(t, err)
	assert.Equal(t, provider.ClassPromptTooLong, res.Report.Recovery.Class)
	assert.Equal(t, agentctx.RecoveryRecovered, res.Report.Recovery.Outcome)
	require.NotNil(t, res.Report.Compaction)
	assert.Equal(t, agentctx.CompactCompacted, res.Report.Compaction.Outcome)
	assert.NotEmpty(t, res.Append)

	for _, e := range []error{&hostError{code: "rate_limited"}, agentctx.NewProviderError(provider.ClassRetryable)} {
		res, rerr := hosted.Recover(t.Context(), agentctx.Input{Records: s.Records()}, e)
		assert.True(t, e == rerr, "%v goes back as it is", e)
		assert.Equal(t, provider.ClassOf(e), res.Report.Recovery.Class, "%v: left to ClassOf", e)
	}
	res, rerr := plain.Recover(t.Context(), agentctx.Input{Records: s.Records()}, &hostError{code: "context_length_exceeded"})
	assert.Error(t, rerr)
	assert.Equal(t, agentctx.RecoveryPassed, res.Report.Recovery.Outcome, "without the hook the host's error is not ours")
	assert.Empty(t, res.Append)
}

// Recover from a step hook: a host that cannot send the recovered request at once (its step
// already failed) appends Recover's records and sends what the next Prepare builds. That
// request is the one Recover returned, for each rung that changes the view: the fix is in the
// records, not in the call.
func TestRecoverRecordNowApplyNext(t *testing.T) {
	for _, tt := range []struct {
		name string
		err  error
	}{
		{"prompt too long", agentctx.PTLError(12_850)},
		{"output cut at max_tokens", &provider.OutputTruncatedError{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := agentctx.RecoverPipeline(t, agentctx.CompactConfig{})
			s := recoverConversation(t, 3)
			if tt.name == "output cut at max_tokens" {
				truncate(t, s, "msg_cut")
			}
			rec, err := p.Recover(t.Context(), agentctx.Input{Records: s.Records()}, tt.err)
			require.NoError(t, err)
			require.NotEmpty(t, rec.Append, "the fix is recorded")
			require.NoError(t, s.Append(rec.Append...))
			next, err := s.Prepare(t.Context(), p, agentctx.Input{})
			require.NoError(t, err)
			assert.Equal(t, string(agentctx.RequestBytes(t, rec.Request)), string(agentctx.RequestBytes(t, next.Request)))
			assert.Empty(t, next.Append, "nothing decided again")
		})
	}
}
