package simulate

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/provider"
	"github.com/agentctx/agentctx/summarize"
	"github.com/agentctx/agentctx/transcript"
)

// Options configures [Run]. The zero value is ready to use.
type Options struct {
	// Prices is the price table. Nil: [DefaultPrices].
	Prices Prices
	// System is the system prompt every simulated request carries, as [agentctx.Input.System] (a
	// session file holds none).
	System []*transcript.Text
	// Tools are the tool definitions every simulated request carries, as
	// [agentctx.Input.Tools]. Nil: every tool the session's responses call, in name order,
	// declared up front the way normalize declares a tool the history uses without a definition
	// (an empty schema, a description saying it is unavailable), so that the tool list — the
	// start of the cached prefix — stays the same over the whole session, as a real agent's
	// does. An empty non-nil slice declares none up front: normalize then declares the tools as
	// the view uses them, and the list changes whenever that set does.
	Tools []provider.Tool
	// Progress, when set, is called after each simulated turn with the turns done and the
	// total. It runs on the caller's goroutine.
	Progress func(done, total int)
	// Replay is the replay mode: [ReplayFile] ("" means it too) replays the file with its own
	// compactions; [ReplayPolicy] leaves the file's compactions and the decision records a
	// policy writes out and replays from the first record, compacting where the policy decides
	// (see [Run]).
	Replay string
	// SystemTokens, when System is nil, gives every request a synthetic system prompt of this
	// many counted tokens (deterministic text in the library's own words) standing for the
	// agent's own, which a session file does not hold.
	SystemTokens int
	// EstimatePrefix, when System is nil and SystemTokens 0, gives every request a synthetic
	// system prompt of the size the file's first usage says its requests lack: the first
	// response's reported prompt, in counted tokens, less the counted size of the request
	// built for it (see [FixedPrefix]). Without usage, none.
	EstimatePrefix bool
	// Calibrate reports the policy's cache split, totals and costs in provider tokens: counted
	// tokens × the session's [Calibration] ratio, fitted on its first responses' usage. The
	// simulated usage the replay writes on each response, which the pressure figure anchors on,
	// is scaled the same way, as a runtime reads the provider's figures. Real figures are as
	// recorded either way.
	Calibrate bool
	// ResponseModels prices each turn at the model of the response it replays, as the real
	// figures are (the simulated model's price when the table does not know it), for a session
	// whose responses came from several models; Result.Price stays the simulated model's. Each
	// turn is then also sent to that model as the provider sees it: scaled at the model's own
	// calibration when it has one ([Calibration.Models]), and played against the model's own
	// prompt cache (the provider caches each model's prefixes apart), so that the first request
	// after a switch reads nothing and its prefix break has the cause "model".
	ResponseModels bool
	// SessionThinking, when cfg.Thinking is nil, runs the replay with the session's own
	// thinking setting, inferred from its records ([SessionThinking]).
	SessionThinking bool
	// Observe, when set, is called after each simulated turn with what the turn built (see
	// [Step]), before the next turn starts: a caller that wants more of a turn than [Turn]
	// keeps (the request, each stage's actions, the records a compaction wrote) takes it
	// there. It runs on the caller's goroutine and must not modify the Step's values.
	Observe func(*Step)
}

// Step is one simulated turn as [Options.Observe] sees it: what [agentctx.Pipeline.Prepare]
// was given and what it returned.
type Step struct {
	// Turn is the turn's figures; [Result.Turns] holds a copy of it.
	Turn *Turn
	// Input is what Prepare was given: Input.Records is the simulated transcript as it stood
	// when the request was sent, the file's records before the response plus the records the
	// simulation appended on earlier turns. Later turns only append to it, so the slice stays
	// valid after the call.
	Input agentctx.Input
	// Result is what Prepare returned: the request, the report with each stage's actions,
	// and the records the turn appended. Err is Prepare's error, when the request could not
	// be built (Turn.Error holds its text); Result then holds what Prepare filled in.
	Result *agentctx.Result
	Err    error
	// Pipeline is the pipeline the simulation runs; [agentctx.Pipeline.Breakdown] measures
	// Result on it, and its Counter counts as the turn's figures were counted.
	Pipeline *agentctx.Pipeline
}

