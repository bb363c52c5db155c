package agentctx

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentctx/agentctx/transcript"
)

// ContextSection is one named piece of base context, such as a memory file or the output of
// git status. It is rendered as "# Name\nText"; a section whose Text is empty or only
// whitespace is left out.
type ContextSection struct {
	// Name is the section's heading, e.g. "claudeMd" or "gitStatus". Empty: no heading.
	Name string
	// Text is the section's content, sent as is.
	Text string
}

// ContextProvider supplies base context for a conversation. Context is called once per
// [Pipeline.Prepare] (wrap the provider in [Memoize] to compute it once per conversation)
// with Prepare's ctx; an error fails Prepare with a [*StageError] for stage "context".
// Implementations must be safe for concurrent use if the Pipeline serves several
// conversations at once.
type ContextProvider interface {
	Context(ctx context.Context) ([]ContextSection, error)
}

// ContextProviderFunc adapts a function to a [ContextProvider].
type ContextProviderFunc func(ctx context.Context) ([]ContextSection, error)

// Context calls f(ctx).
func (f ContextProviderFunc) Context(ctx context.Context) ([]ContextSection, error) { return f(ctx) }

// MemoProvider is a [ContextProvider] that remembers the first successful result of the
// provider it wraps until [MemoProvider.Invalidate] is called. Errors are not remembered: the
// next call tries again.
//
// The Pipeline holds no per-conversation state, so the memo is the caller's: create one per
// conversation (with [Memoize]), put it in that conversation's [ContextConfig] (passed in
// [Input.Context] when one Pipeline serves several conversations), and call Invalidate when
// the context must be recomputed, e.g. when a memory file changed. A compaction invalidates
// the memos of its turn's ContextConfig itself: it rewrites the prompt prefix anyway.
//
// As the user context ([ContextConfig.User]) the memo also holds the date of
// [ContextConfig.CurrentDate]: the clock of the first turn that asks for it after Memoize or
// Invalidate, so the prompt prefix does not change at midnight.
//
// A MemoProvider is safe for concurrent use; while one call computes the context, other calls
// wait for it (or for their ctx). The zero value is not usable.
type MemoProvider struct {
	provider ContextProvider
	fill     chan struct{} // one-slot semaphore: one computation at a time

	mu     sync.Mutex
	gen    uint64 // incremented by Invalidate; a computation started before is not stored
	cached []ContextSection
	ok     bool
	dateAt time.Time // the clock the context is dated by; zero: not dated yet
}

// Memoize returns a [MemoProvider] wrapping p. A nil p provides no sections.
func Memoize(p ContextProvider) *MemoProvider {
	return &MemoProvider{provider: p, fill: make(chan struct{}, 1)}
}

// Context returns the remembered sections, computing them with the wrapped provider on the
// first call and after [MemoProvider.Invalidate]. The caller owns the returned slice.
func (m *MemoProvider) Context(ctx context.Context) ([]ContextSection, error) {
	if s, ok := m.load(); ok {
		return s, nil
	}
	select {
	case m.fill <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-m.fill }()
	m.mu.Lock()
	if m.ok { // computed while this call waited
		s := slices.Clone(m.cached)
		m.mu.Unlock()
		return s, nil
	}
	gen := m.gen
	m.mu.Unlock()

	var s []ContextSection
	if m.provider != nil {
		var err error
		if s, err = m.provider.Context(ctx); err != nil {
			return nil, err
		}
	}
	s = slices.Clone(s)
	m.mu.Lock()
	if m.gen == gen {
		m.cached, m.ok = s, true
	}
	m.mu.Unlock()
	return slices.Clone(s), nil
}

func (m *MemoProvider) load() ([]ContextSection, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.ok {
		return nil, false
	}
	return slices.Clone(m.cached), true
}

// Invalidate drops the remembered sections and date; the next [MemoProvider.Context] call
// computes them again. A computation in flight when Invalidate is called is returned to its
// caller but not remembered. Invalidate never blocks on a computation.
func (m *MemoProvider) Invalidate() {
	m.mu.Lock()
	m.gen++
	m.cached, m.ok = nil, false
	m.dateAt = time.Time{}
	m.mu.Unlock()
}

// dateTime returns the time the memoized context is dated by: now on the first call after
// Memoize or Invalidate, the same time on later calls.
func (m *MemoProvider) dateTime(now time.Time) time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.dateAt.IsZero() {
		m.dateAt = now
	}
	return m.dateAt
}

