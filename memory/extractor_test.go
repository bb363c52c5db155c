package memory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/summarize"
	"github.com/agentctx/agentctx/transcript"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const session = "33333333-3333-4333-8333-333333333333"

// convo builds a conversation's records: for each entry, a user prompt and an answer with
// that many tool calls, each answered.
type convo struct {
	records []transcript.Record
	leaf    string
	n       int
}

func (c *convo) add(r transcript.Record) string {
	c.n++
	r.UUID = transcript.ContentUUID("memory-test", fmt.Sprint(c.n))
	r.ParentUUID, r.SessionID = c.leaf, session
	r.Timestamp = "2026-03-02T10:00:00.000Z"
	c.records = append(c.records, r)
	c.leaf = r.UUID
	return r.UUID
}

func (c *convo) round(prompt string, calls int) {
	c.add(transcript.Record{Type: transcript.TypeUser, Message: &transcript.Message{Role: transcript.RoleUser, StringContent: true, Content: []transcript.Block{&transcript.Text{Text: prompt}}}})
	for k := range calls {
		id := fmt.Sprintf("toolu_%d_%d", c.n, k)
		c.add(transcript.Record{Type: transcript.TypeAssistant, Message: &transcript.Message{ID: fmt.Sprintf("msg_%d", c.n), Role: transcript.RoleAssistant,
			Content: []transcript.Block{&transcript.ToolUse{ID: id, Name: "Bash", Input: json.RawMessage(`{"command":"ls"}`)}}}})
		c.add(transcript.Record{Type: transcript.TypeUser, Message: &transcript.Message{Role: transcript.RoleUser, Content: []transcript.Block{
			&transcript.ToolResult{ToolUseID: id, StringContent: true, Content: []transcript.Block{&transcript.Text{Text: "ok"}}}}}})
	}
	c.add(transcript.Record{Type: transcript.TypeAssistant, Message: &transcript.Message{ID: fmt.Sprintf("msg_%d", c.n), Role: transcript.RoleAssistant,
		Content: []transcript.Block{&transcript.Text{Text: "done: " + prompt}}}})
}

// extracted appends an extraction record through the current leaf, at tokens.
func (c *convo) extracted(summary string, tokens int) {
	c.records = append(c.records, transcript.Record{Type: transcript.TypeSystem, Subtype: transcript.SubtypeSessionMemory,
		UUID: transcript.ContentUUID("memory-test-sm", c.leaf), SessionID: session,
		SessionMemory: &transcript.SessionMemoryExtraction{Summary: summary, Through: c.leaf, Tokens: tokens}})
}

func TestDue(t *testing.T) {
	for _, tc := range []struct {
		name   string
		build  func(*convo)
		tokens int
		cfg    Config
		want   bool
		calls  int
	}{
		{name: "first, under 10k", build: func(c *convo) { c.round("a", 5) }, tokens: 9_999, calls: 5},
		{name: "first, at 10k", build: func(c *convo) { c.round("a", 0) }, tokens: 10_000, want: true},
		{name: "first, custom gate", build: func(c *convo) { c.round("a", 0) }, tokens: 2_000, cfg: Config{FirstTokens: 2_000}, want: true},
		{name: "growth and calls", build: func(c *convo) { c.round("a", 1); c.extracted("s", 10_000); c.round("b", 3) }, tokens: 15_000, want: true, calls: 3},
		{name: "growth short", build: func(c *convo) { c.round("a", 1); c.extracted("s", 10_000); c.round("b", 3) }, tokens: 14_999, calls: 3},
		{name: "calls short", build: func(c *convo) { c.round("a", 1); c.extracted("s", 10_000); c.round("b", 2) }, tokens: 30_000, calls: 2},
		{name: "latest extraction counts", build: func(c *convo) {
			c.round("a", 4)
			c.extracted("s1", 10_000)
			c.round("b", 4)
			c.extracted("s2", 16_000)
			c.round("c", 3)
		}, tokens: 20_000, calls: 3},
		{name: "extraction off the chain is none", build: func(c *convo) {
			c.round("a", 1)
			c.extracted("s", 10_000)
			c.leaf = "" // a new conversation in the same file
			c.round("b", 0)
		}, tokens: 10_500, want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &convo{}
			tc.build(c)
			ex, err := New(tc.cfg)
			require.NoError(t, err)
			d := ex.Due(c.records, tc.tokens)
			assert.Equal(t, tc.want, d.Due, d.Reason)
			assert.Equal(t, tc.calls, d.ToolCalls, d.Reason)
		})
	}
}

func TestNewRejectsNegative(t *testing.T) {
	_, err := New(Config{GrowthTokens: -1, Wait: -time.Second})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "memory: Config.GrowthTokens -1 is negative")
	assert.Contains(t, err.Error(), "memory: Config.Wait -1000000000 is negative")
}

// fakeClock is a clock whose timers fire when the test says so: After reports each wait on
// waits and returns fire.
type fakeClock struct {
	now   time.Time
	waits chan time.Duration
	fire  chan time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC), waits: make(chan time.Duration, 1), fire: make(chan time.Time)}
}

func (c *fakeClock) Now() time.Time { return c.now }

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.waits <- d
	return c.fire
}

// blocking is a Summarizer that reports each call on called and answers with what release
// gives it.
type blocking struct {
	called  chan struct{}
	release chan string
}

func (b blocking) Summarize(ctx context.Context, req summarize.Request) (summarize.Summary, error) {
	b.called <- struct{}{}
	text, ok := <-b.release
	if !ok {
		return summarize.Summary{}, errors.New("released without an answer")
	}
	return summarize.Summary{Text: text, By: "blocking"}, nil
}