// Result is what [Run] found: each turn of the session under the policy, and the
// totals, beside what the provider really reported where the file holds its usage. It
// encodes to the JSON schema of docs/simulate.md.
type Result struct {
	Model         string `json:"model"`
	ContextWindow int    `json:"context_window"`
	Threshold     int    `json:"auto_compact_threshold"`
	// Replay is [Options.Replay] when set.
	Replay string `json:"replay,omitempty"`
	// Thinking is the requests' thinking setting when one was asked for (cfg.Thinking, or
	// Options.SessionThinking; nil: off); ThinkingSource says where it came from: "config"
	// or "session" (empty when neither asked).
	Thinking       *provider.Thinking `json:"thinking,omitempty"`
	ThinkingSource string             `json:"thinking_source,omitempty"`
	// FixedPrefix is the system prompt the requests carried, when there was one.
	FixedPrefix *FixedPrefix `json:"fixed_prefix,omitempty"`
	// Calibration is the session's ratio of provider to counted tokens, when
	// Options.Calibrate or Options.EstimatePrefix asked for it.
	Calibration *Calibration `json:"calibration,omitempty"`
	// WarmPrefix is the counted tokens of the fixed prefix — the tool definitions and the
	// system prompt — that the replay found already cached, written at the first request's
	// time (the first response read it, so it was alive then). With a FixedPrefix, when the file's first response read from the cache, an earlier
	// session had cached that much of the prompt: the longest part of the fixed prefix, block
	// by block, that the read covers is seeded so that the policy starts where the real
	// session started (a synthetic system prompt is made of two blocks then, the part the
	// read covers beyond the tools and the rest). 0: the replay starts cold.
	WarmPrefix int `json:"warm_prefix,omitzero"`
	// Price is the simulated model's price; Priced is false when the price table does not
	// know the model (then every cost is 0).
	Price  Price `json:"price"`
	Priced bool  `json:"priced"`
	// Records is the number of records in the file; Responses the assistant responses
	// replayed as turns; Skipped the responses that are no turn of the main conversation
	// (a subagent's sidechain, an API error the client wrote).
	Records   int `json:"records"`
	Responses int `json:"responses"`
	Skipped   int `json:"skipped"`
	// Turns holds one entry per replayed response, in file order.
	Turns []Turn `json:"turns"`
	// Totals sums the policy's turns; Real the provider's reported usage over the turns that
	// carry it (nil when none does).
	Totals Totals  `json:"totals"`
	Real   *Totals `json:"real,omitempty"`
}

// Turn is one model request of the simulated session.
type Turn struct {
	// Turn counts from 1. Line and UUID locate the response in the file (Line is 0 for
	// records not read by an [transcript.Decoder]).
	Turn int    `json:"turn"`
	Line int    `json:"line,omitzero"`
	UUID string `json:"uuid"`
	// Time is when the request was sent: the latest timestamp of the records before the
	// response (the response's own when none has one). It is the turn's clock.
	Time time.Time `json:"time,omitzero"`
	// InputTokens, MaxTokens and Messages are the request's figures ([agentctx.Report]);
	// Pressure is its pressure figure, which auto-compact compares with the threshold.
	InputTokens int `json:"input_tokens"`
	Pressure    int `json:"pressure"`
	MaxTokens   int `json:"max_tokens"`
	Messages    int `json:"messages"`
	// Usage is the cache's part of the request and the output, and their cost.
	Usage
	// Expired reports that cache entries expired since the previous request (an idle gap
	// over their time to live).
	Expired bool `json:"cache_expired,omitzero"`
	// PrefixBreak says where the request stopped sending again the prefix the previous
	// request marked for the cache, and what explains it; nil when it sent it whole.
	PrefixBreak *PrefixBreak `json:"prefix_break,omitempty"`
	// Stages says what each stage did; Compaction what a compaction this turn did.
	Stages     []Stage     `json:"stages"`
	Compaction *Compaction `json:"compaction,omitempty"`
	// ServerCompaction is the provider's compaction of this turn's request under the server
	// strategy; its cost is in Usage.
	ServerCompaction *ServerCompaction `json:"server_compaction,omitempty"`
	// Appended is the number of records the turn appended to the simulated transcript.
	Appended int `json:"appended,omitzero"`
	// Error is why the request could not be built or sent (prompt too long, no messages);
	// such a turn reads and writes no cache and costs nothing.
	Error string `json:"error,omitempty"`
	// Real is the provider's reported usage of the response, when the file holds it.
	Real *Usage `json:"real,omitempty"`
}

