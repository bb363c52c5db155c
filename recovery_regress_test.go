package agentctx

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentctx/agentctx/transcript"

	"github.com/stretchr/testify/require"
)

// cancelAfter is a context cancelled (Done closed, Err Canceled) on its n-th Err call, as a
// caller's cancel from another goroutine can land at any point.
type cancelAfter struct {
	n    int64
	once sync.Once
	done chan struct{}
}

func (c *cancelAfter) Deadline() (time.Time, bool) { return time.Time{}, false }
func (c *cancelAfter) Value(any) any               { return nil }
func (c *cancelAfter) Done() <-chan struct{}       { return c.done }
func (c *cancelAfter) Err() error {
	if atomic.AddInt64(&c.n, -1) < 0 {
		c.once.Do(func() { close(c.done) })
		return context.Canceled
	}
	return nil
}

// TestRegressStripLargestCanceledPanics cancels the context at every point of a 413's rung
// (the reactive compaction, then the media strip): Recover never panics and, cut short,
// records nothing.
func TestRegressStripLargestCanceledPanics(t *testing.T) {
	p := recoverPipeline(t, CompactConfig{})
	s := recoverConversation(t, 0)
	small, big := imageSpec{Bytes: 200, Seed: 4}.block(), imageSpec{Bytes: 9000, Seed: 5}.block()
	_, err := s.UserBlocks(&transcript.Text{Text: "Both captures."}, small, big)
	require.NoError(t, err)
	in := Input{Records: s.Records(), Leaf: s.Leaf()}
	for n := range int64(400) {
		ctx := &cancelAfter{n: n, done: make(chan struct{})}
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("Err cancelled on call %d: Recover panics: %v\n%s", n+1, r, debug.Stack())
				}
			}()
			res, err := p.Recover(ctx, in, &providerError{class: ClassRequestTooLarge})
			if errors.Is(err, context.Canceled) {
				require.Empty(t, res.Append, "cut short at Err call %d: nothing is recorded", n+1)
				require.NotNil(t, res.Report.Recovery)
			}
		}()
	}
}

// A 413 on the first request of a conversation, whose one message holds a large image: the
// doc says the largest media blocks are stripped when the body is still over after the
// reactive compaction.
func TestRegressRequestTooLargeSingleMessage(t *testing.T) {
	p := recoverPipeline(t, CompactConfig{})
	s := NewSession(SessionOptions{ID: "s-413", Now: func() time.Time { return recoverNow }})
	big := imageSpec{Bytes: 9000, Seed: 5}.block()
	_, err := s.UserBlocks(&transcript.Text{Text: "One capture."}, big)
	require.NoError(t, err)
	_, err = s.Prepare(t.Context(), p, Input{})
	require.NoError(t, err)
	res, err := s.Recover(t.Context(), p, Input{}, &providerError{class: ClassRequestTooLarge})
	require.NoError(t, err, "%+v", res.Report.Recovery)
	require.NotContains(t, string(requestBytes(t, res.Request)), big.Source.Data)
}

func TestRegressRecoverConcurrent(t *testing.T) {
	p := recoverPipeline(t, CompactConfig{})
	var wg sync.WaitGroup
	for g := range 4 {
		s := recoverConversation(t, 3)
		if g%2 == 1 {
			truncate(t, s, "msg_cut")
		}
		in := Input{Records: s.Records(), Leaf: s.Leaf()}
		wg.Go(func() {
			if g%2 == 1 {
				_, _ = p.Recover(context.Background(), in, ErrOutputTruncated)
			} else {
				_, _ = p.Recover(context.Background(), in, ptlError(12_850))
			}
		})
	}
	wg.Wait()
}

// Recover's doc: "Result.Report.Recovery says which rung ran and why, also with an error."
// TestRegressRecoverReportOnBuildError: the report is there when the records cannot rebuild
// the refused request.
func TestRegressRecoverReportOnBuildError(t *testing.T) {
	p := recoverPipeline(t, CompactConfig{})
	s := recoverConversation(t, 1)
	res, err := p.Recover(t.Context(), Input{Records: s.Records(), Leaf: "no-such-uuid"}, ptlError(12_850))
	require.Error(t, err)
	require.NotNil(t, res.Report.Recovery, "err: %v", err)
	require.Equal(t, RecoveryPassed, res.Report.Recovery.Outcome)
	require.Empty(t, res.Append)
}

// TestRegressOutputCapRaiseHasNoEffect: when the window leaves no room above the output cap,
// raising it would resend the refused request (max_tokens is clamped by the room left), so
// Recover goes straight to a continuation and keeps the raise unspent.
func TestRegressOutputCapRaiseHasNoEffect(t *testing.T) {
	p, err := New(Config{Model: "claude-sonnet-4-5", ContextWindow: 200_000, MaxOutputTokens: 32_000, Tokens: EstimateCounter{},
		Now: func() time.Time { return recoverNow }})
	require.NoError(t, err)
	s := recoverConversation(t, 1)
	// a long conversation: little room left under the window
	for i := range 43 {
		_, err := s.User(fmt.Sprintf("More %d ", i) + filler(12000))
		require.NoError(t, err)
		_, err = s.Assistant(&transcript.Message{ID: fmt.Sprintf("m_%d", i), Type: "message", Role: transcript.RoleAssistant, Model: "claude-sonnet-4-5",
			Content: []transcript.Block{&transcript.Text{Text: "ok"}}, StopReason: "end_turn"})
		require.NoError(t, err)
	}
	_, err = s.User("go on")
	require.NoError(t, err)
	first, err := s.Prepare(t.Context(), p, Input{NoCompact: true})
	t.Logf("first max_tokens %d, pressure %d, err %v", first.Request.MaxTokens, first.Report.Pressure.Tokens, err)
	truncate(t, s, "msg_cut")
	res, err := s.Recover(t.Context(), p, Input{NoCompact: true}, ErrOutputTruncated)
	t.Logf("rung %s outcome %s: max_tokens %d (err %v)", res.Report.Recovery.Rung, res.Report.Recovery.Outcome, res.Request.MaxTokens, err)
	require.NoError(t, err)
	require.Equal(t, RungContinue, res.Report.Recovery.Rung, "no raise that raises nothing")
	require.Len(t, res.Append, 1)
	require.NotNil(t, res.Append[0].Recovery)
	require.Equal(t, RungContinue, res.Append[0].Recovery.Rung)
	require.NotEqual(t, first.Request.Messages, res.Request.Messages, "the request asks for the rest")
}
