package agentctx

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentctx/agentctx/summarize"

	"github.com/agentctx/agentctx/provider"

	"github.com/agentctx/agentctx/transcript"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCorpusPrepare prepares the next turn of every corpus session at the model's window and
// at a tight 40,000-token window, and checks for each: the request passes Validate, no block
// of the chain is lost without a reason (checkConservation), Prepare twice gives the same
// bytes, and after appending the turn's records (through JSONL, as a resume reads them) the
// request is byte-identical and no new decision is made. At the tight window microcompact must
// act on some sessions. The budget does not at its default caps: it decides only on results no
// response has seen yet, and every corpus result over 50,000 characters is a Read result,
// which it never replaces. TestBudgetCorpus replays the sessions turn by turn at small caps.
func TestCorpusPrepare(t *testing.T) {
	files := corpusFiles(t)
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for _, window := range []int{0, 40000} {
		t.Run(fmt.Sprintf("window=%d", window), func(t *testing.T) {
			acted := map[string]int{}
			for _, f := range files {
				tr, err := transcript.ReadFile(f, transcript.ReadOptions{})
				require.NoError(t, err, f)
				p, err := New(Config{
					Model: sessionModel(tr.Records), ContextWindow: window, Tokens: corpusCounter,
					Budget: BudgetConfig{Store: &MapStore{}}, Now: func() time.Time { return now },
					Compact: CompactConfig{Summarizer: summarize.Extractive{}},
				})
				require.NoError(t, err, f)
				in := Input{Records: tr.Records}
				name := filepath.Base(f)
				res, err := p.Prepare(t.Context(), in)
				if errors.Is(err, ErrNoMessages) {
					checkConservation(t, name, in, res)
					continue
				}
				require.NoError(t, err, f)
				assert.NoError(t, provider.Validate(res.Request, provider.ValidateOptions{ContextWindow: p.Window(), InputTokens: res.Report.InputTokens}), name)
				checkConservation(t, name, in, res)
				body, err := res.Request.MarshalJSON()
				require.NoError(t, err)

				again, err := p.Prepare(t.Context(), in)
				require.NoError(t, err)
				body2, _ := again.Request.MarshalJSON()
				assert.Equal(t, string(body), string(body2), "%s: Prepare twice", name)

				in.Records = append(append([]transcript.Record(nil), tr.Records...), roundTrip(t, res.Append)...)
				next, err := p.Prepare(t.Context(), in)
				require.NoError(t, err)
				body3, _ := next.Request.MarshalJSON()
				assert.Equal(t, string(body), string(body3), "%s: after appending the turn's records", name)
				assert.Empty(t, next.Append, "%s: no new decisions after appending", name)

				seen := map[string]bool{}
				for _, s := range res.Report.Stages {
					for _, a := range s.Actions {
						seen[s.Stage+" "+string(a.Kind)] = true
					}
				}
				for k := range seen {
					acted[k]++
				}
			}
			t.Logf("sessions where each stage action happened: %v", acted)
			if window > 0 {
				assert.Positive(t, acted["microcompact cleared"])
			}
		})
	}
}

// sessionModel returns the last model an assistant record names, or "" when it is not in the
// model table.
func sessionModel(recs []transcript.Record) string {
	for i := len(recs) - 1; i >= 0; i-- {
		if m := recs[i].Message; m != nil && recs[i].Type == transcript.TypeAssistant {
			if _, ok := DefaultModels().Lookup(m.Model); ok {
				return m.Model
			}
		}
	}
	return "claude-sonnet-4-5"
}

func TestNewValidates(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		err  string
	}{
		{"unknown window", Config{Model: "gpt-unknown"}, "context window unknown"},
		{"negative max output", Config{ContextWindow: 1000, MaxOutputTokens: -1}, "negative"},
		{"thinking budget", Config{ContextWindow: 1000, Thinking: &provider.Thinking{Type: "enabled", BudgetTokens: 10}}, "1024"},
		{"stage config", Config{ContextWindow: 1000, Budget: BudgetConfig{MaxResultChars: -1}}, "MaxResultChars"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.cfg)
			assert.ErrorContains(t, err, tt.err)
		})
	}
	p, err := New(Config{Model: "claude-haiku-4-5-20251001"})
	require.NoError(t, err)
	assert.Equal(t, 200000, p.Window(), "window from the model table")
}