// Usage is one request's input split by the prompt cache, its output, and what they cost:
// Uncached + CacheWrite5m + CacheWrite1h + CacheRead is the request's input.
type Usage struct {
	Uncached     int     `json:"uncached"`
	CacheWrite5m int     `json:"cache_write_5m"`
	CacheWrite1h int     `json:"cache_write_1h"`
	CacheRead    int     `json:"cache_read"`
	Output       int     `json:"output"`
	Cost         float64 `json:"cost"`
}

// Input returns the request's input tokens: the sum of the cache's parts.
func (u Usage) Input() int { return u.Uncached + u.CacheWrite5m + u.CacheWrite1h + u.CacheRead }

// PrefixBreak is where a turn's request stopped sending again, byte for byte, the prefix the
// previous sent request marked with its last cache breakpoint. The library changes that prefix
// only on a decision (a compaction, a budget replacement, a clearing, a snip, a collapse, a
// pin, a recovery rung), recorded since the previous request, when the conversation itself
// went back (a rewind), or when the provider's thinking rules leave it no choice: Cause names
// them, and an empty Cause is a break nothing explains,
// which the prefix invariant says is a bug.
type PrefixBreak struct {
	// Block is the index of the first block that differs, in the cache's order: tool
	// definitions, system blocks, then the messages' blocks.
	Block int `json:"block"`
	// Kept is the tokens of the previous prefix the request still sends; Lost those up to
	// the previous request's last breakpoint that it does not send again.
	Kept int `json:"kept"`
	Lost int `json:"lost"`
	// Cause names the kinds of decision records written since the previous sent request,
	// comma-separated in name order ("budget", "cache ttl", "collapse", "compaction",
	// "microcompact", "pin", "recovery", "snip"), or, when there is none, "model" for a request
	// to another model than the previous one's (with [Options.ResponseModels]: each model has a
	// cache of its own), "provider compaction" after the provider compacted the previous
	// request (the server strategy), "rewind" for a conversation that
	// went back to an earlier message and goes on from there (the previous request's leaf is
	// not on the new chain), or "thinking unavailable" when thinking is enabled and one of the
	// two requests had to go without it (the provider's rule for an assistant turn in flight
	// that does not start with thinking: see [agentctx.Report.ThinkingUnavailable]), which
	// changes the request's thinking parameter; empty when nothing explains the break.
	Cause string `json:"cause,omitempty"`
}

// onChain reports whether the parentUuid links of records lead from leaf to uuid: false when
// the conversation went back to an earlier message and goes on from there (a rewind).
func onChain(records []transcript.Record, leaf, uuid string) bool {
	parent := make(map[string]string, len(records))
	for i := range records {
		if r := &records[i]; r.UUID != "" {
			parent[r.UUID] = r.ParentUUID
		}
	}
	for u, steps := leaf, 0; u != "" && steps <= len(records); u, steps = parent[u], steps+1 {
		if u == uuid {
			return true
		}
	}
	return false
}

// decisionCause names the decisions among records that may change a view's prefix: a
// compaction (the boundary), and each decision record but a compaction failure's, which
// changes nothing in the view.
func decisionCause(records []transcript.Record) string {
	var kinds []string
	for i := range records {
		r := &records[i]
		var kind string
		switch {
		case r.IsCompactBoundary():
			kind = "compaction"
		case !r.IsDecision():
			continue
		case r.Subtype == transcript.SubtypeToolResultBudget:
			kind = "budget"
		case r.Subtype == transcript.SubtypeSnip:
			kind = "snip"
		case r.Subtype == transcript.SubtypeMicrocompact:
			kind = "microcompact"
		case r.Subtype == transcript.SubtypeCollapseCommit:
			kind = "collapse"
		case r.Subtype == transcript.SubtypePin:
			kind = "pin"
		case r.Subtype == transcript.SubtypeRecovery:
			kind = "recovery"
		case r.Subtype == transcript.SubtypeCacheTTL:
			kind = "cache ttl"
		default:
			continue
		}
		if !slices.Contains(kinds, kind) {
			kinds = append(kinds, kind)
		}
	}
	slices.Sort(kinds)
	return strings.Join(kinds, ", ")
}

// Stage is what one stage did in a turn: its actions and the tokens it freed.
type Stage struct {
	Stage       string `json:"stage"`
	Actions     int    `json:"actions"`
	TokensFreed int    `json:"tokens_freed"`
}

