package agentctx

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/agentctx/agentctx/provider"

	"github.com/agentctx/agentctx/internal/wire"

	"github.com/agentctx/agentctx/internal/memo"
	"github.com/agentctx/agentctx/transcript"

	"github.com/agentctx/agentctx/internal/jsonobj"
)

// Config configures a [Pipeline]. The zero value of every stage's config is that stage's
// documented default; the zero Config is a working pipeline once the context window is known
// (ContextWindow, or a Model the model table knows).
type Config struct {
	// Model is the model name put in the request; it also selects the context window and
	// maximum output from the model table when those are zero.
	Model string
	// ContextWindow is the model's context window in tokens. Zero: from the model table.
	ContextWindow int
	// MaxOutputTokens is the request's max_tokens before clamping to the window. Zero: the
	// model's maximum output from the table, or 32,000.
	MaxOutputTokens int
	// Models is the model table. Nil: [DefaultModels].
	Models Models
	// Tokens counts tokens. Nil: the default tiktoken counter ([DefaultTokenCounter]).
	Tokens TokenCounter
	// Thinking is the request's thinking setting; nil sends none (thinking disabled).
	Thinking *provider.Thinking

	Budget       BudgetConfig
	Snip         SnipConfig
	Microcompact MicrocompactConfig
	Collapse     CollapseConfig
	Compact      CompactConfig
	Context      ContextConfig
	Normalize    NormalizeConfig
	Cache        CacheConfig
	Pressure     PressureConfig
	// ProviderContext asks the provider to compact and clear context on its side; the zero
	// value asks for nothing.
	ProviderContext ProviderContextConfig

	// Now is the clock. Nil: time.Now. Prepare reads it once per turn.
	Now func() time.Time

	// Logger receives what a turn did short of the policy (each [Degradation], at Warn), its
	// compactions and recoveries (Info) and its errors (Warn), so a host's logs show them. Nil:
	// nothing is logged; the [Report] says the same.
	Logger *slog.Logger
	// Observer receives the same points as values, for a host's UI or metrics (see
	// [Observer]). The zero value observes nothing.
	Observer Observer

	// ClassifyError, when set, classifies the errors given to [Pipeline.Recover] before
	// [provider.ClassOf] does: a host whose provider layer returns its own error types maps
	// them to a [provider.ErrorClass] here (a prompt too long, a body too large, media
	// refused, output cut at max_tokens) instead of wrapping them in the provider package's
	// types. Returning [provider.ClassNone] leaves the error to ClassOf. Nil: ClassOf alone.
	// A Summarizer's errors are not classified here: one that finds its request too long
	// returns a [*provider.PromptTooLongError] (see [github.com/agentctx/agentctx/summarize.Summarizer]).
	ClassifyError func(error) provider.ErrorClass

	// NoBridge turns off the chain's bridges over unreadable records and dangling parents (see
	// [transcript.ChainOptions.NoBridge]): the conversation then starts after the latest
	// unreadable record or missing parent that broke its parentUuid links. The break is
	// reported either way ([Report.ChainProblems]).
	NoBridge bool

	// Validate makes Prepare check each request it builds with [provider.Validate] (the pipeline's
	// window, the counted input, Normalize.AllowPrefill) and return the violations as an
	// error instead of a request the provider would reject: a caller's duplicate or
	// schema-less tool definition, a blank system block, an input over the window. Off by
	// default: normalize already repairs what the transcript can break.
	Validate bool

	// Conversations is how many conversations the Pipeline keeps its per-conversation memos
	// for (the chain's uuid index, the calibration fit's sums, normalize's settled prefix,
	// the count sequences): the ones served last, 1 to [MaxConversations]. Zero means as many
	// as MemoBytes holds, up to MaxConversations, which is what a Pipeline shared by a fleet
	// of sessions wants: one serving more conversations in turn than its memos hold builds
	// them anew every turn (a steady turn 2 to 14 times as long at 100 and 1,000
	// conversations, BENCHMARKS.md's Fleet section).
	Conversations int

	// MemoBytes is the most the Pipeline's memos hold together, by their own estimate (see
	// [Pipeline.MemoStats]): the memos kept per conversation drop the least recently served
	// conversations' entries, and the memos kept by content (counts, cleaned blocks, encoded
	// parts) stop growing, to stay under it. Zero means 2 GiB: the memos grow only with the
	// conversations served (a session of 40,000 tokens holds about 0.8 MB), so one Pipeline
	// serves 1,000 such sessions without tuning; a fleet of larger sessions holds fewer. The
	// memos change nothing but time.
	MemoBytes int64
}

// MaxConversations bounds [Config.Conversations].
const MaxConversations = memo.MaxConvEntries