func TestPrepareEmptyAndCanceled(t *testing.T) {
	p, err := New(Config{ContextWindow: 10000, Tokens: EstimateCounter{}})
	require.NoError(t, err)
	res, err := p.Prepare(t.Context(), Input{})
	assert.ErrorIs(t, err, ErrNoMessages)
	assert.Len(t, res.Report.Stages, 7, "the report is filled in")

	k := newTK()
	k.user("hi")
	ctx, cancel := newCanceled(t)
	defer cancel()
	_, err = p.Prepare(ctx, Input{Records: k.recs})
	assert.ErrorIs(t, err, errCanceled)
}

// TestPrepareMaxTokensClamp checks that max_tokens never makes input + output exceed the
// window.
func TestPrepareMaxTokensClamp(t *testing.T) {
	k := newTK()
	k.user(string(make([]byte, 3000)) + "question")
	for _, tt := range []struct{ window, maxOut int }{{100000, 64000}, {5000, 64000}, {5000, 100}} {
		p, err := New(Config{ContextWindow: tt.window, MaxOutputTokens: tt.maxOut, Tokens: EstimateCounter{}})
		require.NoError(t, err)
		res, err := p.Prepare(t.Context(), Input{Records: k.recs})
		require.NoError(t, err)
		assert.LessOrEqual(t, res.Report.InputTokens+res.Request.MaxTokens, tt.window)
		assert.LessOrEqual(t, res.Request.MaxTokens, tt.maxOut)
		assert.Equal(t, res.Request.MaxTokens, res.Report.MaxTokens)
	}
}

// corpusCounter is the default counter, shared by the corpus tests so its tables are built
// once.
var corpusCounter = DefaultTokenCounter()

// TestPrepareThinkingBudget checks rule 4.8 (budget_tokens < max_tokens) when the window
// clamps max_tokens: the budget is lowered while it can stay ≥ 1024, else the request goes
// without thinking (and without the final turn's thinking blocks).
func TestPrepareThinkingBudget(t *testing.T) {
	sig := "EqQBCkYIBxgCKkBzYW1wbGUgc2lnbmF0dXJlIGZvciBhIHRlc3QgY2FzZQ=="
	tests := []struct {
		name       string
		window     int
		wantBudget int // 0: thinking disabled
	}{
		{"room for the budget", 200000, 2048},
		{"budget lowered", 2600, 1837}, // 754 input tokens leave max_tokens 2600 − 754 − 8 (the 1 % margin) = 1838
		{"no room: thinking disabled", 1700, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := newTK()
			k.user(strings.Repeat("context ", 250) + "question?")
			k.assistant(&transcript.Thinking{Thinking: "plan", Signature: sig}, toolUse("t1", "Read"))
			k.results(result("t1", "ok"))
			p, err := New(Config{ContextWindow: tt.window, MaxOutputTokens: 8000, Tokens: EstimateCounter{},
				Thinking: &provider.Thinking{Type: "enabled", BudgetTokens: 2048}})
			require.NoError(t, err)
			res, err := p.Prepare(t.Context(), Input{Records: k.recs})
			require.NoError(t, err)
			require.NoError(t, provider.Validate(res.Request, provider.ValidateOptions{ContextWindow: tt.window, InputTokens: res.Report.InputTokens}))
			checkConservation(t, tt.name, Input{Records: k.recs}, res)
			req := res.Request
			if tt.wantBudget > 0 {
				require.NotNil(t, req.Thinking)
				assert.Equal(t, tt.wantBudget, req.Thinking.BudgetTokens)
				assert.Less(t, req.Thinking.BudgetTokens, req.MaxTokens)
				assert.False(t, res.Report.ThinkingUnavailable)
			} else {
				assert.Nil(t, req.Thinking)
				assert.True(t, res.Report.ThinkingUnavailable)
				for _, m := range req.Messages {
					for _, b := range m.Content {
						assert.NotEqual(t, transcript.KindThinking, b.Kind(), "no thinking without the thinking setting")
					}
				}
			}
		})
	}
}