// ContextConfig configures the base context stage, Claude Code's system and user context.
// The zero value adds nothing.
//
// System context (Claude Code: git status) is appended to the system prompt as one text block.
// User context (Claude Code: CLAUDE.md memory files and the current date) is sent as a meta
// user message at the start of the conversation, wrapped in a <system-reminder> with Claude
// Code's wording. Both sit at the front of the prompt, so they should change rarely: wrap
// providers in [Memoize] and invalidate the memo deliberately, or every change rewrites the
// provider's prompt cache.
type ContextConfig struct {
	// System provides the system context. Nil: none.
	System ContextProvider
	// User provides the user context. Nil: none.
	User ContextProvider
	// CurrentDate adds the section "# currentDate\nToday's date is YYYY-MM-DD." to the user
	// context, after User's sections, in DateLocation. When User is a [MemoProvider], the date
	// is memoized with its sections, as Claude Code memoizes its user context: it is taken
	// from the pipeline's clock (Config.Now) on the first turn after Memoize or Invalidate and
	// kept until the memo is invalidated (after a compaction, or by the caller), so midnight
	// does not rewrite the prompt prefix. Otherwise each turn is dated by its clock, and the
	// first message of the request changes at midnight, which costs a full prompt-cache
	// rewrite. Off by default.
	CurrentDate bool
	// DateLocation is the time zone of CurrentDate. Nil: UTC.
	DateLocation *time.Location
	// CacheBreaker, when not empty, adds the section "# cacheBreaker\n[cache breaker: VALUE]"
	// to the system context, after System's sections: a value whose change deliberately
	// invalidates the provider's prompt cache from the system prompt on (to debug a cache
	// problem, or to make sure a conversation is read afresh), as Claude Code's optional
	// cache breaker does. It is read on every turn, past any [MemoProvider]: changing it
	// changes the next request. Empty: no section, the requests as without it.
	CacheBreaker string
}

func (c ContextConfig) validate() error { return nil }

// The wrapping of the user context: a <system-reminder> block, as Claude Code sends it, in our
// own words.
const (
	userContextHead = "<system-reminder>\nContext for this conversation, provided by the runtime:\n"
	userContextTail = "\n\nThis context may or may not be relevant to the task at hand. Use it where it is relevant; do not respond to it otherwise.\n</system-reminder>\n"
)

// renderSections renders sections as "# name\ntext" joined by newlines, leaving out empty
// ones; it returns the text and the number of sections rendered.
func renderSections(sections []ContextSection) (string, int) {
	var b strings.Builder
	n := 0
	for _, s := range sections {
		if strings.TrimSpace(s.Text) == "" {
			continue
		}
		if n > 0 {
			b.WriteByte('\n')
		}
		if s.Name != "" {
			b.WriteString("# " + s.Name + "\n")
		}
		b.WriteString(s.Text)
		n++
	}
	return b.String(), n
}

// contextStage is the base-context stage (see [ContextConfig]): the system and user context the
// providers give.
type contextStage struct {
	cfg     ContextConfig
	counter *Counter
}

func (*contextStage) name() string { return "context" }

// run appends the system context to the system prompt and puts the user context in a
// meta user message at the start of the view.
func (st *contextStage) run(t *turn) error {
	c := cmp.Or(t.in.Context, &st.cfg)
	rep := t.report.stage("context")
	if c.System != nil || c.CacheBreaker != "" {
		var sections []ContextSection
		if c.System != nil {
			var err error
			if sections, err = c.System.Context(t.ctx); err != nil {
				return fmt.Errorf("system context: %w", err)
			}
		}
		if c.CacheBreaker != "" {
			sections = append(slices.Clip(sections), ContextSection{Name: "cacheBreaker", Text: "[cache breaker: " + c.CacheBreaker + "]"})
		}
		if text, n := renderSections(sections); n > 0 {
			b := &transcript.Text{Text: text}
			t.system = append(t.system, b)
			t.base.system = len(t.system)
			rep.add(Action{Kind: ActionInjected, Tokens: st.counter.Block(b),
				Detail: fmt.Sprintf("system context: %d sections", n)})
		}
	}
	var sections []ContextSection
	if c.User != nil {
		var err error
		if sections, err = c.User.Context(t.ctx); err != nil {
			return fmt.Errorf("user context: %w", err)
		}
	}
	if c.CurrentDate {
		at := t.now
		if m, ok := c.User.(*MemoProvider); ok {
			at = m.dateTime(t.now)
		}
		loc := c.DateLocation
		if loc == nil {
			loc = time.UTC
		}
		sections = append(slices.Clip(sections), ContextSection{Name: "currentDate",
			Text: "Today's date is " + at.In(loc).Format("2006-01-02") + "."})
	}
	text, n := renderSections(sections)
	if n == 0 {
		return nil
	}
	b := &transcript.Text{Text: userContextHead + text + userContextTail}
	t.base.user = b.Text
	it := item{
		uuid:   transcript.ContentUUID("context", b.Text),
		pos:    -1,
		role:   transcript.RoleUser,
		meta:   true,
		blocks: []transcript.Block{b},
		owned:  true,
		origin: "context",
	}
	t.items = slices.Insert(t.items, 0, it)
	rep.add(Action{Kind: ActionInjected, UUID: it.uuid, Tokens: messageOverheadTokens + st.counter.Block(b),
		Detail: fmt.Sprintf("user context: %d sections", n)})
	return nil
}