// Compaction is a compaction one turn attempted.
type Compaction struct {
	Trigger    string                  `json:"trigger"`
	Outcome    agentctx.CompactOutcome `json:"outcome"`
	Reason     string                  `json:"reason,omitempty"`
	Summarizer string                  `json:"summarizer,omitempty"`
	PreTokens  int                     `json:"pre_tokens"`
	PostTokens int                     `json:"post_tokens"`
}

// Totals sums a simulation's turns.
type Totals struct {
	// Turns is the number of turns summed; Failed those whose request could not be sent.
	Turns  int `json:"turns"`
	Failed int `json:"failed,omitzero"`
	// Compactions and CompactFailures count the compactions that succeeded and failed; in
	// [Result.Real], Compactions counts the file's compact boundaries.
	Compactions     int `json:"compactions"`
	CompactFailures int `json:"compact_failures,omitzero"`
	// ServerCompactions counts the provider's compactions (see [ServerCompaction]).
	ServerCompactions int `json:"server_compactions,omitzero"`
	// PeakTokens is the largest request's input, at turn PeakTurn.
	PeakTokens int `json:"peak_tokens"`
	PeakTurn   int `json:"peak_turn"`
	// InputTokens sums the requests' input: Uncached + the writes + CacheRead.
	InputTokens int `json:"input_tokens"`
	// PrefixBreaks counts the turns whose request did not send the previous request's
	// marked prefix again (see [PrefixBreak]); Unexplained those no decision explains.
	PrefixBreaks int `json:"prefix_breaks,omitzero"`
	Unexplained  int `json:"unexplained_breaks,omitzero"`
	// Misses counts the sent turns that read less from the cache than the previous sent turn
	// read and wrote: a broken prefix or an expired entry, the one measure of both that the
	// real usage shows too.
	Misses int `json:"cache_misses,omitzero"`
	Usage
}

func (t *Totals) add(turn int, u Usage) {
	t.Turns++
	t.Uncached += u.Uncached
	t.CacheWrite5m += u.CacheWrite5m
	t.CacheWrite1h += u.CacheWrite1h
	t.CacheRead += u.CacheRead
	t.Output += u.Output
	t.Cost += u.Cost
	in := u.Input()
	t.InputTokens += in
	if in > t.PeakTokens {
		t.PeakTokens, t.PeakTurn = in, turn
	}
}

