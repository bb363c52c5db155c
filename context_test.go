package agentctx

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentctx/agentctx/provider"
	"github.com/agentctx/agentctx/transcript"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ctxStatic provides fixed sections and counts its calls.
type ctxStatic struct {
	sections []ContextSection
	err      error
	calls    atomic.Int32
}

func (s *ctxStatic) Context(context.Context) ([]ContextSection, error) {
	s.calls.Add(1)
	if s.err != nil {
		return nil, s.err
	}
	return s.sections, nil
}

func ctxPipeline(t *testing.T, cc ContextConfig) *Pipeline {
	t.Helper()
	return newTestPipeline(t, Config{Context: cc}, time.Date(2026, 3, 4, 23, 30, 0, 0, time.UTC))
}

func ctxSession() *tk {
	k := newTK()
	k.user("hello")
	k.assistant(text("hi"))
	k.user("what now?")
	return k
}

func TestContextStage(t *testing.T) {
	const head = "<system-reminder>\nContext for this conversation, provided by the runtime:\n"
	const tail = "\n\nThis context may or may not be relevant to the task at hand. Use it where it is relevant; do not respond to it otherwise.\n</system-reminder>\n"
	tokyo := time.FixedZone("JST", 9*3600)
	tests := []struct {
		name       string
		cfg        ContextConfig
		wantSystem string // text of the appended system block; "" for none
		wantUser   string // text of the leading context message; "" for none
	}{
		{name: "zero config adds nothing"},
		{
			name:       "system sections",
			cfg:        ContextConfig{System: &ctxStatic{sections: []ContextSection{{"gitStatus", "Current branch: main\nStatus: clean"}, {"os", "linux"}}}},
			wantSystem: "# gitStatus\nCurrent branch: main\nStatus: clean\n# os\nlinux",
		},
		{
			name:     "user sections and date",
			cfg:      ContextConfig{User: &ctxStatic{sections: []ContextSection{{"claudeMd", "Use tabs."}}}, CurrentDate: true},
			wantUser: head + "# claudeMd\nUse tabs.\n# currentDate\nToday's date is 2026-03-04." + tail,
		},
		{
			name:     "date alone in another time zone",
			cfg:      ContextConfig{CurrentDate: true, DateLocation: tokyo},
			wantUser: head + "# currentDate\nToday's date is 2026-03-05." + tail,
		},
		{
			name: "empty providers add nothing",
			cfg: ContextConfig{
				System: &ctxStatic{},
				User:   &ctxStatic{sections: []ContextSection{{"claudeMd", ""}, {"blank", " \n\t"}}},
			},
		},
		{
			name:       "cache breaker alone",
			cfg:        ContextConfig{CacheBreaker: "debug-7"},
			wantSystem: "# cacheBreaker\n[cache breaker: debug-7]",
		},
		{
			name:       "cache breaker after the system sections",
			cfg:        ContextConfig{System: &ctxStatic{sections: []ContextSection{{"gitStatus", "clean"}}}, CacheBreaker: "2"},
			wantSystem: "# gitStatus\nclean\n# cacheBreaker\n[cache breaker: 2]",
		},
		{
			name:     "empty sections are skipped, nameless ones have no heading",
			cfg:      ContextConfig{User: &ctxStatic{sections: []ContextSection{{"a", ""}, {"", "free text"}, {"b", "B"}}}},
			wantUser: head + "free text\n# b\nB" + tail,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			k := ctxSession()
			system := []*transcript.Text{{Text: "You are a helpful agent."}}
			p := ctxPipeline(t, tc.cfg)
			res, err := p.Prepare(t.Context(), Input{Records: k.recs, System: system})
			require.NoError(t, err)
			req := res.Request
			mcValid(t, req)
			require.NotEmpty(t, req.System)
			assert.Equal(t, "You are a helpful agent.", req.System[0].Text)
			assert.Len(t, system, 1, "the caller's system slice is not appended to")
			st := res.Report.Stage("context")
			require.NotNil(t, st)
			var actions int
			if tc.wantSystem == "" {
				assert.Len(t, req.System, 1)
			} else {
				require.Len(t, req.System, 2)
				assert.Equal(t, tc.wantSystem, req.System[1].Text)
				actions++
			}
			first := req.Messages[0]
			require.Equal(t, transcript.RoleUser, first.Role)
			if tc.wantUser == "" {
				require.Len(t, first.Content, 1)
				assert.Equal(t, "hello", first.Content[0].(*transcript.Text).Text)
			} else {
				// The context message leads; normalize merges it with the first prompt.
				require.GreaterOrEqual(t, len(first.Content), 2)
				assert.Equal(t, tc.wantUser, first.Content[0].(*transcript.Text).Text)
				assert.Equal(t, "hello", first.Content[len(first.Content)-1].(*transcript.Text).Text)
				actions++
			}
			assert.Len(t, st.Actions, actions)
			for _, a := range st.Actions {
				assert.Equal(t, ActionInjected, a.Kind)
				assert.Positive(t, a.Tokens)
			}
			assert.Empty(t, res.Append, "base context is not a decision")

			again, err := p.Prepare(t.Context(), Input{Records: k.recs, System: system})
			require.NoError(t, err)
			assert.Equal(t, string(requestBytes(t, req)), string(requestBytes(t, again.Request)), "deterministic")
		})
	}
}