// Pipeline builds the request for each turn of a conversation. It is immutable after [New]
// and safe for concurrent use by many conversations: everything that changes the view lives
// in the transcript's records, so Prepare is a pure function of (records, config, now). Its
// memos — token counts ([Pipeline.Counter]), the encoded parts of its requests
// ([provider.Request.MarshalJSON]), normalize's cleaned blocks, and the chain's index, the calibration
// fit's sums and normalize's settled prefix of the conversations served last — carry a steady
// turn's work over from the previous one: they are keyed by content, or by the identity of strings, blocks, messages
// and byte slices they hold on to (so an address they know cannot be reused), and bounded by
// the largest turns they have seen times the conversations they hold, within
// [Config.MemoBytes] ([Pipeline.MemoStats] reports them). They
// change nothing but time and memory: a finished conversation's text stays referenced until
// the memos turn over.
type Pipeline struct {
	cfg       Config
	window    int
	maxOutput int
	levels    Levels
	counter   *Counter
	modelMax  int // the model's maximum output from the model table; 0: unknown
	minCache  int // the model's minimum cacheable prefix (Model.MinCacheTokens)
	// enc memoizes the encoded parts of the requests the pipeline builds (see
	// [provider.Request.MarshalJSON]), bounded by twice the largest request (at most 64 MB).
	enc *provider.EncodeMemo
	// chains keeps the uuid index of the transcripts of the last conversations served, which
	// the next turn of each extends by its new records (see [transcript.ChainCache]).
	chains *transcript.ChainCache
	// gauge measures the pressure, and keeps the calibration fit's sums over the response
	// pairs of the last conversations served (see [fitMemo]).
	gauge *gauge
	// stages are the view's stages, each holding what it uses: normalize holds the request
	// form of the blocks it has cleaned ([cleanMemo]), bounded by twice the largest view, and
	// its settled prefixes of the views of the last conversations served ([normPrefix]).
	stages stages
	// order is stages in the order a turn runs them.
	order []stage
	// compactor compacts a turn's conversation when it is due, asked for, or recovering.
	compactor *compactor
	// variants are the Pipelines built for turns that name another model, window or maximum
	// output ([Input.Model]); every variant shares the same set.
	variants *variants
	// late holds the copies of the assistant records a late usage record completes (see
	// [NewUsage]).
	late *lateUsage
	// folder runs the collapse producer before auto-compact (see [CollapseConfig.Producer]).
	folder *folder
	// provider is what the provider manages on its side (Config.ProviderContext, resolved).
	provider providerContext
	// budget bounds the memos (Config.MemoBytes), shared with the variants.
	budget *memoBudget
}

// New validates cfg and returns a Pipeline.
func New(cfg Config) (*Pipeline, error) { return newPipeline(cfg, nil) }