// Run replays a recorded session as a live agent would have run it under cfg: at each assistant
// response in records (the file's records in file order), it calls [agentctx.Pipeline.Prepare]
// on the transcript as it stood when the agent sent that request — the file's records before
// the response, plus the decision and compaction records the simulation appended on earlier
// turns — appends the turn's records and moves on. The file's records after a simulated
// compaction are linked to the compaction's leaf, as a runtime following [agentctx.Result.Leaf]
// would have written them. The records of one response (Claude Code writes one per content
// block, sharing message.id) are one turn. With opts.Replay [ReplayPolicy] the file's own
// compactions are left out first (see [Options.Replay]): the replay then runs from the first
// record and only the policy compacts.
//
// Options can give every request a fixed prefix standing for the system prompt and tool
// definitions the file lacks (System, SystemTokens, or an estimate from the file's first
// usage, EstimatePrefix: [Result.FixedPrefix]), report the policy's figures in provider
// tokens (Calibrate: [Result.Calibration]) and run with the session's own thinking setting
// (SessionThinking); the zero Options does none of these.
//
// For each turn it measures the request, says what each stage did, and plays the request
// against a model of the provider's prompt cache: the longest byte-identical prefix an earlier
// request wrote at a breakpoint and that is still alive (within its time to live, 5 minutes or
// an hour for Cache.TTL "1h", since it was last written or read, measured on the records'
// timestamps, and within 20 blocks of a breakpoint, the provider's lookback) is read; the rest
// up to the request's last breakpoint is written; what follows it is uncached. The output of
// each turn is the response's reported output tokens, or its counted size without usage. Costs
// use opts.Prices for cfg.Model; the real figures use the price of each response's own model.
//
// The clock is the records' timestamps: cfg.Now is ignored, and the same records and config
// give the same Result. When cfg.Compact.Summarizer is nil the extractive summarizer
// writes the summaries (set Compact.DisableAuto for none), and when cfg.Budget.Store is nil
// the replaced tool results are kept in memory: a simulation sends nothing and writes no file
// unless cfg says so. records are not modified.
//
// A turn whose request cannot be built (a [*provider.PromptTooLongError],
// [agentctx.ErrNoMessages]) is reported in its Turn.Error and the replay goes on; Run fails on
// a config [agentctx.New] rejects, on ctx's end, and on a stage's error
// ([*agentctx.StageError]).
func Run(ctx context.Context, records []transcript.Record, cfg agentctx.Config, opts Options) (*Result, error) {
	if err := checkReplay(opts.Replay); err != nil {
		return nil, err
	}
	var clock time.Time
	cfg.Now = func() time.Time { return clock }
	thinkingSource := ""
	switch {
	case cfg.Thinking != nil:
		thinkingSource = "config"
	case opts.SessionThinking:
		cfg.Thinking, thinkingSource = SessionThinking(records), "session"
	}
	if cfg.Compact.Summarizer == nil {
		cfg.Compact.Summarizer = summarize.Extractive{}
	}
	if cfg.Budget.Store == nil {
		cfg.Budget.Store = &agentctx.MapStore{}
	}
	p, err := agentctx.New(cfg)
	if err != nil {
		return nil, err
	}
	prices := opts.Prices
	if prices == nil {
		prices = DefaultPrices()
	}
	for _, name := range slices.Sorted(maps.Keys(prices)) { // the first bad price, by name
		if err := prices[name].validate(name); err != nil {
			return nil, err
		}
	}
	sim := &Result{Model: cfg.Model, ContextWindow: p.Window(), Threshold: p.Levels().Threshold, Records: len(records),
		Replay: opts.Replay, Thinking: cfg.Thinking, ThinkingSource: thinkingSource}
	sim.Price, sim.Priced = prices.Lookup(cfg.Model)
	compactions := fileCompactions(records)
	var manual []int // where the file's manual compactions stood in the records replayed
	file := records  // as the session ran: what its usage measured
	points, groups, groupOf := recordedResponses(records)
	filePoints, fileGroups := points, groups
	if opts.Replay == ReplayPolicy {
		records, manual = policyRecords(records)
		points, groups, groupOf = recordedResponses(records)
	}
	sim.Responses = len(points)
	skipped := map[string]bool{}
	for i := range records {
		if r := &records[i]; r.Type == transcript.TypeAssistant && r.Message != nil && (r.IsSidechain || r.IsAPIErrorMessage) {
			key := r.Message.ID
			if key == "" {
				key = fmt.Sprint(i)
			}
			skipped[key] = true
		}
	}
	sim.Skipped = len(skipped)
	tools := opts.Tools
	if tools == nil {
		tools = sessionTools(records)
	}
	system, conv, err := fixedPrefix(ctx, file, filePoints, fileGroups, cfg, opts, tools, p.Counter(), sim)
	if err != nil {
		return nil, err
	}
	scaling := scales{main: uniform(1)} // the policy's figures: counted, or provider tokens
	if opts.Calibrate {
		scaling = conv
	}
	cache := newPromptCache(p.Counter(), p.MinCacheTokens())
	warm := warmStarts(points, groups, sim, opts.ResponseModels)
	var (
		replay   = make([]transcript.Record, 0, len(records)+len(records)/8)
		relink   = map[string]string{} // a leaf a compaction replaced → the compaction's leaf
		seen     = map[string]bool{}
		last     time.Time // the latest timestamp copied so far
		next     int       // records copied so far
		sentAt   int       // len(replay) after the last sent turn's records: what came since may explain a prefix break
		sentLeaf string    // the last sent turn's leaf: a turn whose chain leaves it out went back (a rewind)
		// sentUnthinking: the last sent turn went without thinking, thinking being
		// unavailable for its assistant turn in flight (see [agentctx.Report.ThinkingUnavailable])
		sentUnthinking bool
		sentModel      string // the model the last sent turn went to, when the cache tells models apart
		started        bool   // a turn was sent
		realTotals     Totals
		// the cache read and written by the last sent turn, of the policy and the real one:
		// a turn reading less missed (see [Totals.Misses])
		policyCached, realCached = -1, -1
		// simulated usage of each replayed response, by the index of its first record
		usages = map[int]*transcript.Usage{}
		// the compaction block the simulated provider opened a response with, by the index
		// of its first record (the server strategy)
		compacted = map[int]transcript.Block{}
		// serverCompacted: the last sent turn's request was compacted by the provider
		serverCompacted bool
		server          = p.ServerCompaction()
	)
	copyTo := func(end int) {
		for ; next < end; next++ {
			r := records[next]
			if to, ok := relink[r.ParentUUID]; ok && r.ParentUUID != "" {
				r.ParentUUID = to
			}
			if at := groupOf[next]; at >= 0 {
				// The recorded usage measured the request really sent; the simulated
				// transcript carries the simulated request's, so that the pressure figure
				// anchors on the request the policy built.
				m := *r.Message
				m.Usage = usages[at]
				if b := compacted[at]; b != nil && next == at {
					m.Content = append([]transcript.Block{b}, m.Content...)
				}
				r.Message = &m
			}
			replay = append(replay, r)
			seen[r.UUID] = true
			if t := r.Time(); !t.IsZero() && t.After(last) {
				last = t
			}
		}
	}
	for k, at := range points {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		copyTo(at)
		resp := &records[at]
		clock = last.UTC() // the turns' times are UTC, whatever offset the file wrote
		if clock.IsZero() {
			clock = resp.Time().UTC()
		}
		leaf := follow(relink, resp.ParentUUID)
		if !seen[leaf] {
			leaf = ""
		}
		in := agentctx.Input{Records: replay, Leaf: leaf, System: system, Tools: tools}
		asked := false // a manual compaction of the file came before this turn
		for len(manual) > 0 && manual[0] <= at {
			asked, manual = true, manual[1:]
		}
		res, perr := prepare(ctx, p, &in, asked)
		if cerr := ctx.Err(); cerr != nil {
			return nil, cerr
		}
		if se, ok := errors.AsType[*agentctx.StageError](perr); ok {
			return nil, fmt.Errorf("turn %d (line %d): %w", k+1, resp.Line, se)
		}
		replay = in.Records // with a failed manual compaction's records
		replay = append(replay, res.Append...)
		for _, r := range res.Append {
			seen[r.UUID] = true
		}
		turn := Turn{Turn: k + 1, Line: resp.Line, UUID: resp.UUID, Time: clock,
			InputTokens: res.Report.InputTokens, Pressure: res.Report.Pressure.Tokens,
			MaxTokens: res.Report.MaxTokens, Messages: res.Report.Messages, Appended: len(res.Append)}
		for _, s := range res.Report.Stages {
			turn.Stages = append(turn.Stages, Stage{Stage: s.Stage, Actions: len(s.Actions), TokensFreed: s.TokensFreed})
		}
		if c := res.Report.Compaction; c != nil {
			turn.Compaction = &Compaction{Trigger: c.Trigger, Outcome: c.Outcome, Reason: c.Reason,
				Summarizer: c.Summarizer, PreTokens: c.PreTokens, PostTokens: c.PostTokens}
			switch c.Outcome {
			case agentctx.CompactCompacted:
				sim.Totals.Compactions++
				if base := follow(relink, resp.ParentUUID); base != "" && res.Leaf != "" && res.Leaf != base {
					relink[base] = res.Leaf
				}
			case agentctx.CompactFailed:
				sim.Totals.CompactFailures++
			}
		}
		group := groups[at]
		output := group.output(p.Counter())
		scale := scaling.main
		if opts.ResponseModels {
			scale = scaling.of(group.model)
		}
		if perr != nil {
			turn.Error = perr.Error()
			sim.Totals.Failed++
		} else {
			if opts.ResponseModels && group.model != "" {
				cache.model = group.model // each model has a cache of its own
			}
			if read, ok := warm[cache.model]; ok {
				n := cache.seed(&res.Request, clock, read, conv.of(cache.model))
				if !started {
					sim.WarmPrefix = n
				}
				delete(warm, cache.model)
			}
			use := cache.send(&res.Request, clock, res.Report.CacheDeletedTokens)
			started = true
			if !scale.identity() {
				use.read, use.write5m, use.write1h, use.uncached = scale.usage(use.read, use.write5m, use.write1h, use.uncached)
				if group.usage == nil {
					output = scale.tokens(output)
				}
			}
			turn.Usage = Usage{Uncached: use.uncached, CacheWrite5m: use.write5m, CacheWrite1h: use.write1h,
				CacheRead: use.read, Output: output}
			price := sim.Price
			if p, ok := prices.Lookup(group.model); ok && opts.ResponseModels {
				price = p
			}
			turn.Cost = price.Cost(use.uncached, use.write5m, use.write1h, use.read, output)
			if policyCached >= 0 && use.read < policyCached {
				sim.Totals.Misses++
			}
			policyCached = use.read + use.write5m + use.write1h
			turn.Expired = use.expired
			if b := use.brk; b != nil {
				cause := decisionCause(replay[sentAt:])
				switch {
				case cause != "":
				case sentModel != "" && cache.model != sentModel:
					cause = "model"
				case serverCompacted:
					cause = "provider compaction"
				case sentLeaf != "" && !onChain(replay, res.Leaf, sentLeaf):
					cause = "rewind"
				case res.Report.ThinkingUnavailable != sentUnthinking:
					cause = "thinking unavailable"
				}
				turn.PrefixBreak = &PrefixBreak{Block: b.block, Kept: b.kept, Lost: b.marked - b.kept, Cause: cause}
				sim.Totals.PrefixBreaks++
				if turn.PrefixBreak.Cause == "" {
					sim.Totals.Unexplained++
				}
			}
			sentAt, sentLeaf, sentUnthinking, sentModel = len(replay), res.Leaf, res.Report.ThinkingUnavailable, cache.model
			serverCompacted = false
			answered := use
			if server && turn.Usage.Input() >= sim.Threshold {
				// The provider compacts: the request is the summarizing step's input, and
				// the answer reads the summary.
				block, n, err := serverSummary(ctx, &res.Request, p.Counter().Text)
				if err != nil {
					return nil, fmt.Errorf("turn %d (line %d): the provider's compaction: %w", k+1, resp.Line, err)
				}
				sc := &ServerCompaction{PreTokens: turn.Usage.Input(), SummaryTokens: n, Compaction: turn.Usage}
				sc.Compaction.Output = scale.tokens(n)
				sc.Compaction.Cost = price.Cost(use.uncached, use.write5m, use.write1h, use.read, sc.Compaction.Output)
				ans := answering(&res.Request, block)
				answered = cache.send(&ans, clock, 0)
				if !scale.identity() {
					answered.read, answered.write5m, answered.write1h, answered.uncached = scale.usage(answered.read, answered.write5m, answered.write1h, answered.uncached)
				}
				turn.Usage = Usage{Uncached: use.uncached + answered.uncached, CacheWrite5m: use.write5m + answered.write5m,
					CacheWrite1h: use.write1h + answered.write1h, CacheRead: use.read + answered.read, Output: sc.Compaction.Output + output}
				turn.Cost = sc.Compaction.Cost + price.Cost(answered.uncached, answered.write5m, answered.write1h, answered.read, output)
				turn.ServerCompaction = sc
				sim.Totals.ServerCompactions++
				compacted[at], serverCompacted = block, true
			}
			peak, peakTurn := sim.Totals.PeakTokens, sim.Totals.PeakTurn
			sim.Totals.add(turn.Turn, turn.Usage)
			if sc := turn.ServerCompaction; sc != nil {
				// The request's size is the one that passed the trigger, not the two steps'.
				sim.Totals.PeakTokens, sim.Totals.PeakTurn = peak, peakTurn
				if sc.PreTokens > peak {
					sim.Totals.PeakTokens, sim.Totals.PeakTurn = sc.PreTokens, turn.Turn
				}
			}
			usages[at] = &transcript.Usage{InputTokens: answered.uncached, CacheCreationInputTokens: answered.write5m + answered.write1h,
				CacheReadInputTokens: answered.read, OutputTokens: output}
		}
		if u := group.usage; u != nil {
			w5, w1 := realWrites(u)
			real := Usage{Uncached: u.InputTokens, CacheWrite5m: w5, CacheWrite1h: w1, CacheRead: u.CacheReadInputTokens, Output: u.OutputTokens}
			price, ok := prices.Lookup(group.model)
			if !ok {
				price = sim.Price
			}
			real.Cost = price.Cost(real.Uncached, w5, w1, real.CacheRead, real.Output)
			turn.Real = &real
			realTotals.add(turn.Turn, real)
			if realCached >= 0 && real.CacheRead < realCached {
				realTotals.Misses++
			}
			realCached = real.CacheRead + w5 + w1
		}
		if opts.Observe != nil {
			opts.Observe(&Step{Turn: &turn, Input: in, Result: &res, Err: perr, Pipeline: p})
		}
		sim.Turns = append(sim.Turns, turn)
		if opts.Progress != nil {
			opts.Progress(k+1, len(points))
		}
	}
	if realTotals.Turns > 0 {
		realTotals.Compactions = compactions
		sim.Real = &realTotals
	}
	return sim, nil
}