func TestContextStageItem(t *testing.T) {
	k := ctxSession()
	p := ctxPipeline(t, ContextConfig{User: &ctxStatic{sections: []ContextSection{{"claudeMd", "x"}}}})
	in := &Input{Records: k.recs}
	chain, err := transcript.BuildChain(in.Records, transcript.ChainOptions{})
	require.NoError(t, err)
	tn := p.newTurn(t.Context(), in, chain)
	n := len(tn.items)
	require.NoError(t, p.stages.context.run(tn))
	require.Len(t, tn.items, n+1)
	it := tn.items[0]
	assert.Nil(t, it.rec)
	assert.Equal(t, transcript.RoleUser, it.role)
	assert.True(t, it.meta)
	assert.Equal(t, "context", it.origin)
	assert.NotEmpty(t, it.uuid)
	assert.Equal(t, k.recs[0].UUID, tn.items[1].uuid)

	tn2 := p.newTurn(t.Context(), in, chain)
	require.NoError(t, p.stages.context.run(tn2))
	assert.Equal(t, it.uuid, tn2.items[0].uuid, "content-derived uuid")
}

func TestContextProviderErrors(t *testing.T) {
	boom := errors.New("git exploded")
	for _, tc := range []struct {
		name string
		cfg  ContextConfig
		want string
	}{
		{"system", ContextConfig{System: &ctxStatic{err: boom}}, "system context"},
		{"user", ContextConfig{User: ContextProviderFunc(func(context.Context) ([]ContextSection, error) { return nil, boom })}, "user context"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ctxPipeline(t, tc.cfg).Prepare(t.Context(), Input{Records: ctxSession().recs})
			require.Error(t, err)
			assert.ErrorIs(t, err, boom)
			se, ok := errors.AsType[*StageError](err)
			require.True(t, ok)
			assert.Equal(t, "context", se.Stage)
			assert.ErrorContains(t, err, tc.want)
		})
	}
}

func TestContextProviderGetsPrepareContext(t *testing.T) {
	type key struct{}
	var got any
	prov := ContextProviderFunc(func(ctx context.Context) ([]ContextSection, error) {
		got = ctx.Value(key{})
		return nil, nil
	})
	ctx := context.WithValue(t.Context(), key{}, "v")
	_, err := ctxPipeline(t, ContextConfig{System: prov}).Prepare(ctx, Input{Records: ctxSession().recs})
	require.NoError(t, err)
	assert.Equal(t, "v", got)
}