// TestSessionMemoryWait checks the bounded wait for an extraction in flight, on a fake clock:
// it waits at most Wait for it, uses it when it finishes in time, falls back on the
// transcript's latest extraction when the wait runs out, and does not wait for one older
// than Stale.
func TestSessionMemoryWait(t *testing.T) {
	p, err := agentctx.New(agentctx.Config{ContextWindow: 50_000})
	require.NoError(t, err)
	for _, tc := range []struct {
		name    string
		age     time.Duration // how old the extraction in flight is when the compaction asks
		finish  bool          // it finishes during the wait
		wait    bool          // the compaction waits
		summary string
	}{
		{name: "finishes in time", finish: true, wait: true, summary: "fresh notes"},
		{name: "wait runs out", wait: true, summary: "older notes"},
		{name: "at the stale age still waited for", age: DefaultStale, wait: true, summary: "older notes"},
		{name: "stale: not waited for", age: DefaultStale + time.Second, summary: "older notes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &convo{}
			c.round("first", 1)
			c.extracted("older notes", 10_000)
			older := c.leaf
			c.round("second", 3)
			clk := newFakeClock()
			sum := blocking{called: make(chan struct{}), release: make(chan string, 1)}
			ex, err := New(Config{Summarizer: sum, Clock: clk})
			require.NoError(t, err)

			type result struct {
				rec transcript.Record
				err error
			}
			extracted := make(chan result, 1)
			go func() {
				rec, err := ex.Extract(t.Context(), p, agentctx.Input{Records: c.records}, 16_000)
				extracted <- result{rec, err}
			}()
			<-sum.called // in flight
			clk.now = clk.now.Add(tc.age)

			got := make(chan agentctx.Memory, 1)
			go func() {
				m, err := ex.SessionMemory(t.Context(), agentctx.MemoryRequest{SessionID: session, Leaf: c.leaf, Records: c.records})
				assert.NoError(t, err)
				got <- m
			}()
			if tc.wait {
				assert.Equal(t, DefaultWait, <-clk.waits, "the wait is bounded by Wait")
				if tc.finish {
					sum.release <- "<summary>fresh notes</summary>"
					<-extracted
				} else {
					clk.fire <- clk.now.Add(DefaultWait)
				}
			}
			m := <-got
			assert.Equal(t, tc.summary, m.Summary)
			if tc.finish {
				assert.Equal(t, c.leaf, m.Through, "the fresh extraction covers the leaf")
			} else {
				assert.Equal(t, older, m.Through)
			}
			if !tc.finish {
				close(sum.release)
				r := <-extracted
				require.Error(t, r.err)
			}
			select {
			case d := <-clk.waits:
				t.Fatalf("an unexpected wait of %v", d)
			default:
			}
		})
	}
}

// TestExtractRecord checks the extraction record: through the leaf, the tokens it was given,
// beside the chain; and that SessionMemory hands it back from the transcript after a resume
// (a new Extractor).
func TestExtractRecord(t *testing.T) {
	p, err := agentctx.New(agentctx.Config{ContextWindow: 50_000})
	require.NoError(t, err)
	c := &convo{}
	c.round("Port the parser to the new grammar.", 2)
	var seen summarize.Request
	ex, err := New(Config{Summarizer: summarize.Func(func(_ context.Context, req summarize.Request) (summarize.Summary, error) {
		seen = req
		return summarize.Summary{Text: "<analysis>draft</analysis><summary>The parser is being ported.</summary>"}, nil
	})})
	require.NoError(t, err)
	rec, err := ex.Extract(t.Context(), p, agentctx.Input{Records: c.records}, 12_345)
	require.NoError(t, err)
	assert.Equal(t, agentctx.TriggerSessionMemory, seen.Trigger)
	assert.Equal(t, DefaultPrompt, seen.Instructions)
	last := seen.Request.Messages[len(seen.Request.Messages)-1]
	assert.Equal(t, DefaultPrompt, last.Content[len(last.Content)-1].(*transcript.Text).Text, "the prompt ends the request")
	assert.Equal(t, transcript.SubtypeSessionMemory, rec.Subtype)
	assert.Empty(t, rec.ParentUUID, "beside the chain")
	assert.Equal(t, &transcript.SessionMemoryExtraction{Summary: "The parser is being ported.", Through: c.leaf, Tokens: 12_345, By: "summarizer"}, rec.SessionMemory)

	// Written and read back, in a new process.
	line, err := json.Marshal(rec)
	require.NoError(t, err)
	var back transcript.Record
	require.NoError(t, json.Unmarshal(line, &back))
	resumed, err := New(Config{})
	require.NoError(t, err)
	m, err := resumed.SessionMemory(t.Context(), agentctx.MemoryRequest{SessionID: session, Leaf: c.leaf, Records: append(c.records, back)})
	require.NoError(t, err)
	assert.Equal(t, agentctx.Memory{Summary: "The parser is being ported.", Through: c.leaf}, m)
	assert.Equal(t, 0, resumed.Due(append(c.records, back), 12_345).Growth)

	// A reply without a summary fails the extraction.
	bad, err := New(Config{Summarizer: summarize.Func(func(context.Context, summarize.Request) (summarize.Summary, error) {
		return summarize.Summary{Text: "no tags"}, nil
	})})
	require.NoError(t, err)
	_, err = bad.Extract(t.Context(), p, agentctx.Input{Records: c.records}, 1)
	require.ErrorIs(t, err, summarize.ErrNoSummary)
	assert.True(t, strings.HasPrefix(err.Error(), "memory: extraction: "), err.Error())
}