// warmStarts says where the replay may start with its fixed prefix cached (see
// [Result.WarmPrefix]): by cache — the model with perModel, else "" for the one cache — the
// cache read of the first response that cache answers, when it carries usage and read from the
// cache. None without a fixed prefix. The seed is written at the time of the first request to
// that cache: its response read it, so it was alive then, however long before the file's first
// record is dated (a session resumed days later).
func warmStarts(points []int, groups map[int]*recordedResponse, sim *Result, perModel bool) map[string]int {
	warm := map[string]int{}
	if sim.FixedPrefix == nil {
		return warm
	}
	seen := map[string]bool{}
	for _, at := range points {
		g := groups[at]
		key := ""
		if perModel {
			key = g.model
		}
		if seen[key] {
			continue
		}
		seen[key] = true
		if u := g.usage; u != nil && u.CacheReadInputTokens > 0 {
			warm[key] = u.CacheReadInputTokens
		}
	}
	return warm
}

// sessionTools declares every tool the records' assistant messages call, in name order (see
// [Options.Tools]).
func sessionTools(records []transcript.Record) []provider.Tool {
	var names []string
	seen := map[string]bool{}
	for i := range records {
		r := &records[i]
		if r.Type != transcript.TypeAssistant || r.Message == nil || r.IsSidechain {
			continue
		}
		for _, b := range r.Message.Content {
			if tu, ok := b.(*transcript.ToolUse); ok && !seen[tu.Name] {
				seen[tu.Name] = true
				names = append(names, tu.Name)
			}
		}
	}
	slices.Sort(names)
	tools := make([]provider.Tool, 0, len(names))
	for _, n := range names {
		tools = append(tools, provider.StubTool(n))
	}
	return tools
}