// newPipeline validates cfg and returns a Pipeline; with shared non-nil, one that shares
// shared's memos keyed by content or identity (counts, encoded parts, chains, calibration
// sums) and its variants, for a turn that names another model or window (see [variants]).
func newPipeline(cfg Config, shared *Pipeline) (*Pipeline, error) {
	if cfg.ContextWindow < 0 {
		return nil, fmt.Errorf("agentctx: ContextWindow %d is negative", cfg.ContextWindow)
	}
	if cfg.Conversations < 0 || cfg.Conversations > MaxConversations {
		return nil, fmt.Errorf("agentctx: Conversations %d is outside 0 to %d", cfg.Conversations, MaxConversations)
	}
	if cfg.MemoBytes < 0 {
		return nil, fmt.Errorf("agentctx: MemoBytes %d is negative", cfg.MemoBytes)
	}
	p := &Pipeline{cfg: cfg, window: cfg.ContextWindow, maxOutput: cfg.MaxOutputTokens}
	models := cfg.Models
	if models == nil {
		models = DefaultModels()
	}
	m, known := models.Lookup(cfg.Model)
	if ok := known; ok {
		if err := m.validate(cfg.Model); err != nil {
			return nil, err
		}
		p.window = cmp.Or(p.window, m.ContextWindow)
		p.maxOutput = cmp.Or(p.maxOutput, m.MaxOutput)
		p.modelMax = m.MaxOutput
		p.minCache = m.MinCacheTokens
	}
	p.minCache = cmp.Or(p.minCache, defaultMinCacheTokens)
	if p.window <= 0 {
		return nil, fmt.Errorf("agentctx: context window unknown for model %q: set Config.ContextWindow", cfg.Model)
	}
	p.maxOutput = cmp.Or(p.maxOutput, 32000)
	if p.maxOutput < 0 {
		return nil, fmt.Errorf("agentctx: MaxOutputTokens %d is negative", cfg.MaxOutputTokens)
	}
	if th := cfg.Thinking; th != nil && th.Type != "enabled" && th.Type != "disabled" && th.Type != "adaptive" {
		return nil, fmt.Errorf("agentctx: Thinking.Type %q is not enabled, disabled or adaptive", th.Type)
	}
	if th := cfg.Thinking; th != nil && th.BudgetTokens < 0 {
		return nil, fmt.Errorf("agentctx: Thinking.BudgetTokens %d is negative", th.BudgetTokens)
	}
	if th := cfg.Thinking; th != nil && th.Type == "enabled" {
		if th.BudgetTokens < minThinkingBudget {
			return nil, fmt.Errorf("agentctx: Thinking.BudgetTokens %d is below the provider minimum of %d", th.BudgetTokens, minThinkingBudget)
		}
		if th.BudgetTokens >= p.maxOutput {
			return nil, fmt.Errorf("agentctx: Thinking.BudgetTokens %d must be below the maximum output %d", th.BudgetTokens, p.maxOutput)
		}
	}
	errs := []error{
		cfg.Budget.validate(), cfg.Snip.validate(), cfg.Microcompact.validate(),
		cfg.Collapse.validate(), cfg.Compact.validate(), cfg.Context.validate(), cfg.Normalize.validate(),
		cfg.Cache.validate(), cfg.Pressure.validate(),
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	levels, err := cfg.Pressure.levels(p.window, p.maxOutput)
	if err != nil {
		return nil, err
	}
	p.levels = levels
	if p.provider, err = cfg.ProviderContext.resolve(m, known, levels.Threshold); err != nil {
		return nil, err
	}
	if n := cfg.Compact.SummaryMaxTokens; n > p.maxOutput || n > p.window/2 {
		return nil, fmt.Errorf("agentctx: Compact.SummaryMaxTokens %d is above the maximum output %d or half the window %d", n, p.maxOutput, p.window)
	}
	var calib *fitMemo
	if shared != nil {
		p.counter, p.enc, p.chains, p.variants, p.late, calib = shared.counter, shared.enc, shared.chains, shared.variants, shared.late, shared.gauge.calib
		p.budget = shared.budget
	} else {
		p.budget = newMemoBudget(cmp.Or(cfg.MemoBytes, defaultMemoBytes))
		p.counter = NewCounter(cfg.Tokens)
		p.enc = provider.NewEncodeMemo()
		p.enc.Scale(1, p.budget.encode)
		p.chains = transcript.NewChainCache(convLimit(cfg.Conversations))
		p.chains.SetBytes(p.budget.chains)
		p.variants = &variants{}
		p.late = &lateUsage{}
		calib = &fitMemo{}
		calib.SetLimit(convLimit(cfg.Conversations))
		calib.SetBytes(p.budget.fits)
	}
	p.gauge = &gauge{cfg: cfg.Pressure, counter: p.counter, calib: calib}
	p.stages = newStages(&cfg, p.window, p.counter, p.minCache, p.budget)
	p.order = p.stages.order()
	p.compactor = &compactor{
		cfg: cfg.Compact, pressure: cfg.Pressure, context: cfg.Context, model: cfg.Model, thinking: cfg.Thinking,
		window: p.window, maxOutput: p.maxOutput, counter: p.counter,
		budget: p.stages.budget, normalize: p.stages.normalize, cache: p.stages.cache, build: p.build,
		server: p.provider.server, started: cfg.Observer.CompactStart,
		folds: cfg.Collapse.Producer != nil && !cfg.Collapse.Disable,
	}
	p.folder = &folder{cfg: cfg.Collapse, co: p.compactor}
	return p, nil
}

// Window returns the context window the pipeline works with.
func (p *Pipeline) Window() int { return p.window }

// Counter returns the Counter the pipeline counts with. Its memo is the pipeline's: a text
// counted through it before or after Prepare is tokenized once for both.
func (p *Pipeline) Counter() *Counter { return p.counter }

// Levels returns the pipeline's pressure levels.
func (p *Pipeline) Levels() Levels { return p.levels }

// MinCacheTokens returns the model's minimum cacheable prefix: the shortest prompt prefix the
// provider's prompt cache stores ([Model.MinCacheTokens] of the model table's entry for
// Config.Model, or 1,024 tokens).
func (p *Pipeline) MinCacheTokens() int { return p.minCache }

// Input is one turn's input.
type Input struct {
	// Records is the durable transcript in file order. Prepare does not modify it, and keeps
	// none of the slice itself. Records are values of an append-only log: once a record has
	// been passed to Prepare, neither change it or anything it holds in place nor put another
	// record in its place in the slice, other than by cutting the slice back and appending new
	// records (a rewind) — append a record, give a record a new Message, or pass another slice.
	// The memos rely on it: they know a tool input or other raw JSON by the identity of its
	// bytes; the calibration fit knows a response pair it has summed by the uuid, message and
	// usage of its records, without reading their blocks again; and the records a turn passes
	// again at the same positions of the slice a previous turn passed are taken to be the
	// records they were (the first and one of the last few with a uuid of its own are
	// compared, which a rewind, a turn built again or another transcript read into the slice
	// changes), their uuids, parents, types, subtypes, threads and damage (and with the auto
	// cache TTL, the message ids, usage and times of responses) read once, when they are new,
	// and the chain rebuilt from them extended by the records written since rather than built
	// again. Records in another slice, such as a transcript read again, are
	// compared record by record, and their chain is built anew.
	Records []transcript.Record
	// Leaf optionally names the uuid of the conversation's last record (see [transcript.ChainOptions]).
	Leaf string
	// System is the system prompt. Base context providers append to it.
	System []*transcript.Text
	// Tools are the caller's tool definitions, sent in this order. Tool names that the history
	// uses but Tools lacks are declared as unavailable (an empty schema and a description
	// telling the model not to call them), since the provider rejects tool_use blocks
	// without tool definitions.
	Tools []provider.Tool
	// Context, when non-nil, replaces Config.Context for this turn: a Pipeline shared by many
	// conversations takes each conversation's own base context here, such as providers
	// wrapped in [Memoize] once per conversation.
	Context *ContextConfig
	// SkipCacheWrite marks a fire-and-forget fork: the cache marker goes on the penultimate
	// message so the fork writes no cache entry of its own. A fork never auto-compacts: the
	// records a compaction appends would belong to the main conversation.
	SkipCacheWrite bool
	// NoCompact turns auto-compact off for this turn, e.g. for a request the runtime builds to
	// refresh its session memory.
	NoCompact bool
	// TranscriptPath, when set, is where the model can read the full transcript (a file path
	// or any locator its tools take): a compaction's summary message names it, so that the
	// model can look up what the summary left out. Empty: the summary names no place.
	TranscriptPath string

	// Model, when set, is this turn's model in place of Config.Model, for a host that switches
	// models within a conversation or serves several with one Pipeline. The turn then takes
	// the model's context window and maximum output from the model table (or from
	// ContextWindow and MaxOutputTokens below), not Config's; the rest of Config holds. The
	// Pipeline builds what a window decides once per model, window and maximum output, and
	// every turn shares its memos of counts, encodings and chains; normalize's memos are the
	// variant's own, so each model in use adds up to their size (twice the largest view). A
	// compaction a turn makes for one window is a record like any other: a later turn with a
	// larger window replays it.
	Model string
	// ContextWindow and MaxOutputTokens, when positive, override the window and maximum output
	// of this turn's model (Config's, or Model's above).
	ContextWindow, MaxOutputTokens int
}

// Result is one turn's output.
type Result struct {
	// Request is the provider-ready request.
	Request provider.Request
	// Report says what each stage did.
	Report Report
	// Append holds the records this turn made: decision records and, after a compaction, the
	// compaction's boundary, summary and rehydration records. The caller appends them to the
	// transcript (in order) before sending the request and before the next turn, so that the
	// decisions are replayed byte for byte.
	Append []transcript.Record
	// Leaf is the uuid the conversation's next record must name as its parentUuid: the leaf of
	// the chain the request was built from. After a compaction it is the last record the
	// compaction appended on the chain; otherwise the chain's own leaf.
	Leaf string

	// base locates the base context in Request, for [Pipeline.Breakdown].
	base baseMark
}

// baseMark locates what the context stage put in a request: the system context block by its
// index in Request.System, and the user context by its text (normalize copies the block).
type baseMark struct {
	system int    // 1 + the index of the system context block in Request.System; 0: none
	user   string // the user context message's text; "": none
}

// Prepare builds the request for the next turn of the conversation in in.Records: it rebuilds
// the active chain, runs the stages in order (budget, snip, microcompact, collapse, base
// context, normalize, cache breakpoint), measures the request's pressure (see
// [PressureConfig]) and sizes max_tokens to the window. When the pressure figure reaches the
// auto-compact threshold and a [github.com/agentctx/agentctx/summarize.Summarizer] is configured, it compacts the conversation (see
// [CompactConfig]) and builds the request from the compacted view, all in one call.
//
// The result depends only on in, the Config, the clock and the Summarizer's replies: the same
// records give the same request bytes, and so do the records with Result.Append appended
// (which then yield no new decisions and no new compaction). Prepare does not modify
// in.Records (see [Input.Records]). Its I/O is the budget's [ResultStore], the base-context providers and,
// when it compacts, the summarizer, the hooks and the rehydration file source.
//
// Errors: ctx's error when it is done; a [*StageError] when a stage fails (a store write, a
// context provider); [ErrNoMessages], with the Report filled in, when nothing is left to send;
// a [*provider.PromptTooLongError] when the request's pressure is at or above the blocking limit (or the
// window leaves max_tokens below its floor), or a [*provider.RequestTooLargeError] when its body is over
// the provider's size limit, and compaction is off, failed or could not bring it under — then
// Result.Report and Result.Append are filled in too, and Append must still be
// appended (it records the failed attempts the circuit breaker counts); with [Config.Validate],
// a [*StageError] of stage "validate" wrapping each [*provider.Violation], with the Result filled in for
// inspection (do not send its request).
func (p *Pipeline) Prepare(ctx context.Context, in Input) (Result, error) {
	p, err := p.forTurn(&in)
	if err != nil {
		return Result{}, err
	}
	res, err := p.prepare(ctx, &in, nil)
	p.logTurn(ctx, &res.Report, err)
	return res, err
}

// prepare builds the turn and compacts when asked to (manual) or when auto-compact is due.
func (p *Pipeline) prepare(ctx context.Context, in *Input, manual *CompactOptions) (Result, error) {
	t, err := p.build(ctx, in)
	if err != nil {
		return Result{}, err
	}
	first, folded, resumed := t, (*turn)(nil), (*turn)(nil)
	defer func() {
		// The Result is made: the turns' items go back to the pool (release does nothing to
		// a turn released already, so t may be first, resumed or folded).
		t.release()
		folded.release()
		resumed.release()
		first.release()
	}()
	if t.paused != nil {
		if t, err = p.compactor.resumePause(ctx, t); err != nil {
			return p.result(first), err
		}
		resumed = t
	}
	if manual == nil && p.folder.due(t) {
		if t, err = p.folder.fold(ctx, t); err != nil {
			return p.result(t), err
		}
		folded = t
	}
	due, early := false, false
	if manual == nil {
		due, early = p.compactor.due(t)
	}
	if manual != nil || due {
		pre := t
		if t, err = p.compactor.compact(ctx, t, manual); err != nil {
			return p.result(t), err
		}
		if c := t.report.Compaction; early && c != nil {
			// Reckoned on the view before the compaction, which the clock found cold.
			t.report.CacheCosts = append(t.report.CacheCosts, p.compactor.earlyCost(pre, c))
		}
	}
	res := p.result(t)
	if len(res.Request.Messages) == 0 {
		return res, ErrNoMessages
	}
	if err := p.fits(t); err != nil {
		return res, err
	}
	if err := p.validateTurn(t); err != nil {
		return res, err
	}
	return res, nil
}

// build runs the stages on in and sizes the request: one view of the conversation.
func (p *Pipeline) build(ctx context.Context, in *Input) (*turn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	chain, err := p.chains.Build(in.Records, transcript.ChainOptions{Leaf: in.Leaf, NoBridge: p.cfg.NoBridge})
	if err != nil {
		return nil, err
	}
	if err := checkBlocks(chain.Records); err != nil {
		return nil, err
	}
	chain = p.late.apply(in.Records, chain)
	t := p.newTurn(ctx, in, chain)
	stripMedia(t, p.counter)
	for _, s := range p.order {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		t.report.stage(s.name())
		if err := s.run(t); err != nil {
			return nil, &StageError{Stage: s.name(), Err: err}
		}
	}
	p.finish(t)
	return t, nil
}

// result is the turn's Result.
func (p *Pipeline) result(t *turn) Result {
	res := Result{Request: t.req, Report: *t.report, Append: t.appended, base: t.base}
	if t.chain.Leaf != nil {
		res.Leaf = t.chain.Leaf.UUID
	}
	return res
}

// fits returns a [*provider.PromptTooLongError] when the turn's request cannot be sent: its pressure is
// at or above the blocking limit, or the window leaves max_tokens below its floor; or a
// [*provider.RequestTooLargeError] when its body is over the provider's size limit.
func (p *Pipeline) fits(t *turn) error {
	pr := &t.report.Pressure
	floor := p.cfg.Pressure.minOutput(p.window, p.maxOutput)
	var problem string
	switch {
	case pr.Level == LevelBlocking:
		problem = fmt.Sprintf("is at or above the blocking limit %d", pr.Levels.Blocking)
	case t.req.MaxTokens < floor:
		problem = fmt.Sprintf("leaves max_tokens %d, below its floor of %d", t.req.MaxTokens, floor)
	}
	if problem == "" {
		if limit := t.maxBody; t.report.BodyBytes > limit {
			return &provider.RequestTooLargeError{Bytes: t.report.BodyBytes, Limit: limit, Reason: p.whyNotCompacted(t, "is over the limit")}
		}
		return nil
	}
	return &provider.PromptTooLongError{Tokens: pr.Tokens, Limit: pr.Levels.Blocking, Window: p.window,
		Reason: fmt.Sprintf("the request %s; %s", problem, p.whyNotCompacted(t, problem))}
}

// whyNotCompacted says why the turn's request was not brought under a limit by compaction;
// problem describes how it is over.
func (p *Pipeline) whyNotCompacted(t *turn, problem string) string {
	switch c := t.report.Compaction; {
	case c != nil && c.Outcome == CompactCompacted:
		return "compacted, and the request still " + problem + ": " + c.Reason
	case c != nil:
		return "compaction " + string(c.Outcome) + ": " + c.Reason
	case p.cfg.Compact.DisableAuto:
		return "auto-compact is disabled"
	case t.in.NoCompact || t.in.SkipCacheWrite:
		return "auto-compact does not run for this request (a fork, or NoCompact)"
	case p.cfg.Compact.Summarizer != nil:
		return "no compaction was possible"
	}
	return "auto-compact is off until the blocking limit: no Summarizer is configured"
}

// checkBlocks rejects a nil block (typed or not) in the messages of records: decoding never
// makes one, so it is a caller's bug, reported before any stage could trip on it.
func checkBlocks(records []*transcript.Record) error {
	for _, r := range records {
		if r.Message == nil {
			continue
		}
		for i, b := range r.Message.Content {
			if transcript.IsNilBlock(b) {
				return fmt.Errorf("agentctx: record %s: field message.content[%d]: nil block", r.UUID, i)
			}
			if tr, ok := b.(*transcript.ToolResult); ok {
				for j, cb := range tr.Content {
					if transcript.IsNilBlock(cb) {
						return fmt.Errorf("agentctx: record %s: field message.content[%d].content[%d]: nil block", r.UUID, i, j)
					}
				}
			}
		}
	}
	return nil
}

// ErrNoMessages is returned by [Pipeline.Prepare] for a transcript with nothing to send: no
// user or assistant message on its active chain (an empty session file, or one holding only
// snapshots), or none that survives the view: every message snipped, or holding only content
// normalize drops (whitespace-only text, thinking, tool results without a tool_use). The
// Result's Report is still filled in. Append the user's message to the transcript first.
var ErrNoMessages = errors.New("agentctx: the transcript has no messages to send")

// StageError is a stage's failure.
type StageError struct {
	Stage string
	Err   error
}

// Error names the stage and its error.
func (e *StageError) Error() string { return "agentctx: " + e.Stage + ": " + e.Err.Error() }

// Unwrap returns the stage's error.
func (e *StageError) Unwrap() error { return e.Err }

// item is one record's contribution to the model's view, as the stages transform it.
type item struct {
	rec    *transcript.Record // source record; nil for synthesized items
	uuid   string             // rec.UUID, or a content-derived id for synthesized items
	pos    int                // rec's position in the transcript; -1 for synthesized items
	role   transcript.Role
	msgID  string // assistant message.id (split records share it)
	meta   bool
	time   time.Time          // synthesized items; an item of a record has its record's (see at)
	blocks []transcript.Block // shared with rec until a stage writes: use setBlock
	owned  bool               // blocks is this item's own copy
	origin string             // synthesized items: "collapse", "context", "pinned"
}

// at returns the item's time: its record's timestamp, read when a stage asks (few do), or the
// time a synthesized item was given.
func (it *item) at() time.Time {
	if it.rec != nil {
		return it.rec.Time()
	}
	return it.time
}

// setBlock replaces block i, copying the block slice first if it is still shared.
func (it *item) setBlock(i int, b transcript.Block) {
	if !it.owned {
		it.blocks = append([]transcript.Block(nil), it.blocks...)
		it.owned = true
	}
	it.blocks[i] = b
}

// turn is the per-turn state the stages share (analysis.Pass style). Stages run one after
// another and never concurrently.
type turn struct {
	ctx         context.Context
	now         time.Time
	in          *Input
	chain       *transcript.Chain
	boundaryPos int // file position of the chain's compact boundary, or -1
	levels      Levels
	items       []item
	toolNames   map[string]string // tool_use id → tool name; made on first use (see toolName)
	nameScans   int               // toolName's lookups without the map
	sessionID   string
	system      []*transcript.Text
	req         provider.Request
	report      *Report
	appended    []transcript.Record
	base        baseMark // set by the context stage
	// recovery is what the records say of the recovery ladder; maxBody and maxOutput are the
	// body limit and the output cap it leaves (see [Pipeline.Recover]).
	recovery  recoveryState
	maxBody   int
	maxOutput int
	reactive  bool // a compaction Recover runs: it compacts whatever the pressure
	// memoView: the turn's view is a conversation's, which normalize may find starting with
	// the settled prefix of the conversation's last turn (not a summary's view).
	memoView bool
	// continued: normalize appended a user continuation after a trailing assistant message;
	// the next turn's request will not send it, so the cache marker goes before it.
	continued bool
	// point is the provider compaction block the view starts at, or nil (see
	// startAtProviderCompaction).
	point transcript.Block
	// paused is the view before the provider compaction it starts at, when the answer that
	// holds it paused after the summary and nothing follows it yet (see resumePause).
	paused *pausedView
	// ttl memoizes the cache TTL in effect under CacheConfig.TTL "auto" (see ttlAt); 0: not
	// read yet.
	ttl time.Duration
}

func (p *Pipeline) newTurn(ctx context.Context, in *Input, chain *transcript.Chain) *turn {
	now := time.Now
	if p.cfg.Now != nil {
		now = p.cfg.Now
	}
	t := &turn{
		ctx: ctx, now: now().UTC(), in: in, chain: chain, boundaryPos: chain.BoundaryIndex(), levels: p.levels,
		items: getItems(len(chain.Records)), memoView: true,
		system: append([]*transcript.Text(nil), in.System...),
		report: &Report{
			Model: p.cfg.Model, ContextWindow: p.window,
			AutoCompactThreshold: p.levels.Threshold,
			Records:              len(in.Records), ChainRecords: len(chain.Records),
			Damage:        chain.Scan().Damage(in.Records),
			ChainProblems: chain.Problems,
			Replays:       chain.Replays,
		},
	}
	if chain.Leaf != nil {
		t.sessionID = chain.Leaf.SessionID
	}
	blocks := 0
	for i, r := range chain.Records {
		if !r.IsConversation() || r.IsAPIErrorMessage {
			continue
		}
		blocks += len(r.Message.Content)
		it := item{rec: r, uuid: r.UUID, pos: chain.Index(i), role: transcript.RoleUser, meta: r.IsMeta, blocks: r.Message.Content}
		if r.Type == transcript.TypeAssistant {
			it.role, it.msgID = transcript.RoleAssistant, r.Message.ID
		}
		t.items = append(t.items, it)
	}
	t.startAtProviderCompaction()
	// The counter's memos follow the sessions: room for this turn's records and blocks, for
	// each conversation held.
	p.reserveMemos(len(t.items), blocks)
	p.compactor.injectPinned(t)
	applyRecovery(t, p.cfg.Pressure.maxBody(), p.maxOutput, p.counter)
	return t
}

// itemsPool holds the item arrays of finished turns, so that a steady turn does not allocate
// one the size of the history again. A Pipeline serves many conversations at once, so each
// turn takes its own.
var itemsPool sync.Pool

// getItems returns an empty item slice with room for n items.
func getItems(n int) []item {
	if v, ok := itemsPool.Get().(*[]item); ok {
		// A much larger array than the turn needs is left to the collector: release clears
		// the whole array, which must cost about what making one for the turn would.
		if s := *v; cap(s) >= n && cap(s) <= 2*n+256 {
			return s[:0]
		}
	}
	return make([]item, 0, n+n/8+64) // room for the next turns' records
}

// release gives the turn's item array back to itemsPool, emptied so that it keeps no record or
// block alive. Nothing of the turn may read its items after: Prepare releases its turns
// once the Result is made.
func (t *turn) release() {
	if t == nil || t.items == nil {
		return
	}
	s := t.items[:cap(t.items)]
	clear(s)
	t.items = nil
	itemsPool.Put(&s)
}

// toolName returns the name of the tool that tool_use id of the chain calls, or "". A turn's
// first few lookups scan the chain from its end, where a new result's call is; later ones make
// the map.
func (t *turn) toolName(id string) string {
	if t.toolNames == nil && t.nameScans < 4 {
		t.nameScans++
		return transcript.ToolName(t.chain.Records, id)
	}
	return t.toolNameMap()[id]
}

// toolNameMap returns the tool name of each tool_use id of the chain's messages, made on first
// use: few turns need one (a microcompact decision, a compaction, many results over their cap).
func (t *turn) toolNameMap() map[string]string {
	if t.toolNames == nil {
		t.toolNames = transcript.ToolNames(t.chain.Records)
	}
	return t.toolNames
}

// readPoint names where in the transcript records stand, the same whether they come from a
// whole read or from a read that stopped at a cut (their count is not): the uuid of the last
// record that has one, and how many records follow it. The uuids of the records a turn
// appends derive from it, so that one more record gives others.
func readPoint(records []transcript.Record) string {
	for i := len(records) - 1; i >= 0; i-- {
		if u := records[i].UUID; u != "" {
			return u + "\x00" + strconv.Itoa(len(records)-1-i)
		}
	}
	return "\x00" + strconv.Itoa(len(records))
}

// decisionUUID derives the uuid of a decision record of subtype sub identified by key.
func decisionUUID(sub transcript.Subtype, key string) string {
	return transcript.ContentUUID(string(sub), key)
}

// newDecision returns a decision record of the given subtype; key must identify the decision.
func (t *turn) newDecision(sub transcript.Subtype, key, content string) transcript.Record {
	return transcript.Record{
		Type:      transcript.TypeSystem,
		Subtype:   sub,
		UUID:      decisionUUID(sub, key),
		IsMeta:    true,
		SessionID: t.sessionID,
		Timestamp: transcript.Timestamp(t.now),
		Level:     "info",
		Content:   mustJSON(content),
	}
}

func mustJSON(s string) []byte {
	b, err := jsonobj.Marshal(s)
	if err != nil {
		panic("agentctx: unreachable: " + err.Error())
	}
	return b
}

// finish assembles the request and its figures.
func (p *Pipeline) finish(t *turn) {
	t.req.Memo = p.enc
	t.req.Model = p.cfg.Model
	t.req.System = t.system
	t.req.Thinking = p.cfg.Thinking
	if t.report.ThinkingUnavailable {
		// normalize dropped the turn's thinking: the request is valid only without it.
		t.req.Thinking = nil
	}
	p.size(t)
	if th := t.req.Thinking; th != nil && th.Type == "enabled" && th.BudgetTokens >= t.req.MaxTokens {
		// 4.8: budget_tokens < max_tokens. The window left too little room for the budget.
		if t.req.MaxTokens-1 >= minThinkingBudget {
			t.req.Thinking = &provider.Thinking{Type: th.Type, BudgetTokens: t.req.MaxTokens - 1}
			t.report.stage("normalize").add(Action{Kind: ActionRepaired,
				Detail: fmt.Sprintf("thinking budget lowered from %d to %d: max_tokens is %d", th.BudgetTokens, t.req.MaxTokens-1, t.req.MaxTokens)})
			return
		}
		t.req.Thinking = nil
		t.report.ThinkingUnavailable = true
		// Sent without thinking, as with thinking off, no message holds any: the next turn,
		// sent the same way, then sends this one's messages again (see thinkingOff).
		freed := dropThinking(t.req.Messages, 0, p.counter)
		t.report.stage("normalize").add(Action{Kind: ActionRepaired, Tokens: -freed,
			Detail: fmt.Sprintf("max_tokens %d leaves no room for a thinking budget of at least %d: this request is sent with thinking disabled", t.req.MaxTokens, minThinkingBudget)})
		p.size(t)
	}
}

// outputMargin is the room max_tokens leaves in the window beside a pressure figure of n
// tokens: 1 % of it. The figure estimates the provider's count, and a provider refuses a
// prompt whose count plus max_tokens passes the window by a single token.
func outputMargin(n int) int { return (max(n, 0) + 99) / 100 }

// minThinkingBudget is the provider's smallest thinking budget_tokens.
const minThinkingBudget = 1024

// size counts the request, measures its pressure (see [PressureConfig]) and sets max_tokens:
// the configured maximum output, clamped so that the pressure figure plus max_tokens plus a
// margin (see outputMargin) never exceeds the window (at least 1; [Pipeline.Prepare] refuses a
// request whose max_tokens falls below the floor).
func (p *Pipeline) size(t *turn) {
	// Results a cache_edits block deletes are sent but no longer held by the provider.
	deleted, editing := cacheEditing(&t.req, p.counter)
	t.report.CacheDeletedTokens = deleted
	t.req.Betas = nil
	if beta := p.cfg.Microcompact.CacheEditingBeta; editing && beta != "" {
		t.req.Betas = []string{beta}
	}
	if pc := &p.provider; pc.body != nil {
		t.req.Betas = append(t.req.Betas, pc.betas...)
		t.req.ContextManagement = pc.body
	}
	in := p.counter.Request(&t.req) - deleted
	t.report.InputTokens = in
	t.report.Messages = len(t.req.Messages)
	pr := p.gauge.measure(t)
	t.report.Pressure = pr
	t.report.AnchoredTokens = 0
	if pr.AnchorUUID != "" {
		t.report.AnchoredTokens = max(0, pr.Anchor+pr.Added-pr.Freed)
	}
	t.report.OverThreshold = pr.Tokens >= pr.Levels.Threshold
	maxTokens := t.maxOutput
	if room := p.window - pr.Tokens - outputMargin(pr.Tokens); room < maxTokens {
		maxTokens = max(room, 1)
	}
	t.req.MaxTokens = maxTokens
	t.report.MaxTokens = maxTokens
	// An encoding error leaves the size unknown; Validate names the block that does not encode.
	t.report.BodyBytes, _ = t.req.BodySize(t.maxBody)
}

// finalTurn returns the index of the first message of the final assistant turn of msgs.
func finalTurn(msgs []provider.Message) int {
	return wire.FinalTurnStart(len(msgs), func(i int) (transcript.Role, []transcript.Block) { return msgs[i].Role, msgs[i].Content })
}

// dropThinking removes the thinking blocks of the assistant messages from msgs[start] on
// (contract 4.5: with thinking disabled they are rejected in the final assistant turn) and
// returns the tokens they counted. normalize guarantees no assistant message holds thinking
// alone, so none becomes empty.
func dropThinking(msgs []provider.Message, start int, c *Counter) int {
	freed := 0
	for i := start; i < len(msgs); i++ {
		if msgs[i].Role != transcript.RoleAssistant {
			continue
		}
		msgs[i].Content = slices.DeleteFunc(slices.Clone(msgs[i].Content), func(b transcript.Block) bool {
			if wire.IsThinking(b) {
				freed += c.Block(b)
				return true
			}
			return false
		})
	}
	return freed
}