// TestPrepareNilBlocks checks that a nil block a caller put in a record is an error naming the
// record and field, never a panic: in a new session, and in a record given a new Message on
// a warm Pipeline, in the same slice, which Input.Records allows (a check of each record once,
// when the memos first see it, missed that one: found in review).
func TestPrepareNilBlocks(t *testing.T) {
	for _, tt := range []struct {
		name  string
		block transcript.Block
		field string
	}{
		{"untyped nil", nil, "message.content[1]"},
		{"typed nil", (*transcript.Text)(nil), "message.content[1]"},
		{"nil in a tool result", &transcript.ToolResult{ToolUseID: "t", Content: []transcript.Block{(*transcript.Image)(nil)}}, "message.content[1].content[0]"},
	} {
		check := func(t *testing.T, p *Pipeline, recs []transcript.Record, r *transcript.Record) {
			t.Helper()
			var err error
			require.NotPanics(t, func() { _, err = p.Prepare(t.Context(), Input{Records: recs}) })
			require.Error(t, err)
			assert.Contains(t, err.Error(), r.UUID)
			assert.Contains(t, err.Error(), "field "+tt.field+": nil block")
		}
		t.Run(tt.name, func(t *testing.T) {
			p, err := New(Config{ContextWindow: 10000, Tokens: EstimateCounter{}})
			require.NoError(t, err)
			k := newTK()
			r := k.user("hi")
			r.Message.StringContent = false
			r.Message.Content = append(r.Message.Content, tt.block)
			check(t, p, k.recs, r)
		})
		t.Run(tt.name+", new message on a warm pipeline", func(t *testing.T) {
			p := newTestPipeline(t, Config{ContextWindow: 10000, Tokens: EstimateCounter{}}, normNow)
			k := newTK()
			k.readTurns(3)
			k.user("and now?")
			_, err := p.Prepare(t.Context(), Input{Records: k.recs})
			require.NoError(t, err)
			r := &k.recs[4] // the second turn's question, in the middle of the slice
			m := *r.Message
			m.StringContent = false
			m.Content = []transcript.Block{&transcript.Text{Text: "edited"}, tt.block}
			r.Message = &m
			check(t, p, k.recs, r)
		})
	}
}

// Pipeline.Counter is the Counter Prepare counts with: what a caller counts through it first
// (as agentctx inspect does) Prepare finds in the memo and does not tokenize again.
func TestPipelineCounterShared(t *testing.T) {
	var mu sync.Mutex
	counted := map[string]int{}
	tc := TokenCounterFunc(func(s string) int {
		mu.Lock()
		counted[s]++
		mu.Unlock()
		return len(s) / 3
	})
	p := newTestPipeline(t, Config{Model: "claude-sonnet-4-5", Tokens: tc}, time.Date(2026, 1, 2, 4, 0, 0, 0, time.UTC))
	k := newTK()
	k.user("the first question, long enough to count")
	k.assistant(text("the first answer, long enough to count"))
	for i := range k.recs {
		p.Counter().Record(&k.recs[i])
	}
	_, err := p.Prepare(t.Context(), Input{Records: k.recs})
	require.NoError(t, err)
	for _, s := range []string{"the first question, long enough to count", "the first answer, long enough to count"} {
		assert.Equal(t, 1, counted[s], "%q tokenized once", s)
	}
}

// TestDefaultsTable checks the package doc's table of window-scaled defaults against the
// functions the stages use, and the rule at its edges: Claude Code's values at 200,000 tokens
// and above, proportional below, never under the floor.
func TestDefaultsTable(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	require.NoError(t, err)
	assert.Contains(t, string(doc), defaultsTable(), "doc.go's table of window-scaled defaults is out of date: paste defaultsTable()")
	for _, tc := range []struct{ v, floor, window, want int }{
		{50_000, 2_000, 200_000, 50_000},
		{50_000, 2_000, 1_000_000, 50_000},
		{50_000, 2_000, 100_000, 25_000},
		{50_000, 2_000, 8_000, 2_000},
		{50_000, 2_000, 0, 2_000},
		{50_000, 2_000, -5, 2_000},
	} {
		assert.Equal(t, tc.want, scaled(tc.v, tc.floor, tc.window), "%+v", tc)
	}
}