// follow resolves uuid through the relinks of earlier compactions.
func follow(relink map[string]string, uuid string) string {
	for range len(relink) + 1 {
		to, ok := relink[uuid]
		if !ok {
			break
		}
		uuid = to
	}
	return uuid
}

// recordedResponse is one assistant response of a recorded session: the records that hold it.
type recordedResponse struct {
	records []*transcript.Record
	usage   *transcript.Usage // the last reported usage among them
	model   string
}

// output is the response's output tokens: its reported figure, or its counted size.
func (r *recordedResponse) output(c *agentctx.Counter) int {
	if r.usage != nil {
		return r.usage.OutputTokens
	}
	n := 0
	for _, rec := range r.records {
		n += c.Blocks(rec.Message.Content)
	}
	return n
}

// recordedResponses finds the model requests of a recorded session: the first record of each
// assistant response of the main conversation (records sharing message.id, or requestId, are
// one response), in file order, with each response's records by the index of its first, and
// for each record the index of the first record of its response (-1 for other records).
func recordedResponses(records []transcript.Record) ([]int, map[int]*recordedResponse, []int) {
	var points []int
	groups := map[int]*recordedResponse{}
	groupOf := make([]int, len(records))
	first := map[string]int{}
	for i := range records {
		r := &records[i]
		groupOf[i] = -1
		if r.Type != transcript.TypeAssistant || r.Message == nil || r.IsSidechain || r.IsAPIErrorMessage {
			continue
		}
		key := r.Message.ID
		if key == "" {
			key = "request\x00" + r.RequestID
		}
		if key == "request\x00" {
			key = "record\x00" + r.UUID + fmt.Sprint(i)
		}
		at, ok := first[key]
		if !ok {
			at = i
			first[key] = i
			points = append(points, i)
			groups[i] = &recordedResponse{}
		}
		groupOf[i] = at
		g := groups[at]
		g.records = append(g.records, r)
		if r.Message.Usage != nil {
			g.usage = r.Message.Usage
		}
		if r.Message.Model != "" {
			g.model = r.Message.Model
		}
	}
	return points, groups, groupOf
}

// prepare builds a turn's request: with asked, the user asked for a compaction before it (a
// manual compaction of the file, under [ReplayPolicy]), and the policy compacts there with
// its own summarizer ([agentctx.Pipeline.Compact]); when that fails, its records are appended
// to in.Records and the turn is prepared as any other.
func prepare(ctx context.Context, p *agentctx.Pipeline, in *agentctx.Input, asked bool) (agentctx.Result, error) {
	if !asked {
		return p.Prepare(ctx, *in)
	}
	res, err := p.Compact(ctx, *in, agentctx.CompactOptions{})
	if err == nil || ctx.Err() != nil {
		return res, err
	}
	if _, ok := errors.AsType[*agentctx.StageError](err); ok {
		return res, err
	}
	in.Records = append(in.Records, res.Append...)
	return p.Prepare(ctx, *in)
}
