package liveloop

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime/metrics"
	"strings"
	"sync"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/memory"
	"github.com/agentctx/agentctx/provider"
	"github.com/agentctx/agentctx/session"
	"github.com/agentctx/agentctx/simulate"
	"github.com/agentctx/agentctx/summarize"
	"github.com/agentctx/agentctx/transcript"
	"github.com/google/uuid"
)

// Run plays sc's agent loop against a fake provider and returns what it measured. The
// loop is a production runtime's, on the library's defaults: Config sets only Model,
// ContextWindow, MaxOutputTokens, Compact.Summarizer, Budget.Store and Now. Each turn it
// calls Session.Prepare, checks the request with provider.Validate (once: Config.Validate
// would check it a second time inside Prepare), sends it through
// the adapter (whose Turn appends the answer), runs the tool calls the answer makes and
// appends their results; after an answer that ends the model's turn the user sends a new
// prompt. A prompt-too-long refusal goes to Session.Recover, and so does an answer cut at
// max_tokens (with provider.ErrOutputTruncated); any error Recover returns, and any other
// error, ends the run and is reported. The loop retries nothing the library does not ask
// for. Run's own error is for a run that could not be set up; the run's failures are in the
// Metrics.
func Run(ctx context.Context, sc Scenario) (*Metrics, error) {
	sc = sc.withDefaults()
	dir, err := os.MkdirTemp("", "liveloop-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	ws, err := newWorkspace(filepath.Join(dir, "work"), sc.Tools, sc.Seed, sc.BigRate)
	if err != nil {
		return nil, err
	}
	clk := &clock{t: start}
	pv := newProvider(sc.Window, clk.Now, newModel(&sc, ws, idPrefix(sc.Adapter)))
	srv := httptest.NewServer(newHandler(sc.Adapter, pv))
	defer srv.Close()
	ad, err := newAdapter(sc.Adapter, srv.URL)
	if err != nil {
		return nil, err
	}
	var summarizer summarize.Summarizer = summarize.Extractive{}
	switch sc.Summarizer {
	case SummarizerExtractive:
	case SummarizerModel:
		summarizer = ad.Summarizer()
	default:
		return nil, fmt.Errorf("liveloop: unknown summarizer %q", sc.Summarizer)
	}
	cfg := agentctx.Config{Model: Model, ContextWindow: sc.Window, MaxOutputTokens: MaxOutputTokens,
		Compact: agentctx.CompactConfig{Summarizer: summarizer}, Now: clk.Now,
		ProviderContext: agentctx.ProviderContextConfig{Strategy: sc.Strategy, PauseAfterCompaction: sc.PauseAfterCompaction}}
	opts := session.Options{Cwd: ws.dir, Now: clk.Now, NewUUID: uuids(sc.Seed)}
	if sc.Fold {
		cfg.Collapse.Producer = agentctx.FoldOldest{}
	}
	if sc.Memory {
		ex, err := memory.New(memory.Config{Summarizer: summarizer})
		if err != nil {
			return nil, err
		}
		cfg.Compact.Memory, opts.Memory = ex, ex
	}
	if sc.Persist {
		cfg.Budget.Store = agentctx.FileStore{Root: filepath.Join(dir, "results")}
		app, err := transcript.OpenAppender(filepath.Join(dir, "session.jsonl"), transcript.AppendOptions{})
		if err != nil {
			return nil, err
		}
		defer app.Close()
		opts.Writer = app
	} else {
		cfg.Budget.Store = &agentctx.MapStore{}
	}
	p, err := agentctx.New(cfg)
	if err != nil {
		return nil, err
	}
	l := &loop{sc: sc, p: p, ad: ad, ws: ws, clk: clk, sess: session.New(opts),
		in: agentctx.Input{System: system, Tools: ws.definitions()}, r: rand.New(rand.NewPCG(sc.Seed, 0x100f)),
		m: &Metrics{Scenario: sc, Calls: map[string]int{}, FactsKept: map[string]int{}, FactLost: map[string]int{}}}
	began := time.Now()
	l.run(ctx)
	l.m.Wall = time.Since(began)
	for _, r := range l.sess.Records() {
		if r.Subtype == transcript.SubtypeSessionMemory {
			l.m.Extractions++
		}
	}
	if err := l.sess.ExtractionErr(); err != nil {
		l.m.ExtractionError = err.Error()
	}
	stats := pv.snapshot()
	l.m.SummaryRequests, l.m.Rejected, l.m.OverWindow, l.m.Injected = stats.Summaries, stats.Rejected, stats.OverWindow, stats.Injected
	l.m.SummaryRefusals = stats.SummaryOverWindow
	l.m.InvalidBodies += stats.Rejected
	if l.m.FirstInvalid == "" {
		l.m.FirstInvalid = stats.FirstRejection
	}
	if in := stats.Input + stats.CacheRead + stats.CacheWrite; in > 0 {
		l.m.ProviderCacheShare = float64(stats.CacheRead) / float64(in)
	}
	sim, err := simulate.Run(ctx, l.sess.Records(), cfg, simulate.Options{System: system, Tools: l.in.Tools})
	switch {
	case err != nil:
		l.m.SimError = err.Error()
	case sim.Totals.InputTokens > 0:
		l.m.CacheReadShare = float64(sim.Totals.CacheRead) / float64(sim.Totals.InputTokens)
	}
	return l.m, ctx.Err()
}

// uuids returns a record uuid source seeded by seed, so that a run writes the same records
// every time.
func uuids(seed uint64) func() string {
	var key [32]byte
	for i := range 8 {
		key[i] = byte(seed >> (8 * i))
	}
	src := rand.NewChaCha8(key)
	var mu sync.Mutex
	return func() string {
		mu.Lock()
		defer mu.Unlock()
		return uuid.Must(uuid.NewRandomFromReader(src)).String()
	}
}

// loop is one run's runtime: the session, the pipeline, the adapter, the tools.
type loop struct {
	sc   Scenario
	p    *agentctx.Pipeline
	ad   Adapter
	ws   *workspace
	clk  *clock
	sess *session.Session
	in   agentctx.Input
	r    *rand.Rand // the user's pace and prompts
	m    *Metrics
	// compacted: a compaction (the library's or the provider's) happened since the last
	// request the loop checked for the pinned rule.
	compacted bool
	// prompts counts the user's prompts sent.
	prompts int
}

// run plays the turns until sc.Turns answers or a terminal error.
func (l *loop) run(ctx context.Context) {
	needPrompt := true
	for l.m.Turns < l.sc.Turns {
		if ctx.Err() != nil {
			return
		}
		if needPrompt {
			l.clk.advance(l.userPause())
			if err := l.prompt(); err != nil {
				l.terminal(err)
				return
			}
		}
		if err := l.sess.WaitExtraction(); err != nil {
			l.terminal(err)
			return
		}
		began := time.Now()
		res, err := l.sess.Prepare(ctx, l.p, l.in)
		l.m.Prepare = append(l.m.Prepare, time.Since(began))
		l.observe(&res.Report)
		if err == nil {
			l.retain(&res)
		}
		l.trace("prepare", &res.Report, err)
		if err != nil {
			if se, ok := errors.AsType[*agentctx.StageError](err); ok && se.Stage == "validate" {
				l.invalid(err)
			}
			l.terminal(err)
			return
		}
		rec, err := l.send(ctx, res)
		if err != nil {
			l.terminal(err)
			return
		}
		l.m.Turns++
		l.sample()
		var calls []*transcript.ToolUse
		for _, b := range rec.Message.Content {
			if tu, ok := b.(*transcript.ToolUse); ok {
				calls = append(calls, tu)
			}
		}
		if rec.Message.StopReason == "compaction" {
			// The provider paused after its summary: the next request goes on without a new
			// prompt.
			l.m.Paused++
			needPrompt = false
			continue
		}
		needPrompt = len(calls) == 0
		if needPrompt {
			continue
		}
		results := make([]*transcript.ToolResult, len(calls))
		for i, tu := range calls {
			results[i] = l.ws.run(tu)
			if r := plantedResult(tu); r != nil && l.sc.Facts {
				results[i] = r
			}
			l.m.Calls[tu.Name]++
			if n := resultBytes(results[i]); n >= BigOutput {
				l.m.BigOutputs++
			}
		}
		l.clk.advance(time.Duration(200+l.r.IntN(30_000)) * time.Millisecond)
		if _, err := l.sess.ToolResults(results...); err != nil {
			l.terminal(err)
			return
		}
	}
}

// send sends the turn's request and, while the provider refuses it or cuts the answer at
// max_tokens, climbs the library's recovery ladder, as the README's loop does: every error
// goes to Session.Recover, which answers with the next request or returns the error the run
// ends on (a retryable error comes back as it is: the SDK's retries are off, and the fake
// provider never answers one).
func (l *loop) send(ctx context.Context, res agentctx.Result) (transcript.Record, error) {
	for {
		l.check(&res)
		l.m.Requests++
		l.clk.advance(time.Duration(3_000+l.r.IntN(37_000)) * time.Millisecond) // the model's answer takes time
		rec, err := l.ad.Turn(ctx, l.sess, res.Request)
		truncated := err == nil && l.ad.Truncated(rec.Message)
		l.traceAnswer(rec, err)
		switch {
		case err == nil && !truncated:
			if len(rec.Message.Content) > 0 && transcript.CompactionOf(rec.Message.Content[0]) == transcript.CompactionPoint {
				l.m.ServerCompactions++
				l.compacted = true
			}
			return rec, nil
		case truncated:
			l.m.Truncations++
			err = provider.ErrOutputTruncated
		case provider.ClassOf(err) == provider.ClassPromptTooLong:
			l.m.Refusals++
		}
		next, rerr := l.sess.Recover(ctx, l.p, l.in, err)
		l.observe(&next.Report)
		l.trace("recover", &next.Report, rerr)
		if rerr == nil {
			l.retain(&next)
		}
		if rerr != nil {
			if rerr == err {
				return transcript.Record{}, fmt.Errorf("the provider answered %s: %w", provider.ClassOf(err), err)
			}
			return transcript.Record{}, fmt.Errorf("recover from %q: %w", err.Error(), rerr)
		}
		if truncated {
			l.m.TruncationsRecovered++
		} else {
			l.m.Recovered++
		}
		res = next
	}
}

// check validates the request as the loop sends it: the contract, the window and the
// counted input.
func (l *loop) check(res *agentctx.Result) {
	err := provider.Validate(res.Request, provider.ValidateOptions{ContextWindow: l.sc.Window, InputTokens: res.Report.InputTokens})
	if err != nil {
		l.invalid(err)
	}
	l.m.PeakInput = max(l.m.PeakInput, res.Report.InputTokens)
	if l.sc.Pin && l.compacted {
		l.compacted = false
		l.m.PinnedChecked++
		if !holdsText(res.Request, PinnedRule) {
			l.m.PinnedMissing++
		}
	}
}

// prompt appends the user's next prompt. A run that pins opens with [PinnedRule] and pins
// that first prompt.
func (l *loop) prompt() error {
	l.prompts++
	text := userPrompt(l.r)
	if l.sc.Facts {
		text = plantedPrompt(l.prompts, text)
	}
	first := l.sc.Pin && len(l.sess.Records()) == 0
	if first {
		text = PinnedRule + " " + text
	}
	rec, err := l.sess.User(text)
	if err != nil || !first {
		return err
	}
	pin, err := l.p.Pin(l.sess.Records(), []string{rec.UUID}, "the session's standing rule", l.clk.Now())
	if err != nil {
		return err
	}
	return l.sess.Append(pin)
}

// holdsText reports whether a text block of req's messages holds s.
func holdsText(req provider.Request, s string) bool {
	for _, m := range req.Messages {
		for _, b := range m.Content {
			if t, ok := b.(*transcript.Text); ok && strings.Contains(t.Text, s) {
				return true
			}
		}
	}
	return false
}

func (l *loop) invalid(err error) {
	l.m.InvalidBodies++
	if l.m.FirstInvalid == "" {
		l.m.FirstInvalid = fmt.Sprintf("turn %d: %v", l.m.Turns+1, err)
	}
}

func (l *loop) terminal(err error) {
	l.m.TerminalTurn = l.m.Turns + 1
	l.m.Terminal = err.Error()
}

// memorySummarizer is how a Report names the summary a compaction took from session memory.
const memorySummarizer = "session_memory"

// observe counts what a Report says of compaction and folding.
func (l *loop) observe(rep *agentctx.Report) {
	if folded(rep) {
		l.m.Folds++
	}
	c := rep.Compaction
	if c == nil {
		return
	}
	switch c.Outcome {
	case agentctx.CompactCompacted:
		l.m.Compactions++
		l.compacted = true
		if c.Summarizer == memorySummarizer {
			l.m.MemoryCompactions++
		}
		if c.PreTokens > 0 {
			l.m.Freed = append(l.m.Freed, 1-float64(c.PostTokens)/float64(c.PreTokens))
		}
	case agentctx.CompactFailed:
		l.m.Failed++
	}
	if c.Fallback {
		l.m.Fallbacks++
	}
	if c.BreakerOpen {
		l.m.BreakerOpen++
	}
	if c.Thrash {
		l.m.Thrash++
	}
}

// userPause returns how long the user takes before a new prompt: usually seconds to
// minutes, now and then past the 5-minute cache lifetime, and now and then past an hour.
func (l *loop) userPause() time.Duration {
	switch u := l.r.Float64(); {
	case u < 0.08:
		return time.Duration(61+l.r.IntN(90)) * time.Minute
	case u < 0.25:
		return time.Duration(6+l.r.IntN(40)) * time.Minute
	default:
		return time.Duration(20+l.r.IntN(220)) * time.Second
	}
}

// sample records the live heap.
func (l *loop) sample() {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	if v := s[0].Value; v.Kind() == metrics.KindUint64 {
		l.m.PeakHeap = max(l.m.PeakHeap, v.Uint64())
	}
}

// resultBytes returns the bytes of a tool result's text.
func resultBytes(r *transcript.ToolResult) int {
	n := 0
	for _, b := range r.Content {
		if t, ok := b.(*transcript.Text); ok {
			n += len(t.Text)
		}
	}
	return n
}

// trace writes a line for a Prepare or Recover call to the scenario's Trace.
func (l *loop) trace(call string, rep *agentctx.Report, err error) {
	if l.sc.Trace == nil {
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "turn %d %s: input %d pressure %d (threshold %d, blocking %d) max_tokens %d messages %d",
		l.m.Turns+1, call, rep.InputTokens, rep.Pressure.Tokens, rep.Pressure.Levels.Threshold, rep.Pressure.Levels.Blocking, rep.MaxTokens, rep.Messages)
	if rc := rep.Recovery; rc != nil {
		fmt.Fprintf(&b, "; recovery %s %s: %s", rc.Rung, rc.Outcome, rc.Reason)
	}
	if c := rep.Compaction; c != nil {
		fmt.Fprintf(&b, "; compaction %s (%s, %s) %d → %d: %s", c.Outcome, c.Trigger, c.Summarizer, c.PreTokens, c.PostTokens, c.Reason)
	}
	if err != nil {
		fmt.Fprintf(&b, "; error: %v", err)
	}
	fmt.Fprintln(l.sc.Trace, b.String())
}

// traceAnswer writes a line for the provider's answer to the scenario's Trace.
func (l *loop) traceAnswer(rec transcript.Record, err error) {
	if l.sc.Trace == nil {
		return
	}
	if err != nil {
		fmt.Fprintf(l.sc.Trace, "turn %d send: %v\n", l.m.Turns+1, err)
		return
	}
	m := rec.Message
	calls := []string{}
	for _, b := range m.Content {
		if tu, ok := b.(*transcript.ToolUse); ok {
			calls = append(calls, tu.Name)
		}
	}
	u := m.Usage
	if u == nil {
		u = &transcript.Usage{}
	}
	fmt.Fprintf(l.sc.Trace, "turn %d send: %s, calls %v; usage input %d cache read %d cache write %d output %d\n",
		l.m.Turns+1, m.StopReason, calls, u.InputTokens, u.CacheReadInputTokens, u.CacheCreationInputTokens, u.OutputTokens)
}