func TestContextMemoize(t *testing.T) {
	t.Run("computes once until invalidated", func(t *testing.T) {
		src := &ctxStatic{sections: []ContextSection{{"claudeMd", "v1"}}}
		m := Memoize(src)
		p := ctxPipeline(t, ContextConfig{User: m})
		k := ctxSession()
		r1, err := p.Prepare(t.Context(), Input{Records: k.recs})
		require.NoError(t, err)
		_, err = p.Prepare(t.Context(), Input{Records: k.recs})
		require.NoError(t, err)
		assert.EqualValues(t, 1, src.calls.Load())

		src.sections = []ContextSection{{"claudeMd", "v2"}}
		r3, err := p.Prepare(t.Context(), Input{Records: k.recs})
		require.NoError(t, err)
		assert.Equal(t, string(requestBytes(t, r1.Request)), string(requestBytes(t, r3.Request)), "memoized: the change is not seen")

		m.Invalidate()
		r4, err := p.Prepare(t.Context(), Input{Records: k.recs})
		require.NoError(t, err)
		assert.EqualValues(t, 2, src.calls.Load())
		assert.Contains(t, r4.Request.Messages[0].Content[0].(*transcript.Text).Text, "v2")
	})

	t.Run("errors are not cached", func(t *testing.T) {
		src := &ctxStatic{err: errors.New("transient")}
		m := Memoize(src)
		_, err := m.Context(t.Context())
		require.Error(t, err)
		_, err = m.Context(t.Context())
		require.Error(t, err)
		assert.EqualValues(t, 2, src.calls.Load())
		src.err = nil
		src.sections = []ContextSection{{"a", "b"}}
		s, err := m.Context(t.Context())
		require.NoError(t, err)
		assert.Equal(t, []ContextSection{{"a", "b"}}, s)
		_, err = m.Context(t.Context())
		require.NoError(t, err)
		assert.EqualValues(t, 3, src.calls.Load(), "the success is remembered")
	})

	t.Run("the caller owns the returned slice", func(t *testing.T) {
		m := Memoize(&ctxStatic{sections: []ContextSection{{"a", "b"}}})
		s, err := m.Context(t.Context())
		require.NoError(t, err)
		s[0].Text = "mutated"
		s2, err := m.Context(t.Context())
		require.NoError(t, err)
		assert.Equal(t, "b", s2[0].Text)
	})

	t.Run("nil provider", func(t *testing.T) {
		s, err := Memoize(nil).Context(t.Context())
		require.NoError(t, err)
		assert.Empty(t, s)
	})

	t.Run("concurrent callers share one computation", func(t *testing.T) {
		src := &ctxStatic{sections: []ContextSection{{"a", "b"}}}
		m := Memoize(src)
		var wg sync.WaitGroup
		for range 16 {
			wg.Go(func() {
				s, err := m.Context(t.Context())
				assert.NoError(t, err)
				assert.Len(t, s, 1)
			})
		}
		wg.Wait()
		assert.EqualValues(t, 1, src.calls.Load())
	})

	t.Run("invalidate during a computation is not lost", func(t *testing.T) {
		started, release := make(chan struct{}), make(chan struct{})
		var calls atomic.Int32
		m := Memoize(ContextProviderFunc(func(context.Context) ([]ContextSection, error) {
			if calls.Add(1) == 1 {
				close(started)
				<-release
				return []ContextSection{{"v", "stale"}}, nil
			}
			return []ContextSection{{"v", "fresh"}}, nil
		}))
		done := make(chan []ContextSection)
		go func() {
			s, _ := m.Context(t.Context())
			done <- s
		}()
		<-started
		m.Invalidate() // must not block on the computation
		close(release)
		assert.Equal(t, "stale", (<-done)[0].Text, "the in-flight caller gets its result")
		s, err := m.Context(t.Context())
		require.NoError(t, err)
		assert.Equal(t, "fresh", s[0].Text, "but it was not remembered")
	})

	t.Run("a waiting caller honours its ctx", func(t *testing.T) {
		started, release := make(chan struct{}), make(chan struct{})
		m := Memoize(ContextProviderFunc(func(context.Context) ([]ContextSection, error) {
			close(started)
			<-release
			return nil, nil
		}))
		go func() { _, _ = m.Context(context.Background()) }()
		<-started
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, err := m.Context(ctx)
		assert.ErrorIs(t, err, context.Canceled)
		close(release)
	})
}

// With CurrentDate and a memoized user context, the date is memoized with the sections:
// midnight does not rewrite the prompt prefix until the memo is invalidated.
func TestContextDateMemoized(t *testing.T) {
	evening := time.Date(2026, 3, 4, 23, 59, 0, 0, time.UTC)
	clock := evening
	p, err := New(Config{ContextWindow: 200_000, Tokens: EstimateCounter{}, Now: func() time.Time { return clock },
		Context: ContextConfig{CurrentDate: true}})
	require.NoError(t, err)
	k := ctxSession()
	date := func(res Result) string { return res.Request.Messages[0].Content[0].(*transcript.Text).Text }
	prepare := func(cc *ContextConfig) Result {
		res, err := p.Prepare(t.Context(), Input{Records: k.recs, Context: cc})
		require.NoError(t, err)
		return res
	}

	m := Memoize(&ctxStatic{sections: []ContextSection{{"claudeMd", "Use tabs."}}})
	memo := &ContextConfig{User: m, CurrentDate: true}
	before := prepare(memo)
	assert.Contains(t, date(before), "Today's date is 2026-03-04.")
	clock = evening.Add(2 * time.Minute) // past midnight
	after := prepare(memo)
	assert.Equal(t, string(requestBytes(t, before.Request)), string(requestBytes(t, after.Request)), "the memo keeps the date")

	m.Invalidate() // e.g. after a compaction
	assert.Contains(t, date(prepare(memo)), "Today's date is 2026-03-05.", "a new memo takes the new date")

	clock = evening
	assert.Contains(t, date(prepare(nil)), "Today's date is 2026-03-04.")
	clock = evening.Add(2 * time.Minute)
	assert.Contains(t, date(prepare(nil)), "Today's date is 2026-03-05.", "without a memo, each turn is dated by its clock")
}

