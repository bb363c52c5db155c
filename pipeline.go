package agentctx

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/agentctx/agentctx/internal/jsonobj"
	"github.com/google/uuid"
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
	Thinking *ThinkingParam

	Budget       BudgetConfig
	Snip         SnipConfig
	Microcompact MicrocompactConfig
	Collapse     CollapseConfig
	Context      ContextConfig
	Normalize    NormalizeConfig
	Cache        CacheConfig

	// Now is the clock. Nil: time.Now. Prepare reads it once per turn.
	Now func() time.Time
}

// Pipeline builds the request for each turn of a conversation. It is immutable after [New]
// and safe for concurrent use by many conversations: everything that changes the view lives
// in the transcript's records, so Prepare is a pure function of (records, config, now).
type Pipeline struct {
	cfg       Config
	window    int
	maxOutput int
	counter   *Counter
}

// New validates cfg and returns a Pipeline.
func New(cfg Config) (*Pipeline, error) {
	p := &Pipeline{cfg: cfg, window: cfg.ContextWindow, maxOutput: cfg.MaxOutputTokens}
	models := cfg.Models
	if models == nil {
		models = DefaultModels()
	}
	if m, ok := models.Lookup(cfg.Model); ok {
		if p.window == 0 {
			p.window = m.ContextWindow
		}
		if p.maxOutput == 0 {
			p.maxOutput = m.MaxOutput
		}
	}
	if p.window <= 0 {
		return nil, fmt.Errorf("agentctx: context window unknown for model %q: set Config.ContextWindow", cfg.Model)
	}
	if p.maxOutput == 0 {
		p.maxOutput = 32000
	}
	if p.maxOutput < 0 {
		return nil, fmt.Errorf("agentctx: MaxOutputTokens %d is negative", cfg.MaxOutputTokens)
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
		cfg.Collapse.validate(), cfg.Context.validate(), cfg.Normalize.validate(), cfg.Cache.validate(),
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	p.counter = NewCounter(cfg.Tokens)
	return p, nil
}

// Window returns the context window the pipeline works with.
func (p *Pipeline) Window() int { return p.window }

// Input is one turn's input.
type Input struct {
	// Records is the durable transcript in file order. Prepare does not modify or retain it.
	Records []Record
	// Leaf optionally names the uuid of the conversation's last record (see [ChainOptions]).
	Leaf string
	// System is the system prompt. Base context providers append to it.
	System []*Text
	// Tools are the caller's tool definitions, sent in this order. Tool names that the history
	// uses but Tools lacks are declared with an empty schema, since the provider rejects
	// tool_use blocks without tool definitions.
	Tools []Tool
	// Context, when non-nil, replaces Config.Context for this turn: a Pipeline shared by many
	// conversations takes each conversation's own base context here, such as providers
	// wrapped in [Memoize] once per conversation.
	Context *ContextConfig
	// SkipCacheWrite marks a fire-and-forget fork: the cache marker goes on the penultimate
	// message so the fork writes no cache entry of its own.
	SkipCacheWrite bool
}

// Result is one turn's output.
type Result struct {
	// Request is the provider-ready request.
	Request Request
	// Report says what each stage did.
	Report Report
	// Append holds the decision records this turn made. The caller appends them to the
	// transcript (in order) before the next turn so the decisions are replayed byte for byte.
	Append []Record
}

// Prepare builds the request for the next turn of the conversation in in.Records: it rebuilds
// the active chain, runs the stages in order (budget, snip, microcompact, collapse, base
// context, normalize, cache breakpoint) and sizes max_tokens to the window.
//
// The result depends only on in, the Config and the clock: the same records give the same
// request bytes, and so do the records with Result.Append appended (which then yield no new
// decisions). Prepare neither modifies nor retains in.Records. The only I/O is the budget's
// [ResultStore] and the base-context providers.
//
// Errors: ctx's error when it is done; a [*StageError] when a stage fails (a store write, a
// context provider); [ErrNoMessages], with the Report filled in, when nothing is left to send.
func (p *Pipeline) Prepare(ctx context.Context, in Input) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	chain, err := BuildChain(in.Records, ChainOptions{Leaf: in.Leaf})
	if err != nil {
		return Result{}, err
	}
	if err := checkBlocks(chain.Records); err != nil {
		return Result{}, err
	}
	t := p.newTurn(ctx, &in, chain)
	for _, s := range []struct {
		name string
		run  func(*turn) error
	}{
		{"budget", p.budget},
		{"snip", p.snip},
		{"microcompact", p.microcompact},
		{"collapse", p.collapse},
		{"context", p.baseContext},
		{"normalize", p.normalize},
		{"cache", p.cacheBreakpoint},
	} {
		if err := ctx.Err(); err != nil {
			return Result{}, err
		}
		t.report.stage(s.name)
		if err := s.run(t); err != nil {
			return Result{}, &StageError{Stage: s.name, Err: err}
		}
	}
	p.finish(t)
	res := Result{Request: t.req, Report: *t.report, Append: t.appended}
	if len(t.req.Messages) == 0 {
		return res, ErrNoMessages
	}
	return res, nil
}

// checkBlocks rejects a nil block (typed or not) in the messages of records: decoding never
// makes one, so it is a caller's bug, reported before any stage could trip on it.
func checkBlocks(records []*Record) error {
	for _, r := range records {
		if r.Message == nil {
			continue
		}
		for i, b := range r.Message.Content {
			if isNilBlock(b) {
				return fmt.Errorf("agentctx: record %s: field message.content[%d]: nil block", r.UUID, i)
			}
			if tr, ok := b.(*ToolResult); ok {
				for j, cb := range tr.Content {
					if isNilBlock(cb) {
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
	rec    *Record // source record; nil for synthesized items
	uuid   string  // rec.UUID, or a content-derived id for synthesized items
	role   Role
	msgID  string // assistant message.id (split records share it)
	meta   bool
	time   time.Time
	blocks []Block // shared with rec until a stage writes: use setBlock
	owned  bool    // blocks is this item's own copy
	origin string  // synthesized items: "collapse", "context"
}

// setBlock replaces block i, copying the block slice first if it is still shared.
func (it *item) setBlock(i int, b Block) {
	if !it.owned {
		it.blocks = append([]Block(nil), it.blocks...)
		it.owned = true
	}
	it.blocks[i] = b
}

// turn is the per-turn state the stages share (analysis.Pass style). Stages run one after
// another and never concurrently.
type turn struct {
	ctx       context.Context
	now       time.Time
	in        *Input
	chain     *Chain
	items     []item
	toolNames map[string]string // tool_use id → tool name
	sessionID string
	system    []*Text
	req       Request
	report    *Report
	appended  []Record
}

func (p *Pipeline) newTurn(ctx context.Context, in *Input, chain *Chain) *turn {
	now := time.Now
	if p.cfg.Now != nil {
		now = p.cfg.Now
	}
	t := &turn{
		ctx: ctx, now: now().UTC(), in: in, chain: chain,
		toolNames: map[string]string{},
		system:    append([]*Text(nil), in.System...),
		report: &Report{
			Model: p.cfg.Model, ContextWindow: p.window,
			AutoCompactThreshold: AutoCompactThreshold(p.window, p.maxOutput),
			Records:              len(in.Records), ChainRecords: len(chain.Records),
		},
	}
	if chain.Leaf != nil {
		t.sessionID = chain.Leaf.SessionID
	}
	for _, r := range chain.Messages() {
		it := item{rec: r, uuid: r.UUID, role: RoleUser, meta: r.IsMeta, time: r.Time(), blocks: r.Message.Content}
		if r.Type == TypeAssistant {
			it.role, it.msgID = RoleAssistant, r.Message.ID
			for _, b := range r.Message.Content {
				if tu, ok := b.(*ToolUse); ok {
					t.toolNames[tu.ID] = tu.Name
				}
			}
		}
		t.items = append(t.items, it)
	}
	return t
}

// decisionNamespace derives the uuids of decision records from their content, so that the
// same decision made twice has the same uuid.
var decisionNamespace = uuid.MustParse("6f1d2c0e-8a4b-4f5e-9c3d-2b7a1e0f9d84")

// contentUUID derives a stable uuid from a kind ("agentctx_snip", "collapse", …) and a key that
// identifies the thing within its kind: the same content always gets the same uuid.
func contentUUID(kind, key string) string {
	return uuid.NewSHA1(decisionNamespace, []byte(kind+"\x00"+key)).String()
}

// decisionUUID derives the uuid of a decision record of subtype sub identified by key.
func decisionUUID(sub Subtype, key string) string { return contentUUID(string(sub), key) }

// decisionTime formats a decision record's timestamp: UTC, milliseconds, as Claude Code writes.
func decisionTime(now time.Time) string {
	return now.UTC().Format("2006-01-02T15:04:05.000Z07:00")
}

// newDecision returns a decision record of the given subtype; key must identify the decision.
func (t *turn) newDecision(sub Subtype, key, content string) Record {
	return Record{
		Type:      TypeSystem,
		Subtype:   sub,
		UUID:      decisionUUID(sub, key),
		IsMeta:    true,
		SessionID: t.sessionID,
		Timestamp: decisionTime(t.now),
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
			t.req.Thinking = &ThinkingParam{Type: th.Type, BudgetTokens: t.req.MaxTokens - 1}
			t.report.stage("normalize").add(Action{Kind: ActionRepaired,
				Detail: fmt.Sprintf("thinking budget lowered from %d to %d: max_tokens is %d", th.BudgetTokens, t.req.MaxTokens-1, t.req.MaxTokens)})
			return
		}
		t.req.Thinking = nil
		t.report.ThinkingUnavailable = true
		freed := dropFinalTurnThinking(t.req.Messages, p.counter)
		t.report.stage("normalize").add(Action{Kind: ActionRepaired, Tokens: -freed,
			Detail: fmt.Sprintf("max_tokens %d leaves no room for a thinking budget of at least %d: this request is sent with thinking disabled", t.req.MaxTokens, minThinkingBudget)})
		p.size(t)
	}
}

// minThinkingBudget is the provider's smallest thinking budget_tokens.
const minThinkingBudget = 1024

// size counts the request and sets max_tokens: the configured maximum output, clamped so that
// input + max_tokens never exceeds the window (at least 1).
func (p *Pipeline) size(t *turn) {
	in := p.counter.Request(&t.req)
	t.report.InputTokens = in
	t.report.Messages = len(t.req.Messages)
	t.report.OverThreshold = in >= t.report.AutoCompactThreshold
	maxTokens := p.maxOutput
	if room := p.window - in; room < maxTokens {
		maxTokens = max(room, 1)
	}
	t.req.MaxTokens = maxTokens
	t.report.MaxTokens = maxTokens
}

// dropFinalTurnThinking removes the thinking blocks of the final assistant turn (contract
// 4.5: with thinking disabled they are rejected there) and returns the tokens they counted.
// normalize guarantees no assistant message holds thinking alone, so none becomes empty.
func dropFinalTurnThinking(msgs []RequestMessage, c *Counter) int {
	freed := 0
	start := finalTurnStart(len(msgs), func(i int) (Role, []Block) { return msgs[i].Role, msgs[i].Content })
	for i := start; i < len(msgs); i++ {
		if msgs[i].Role != RoleAssistant {
			continue
		}
		msgs[i].Content = slices.DeleteFunc(slices.Clone(msgs[i].Content), func(b Block) bool {
			if isThinking(b) {
				freed += c.Block(b)
				return true
			}
			return false
		})
	}
	return freed
}