// One Pipeline serves many conversations, each with its own memoized base context passed in
// Input.Context, concurrently; Config.Context is not consulted for them.
func TestContextPerConversation(t *testing.T) {
	shared := &ctxStatic{sections: []ContextSection{{"claudeMd", "shared"}}}
	p := ctxPipeline(t, ContextConfig{User: shared})
	const n = 8
	srcs := make([]*ctxStatic, n)
	memos := make([]*MemoProvider, n)
	for i := range n {
		srcs[i] = &ctxStatic{sections: []ContextSection{{"claudeMd", fmt.Sprintf("conversation %d", i)}}}
		memos[i] = Memoize(srcs[i])
	}
	k := ctxSession()
	var wg sync.WaitGroup
	for i := range n {
		for range 4 {
			wg.Go(func() {
				res, err := p.Prepare(t.Context(), Input{Records: k.recs, Context: &ContextConfig{User: memos[i], System: memos[i]}})
				if !assert.NoError(t, err) {
					return
				}
				want := fmt.Sprintf("# claudeMd\nconversation %d", i)
				assert.Contains(t, res.Request.Messages[0].Content[0].(*transcript.Text).Text, want)
				require.Len(t, res.Request.System, 1)
				assert.Equal(t, want, res.Request.System[0].Text)
				// The conversations share the Pipeline's encode memo.
				body, err := res.Request.MarshalJSON()
				require.NoError(t, err)
				ref, err := plainEncoding(res.Request)
				require.NoError(t, err)
				assert.Equal(t, string(ref), string(body))
			})
		}
	}
	wg.Wait()
	for i := range n {
		assert.EqualValues(t, 1, srcs[i].calls.Load(), "each conversation's memo computed once")
	}
	assert.Zero(t, shared.calls.Load(), "Config.Context is replaced, not merged")

	res, err := p.Prepare(t.Context(), Input{Records: k.recs})
	require.NoError(t, err)
	assert.Contains(t, res.Request.Messages[0].Content[0].(*transcript.Text).Text, "shared", "without Input.Context, Config.Context")
}

// TestContextCacheBreaker checks that changing the cache breaker changes only the system
// context block, even past a memoized provider, and that an empty one sends the bytes of a
// configuration without it.
func TestContextCacheBreaker(t *testing.T) {
	k := newTK()
	k.user("hello")
	memo := Memoize(&ctxStatic{sections: []ContextSection{{"gitStatus", "clean"}}})
	p := newTestPipeline(t, Config{}, k.at(time.Minute))
	run := func(breaker string) provider.Request {
		res, err := p.Prepare(t.Context(), Input{Records: k.recs, System: []*transcript.Text{{Text: "You are an agent."}},
			Context: &ContextConfig{System: memo, CacheBreaker: breaker}})
		require.NoError(t, err)
		return res.Request
	}
	a, b, none := run("1"), run("2"), run("")
	require.Len(t, a.System, 2)
	assert.Equal(t, a.System[0].Text, b.System[0].Text)
	assert.Equal(t, "# gitStatus\nclean\n# cacheBreaker\n[cache breaker: 1]", a.System[1].Text)
	assert.Equal(t, "# gitStatus\nclean\n# cacheBreaker\n[cache breaker: 2]", b.System[1].Text)
	assert.Equal(t, a.Messages, b.Messages)

	plain, err := p.Prepare(t.Context(), Input{Records: k.recs, System: []*transcript.Text{{Text: "You are an agent."}}, Context: &ContextConfig{System: memo}})
	require.NoError(t, err)
	assert.Equal(t, string(requestBytes(t, plain.Request)), string(requestBytes(t, none)))
}
