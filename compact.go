package agentctx

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/agentctx/agentctx/summarize"

	"github.com/agentctx/agentctx/provider"

	"github.com/agentctx/agentctx/transcript"
)

// Compaction defaults. The token budgets are their values at a window of 200,000 tokens and
// more; below, they scale with the window (see the package doc's table).
const (
	// defaultSummaryMaxTokens caps a summary's length (Claude Code reserves 20,000 output
	// tokens for it); the cap is also limited to the model's maximum output.
	defaultSummaryMaxTokens = 20_000
	// defaultPinnedMaxTokens caps the pinned content of a conversation, in counted tokens.
	defaultPinnedMaxTokens = 8_000
	// defaultTargetFraction is where a compaction aims by default: half the auto-compact
	// threshold (see [CompactConfig.TargetFraction], which gives the measurement behind it).
	defaultTargetFraction = 0.5
	// defaultTailMinTokens and defaultTailMaxTokens bound the kept tail (see [TailConfig]).
	defaultTailMinTokens = 10_000
	defaultTailMaxTokens = 40_000
	// defaultMaxCompactFailures is the circuit breaker: after this many consecutive failed
	// attempts of the summarizer, auto-compact stops using it.
	defaultMaxCompactFailures = 3
	// defaultThrashTurns and defaultThrashRuns define thrash: a compaction made within
	// defaultThrashTurns responses of the one before, defaultThrashRuns times in a row.
	defaultThrashTurns = 3
	defaultThrashRuns  = 3
	// maxPTLRetries bounds the retries of a summary request the provider found too long.
	maxPTLRetries = 3
)

// CompactConfig configures compaction: the transaction that replaces a conversation's history
// with a summary once the lossless stages no longer keep it under the auto-compact threshold.
// The zero value is the default: auto-compact is on at the threshold as soon as a Summarizer
// is set, and at the blocking limit without one (with [summarize.Extractive]).
//
// A compaction appends records and never rewrites one. It works on this turn's projected view
// (after snip, microcompact and collapse — nothing they removed is summarized again) and runs
// these steps:
//
//  1. Pre-compact hooks may add instructions (merged with the caller's) or veto it.
//  2. The progress contract: the irreducible floor — system prompt, tools, base and pinned
//     context, the latest user input (with the response it answers) and the summary's cap —
//     is computed first; when no compaction could bring the request under the blocking limit,
//     or an automatic one would not make real progress, nothing is attempted and the Report
//     says why.
//  3. The summary: from the [SessionMemory] when it has a fresh one and there are no extra
//     instructions (no model call), otherwise from the Summarizer, given a request that shares
//     the conversation's prompt cache (see [summarize.Request]). When the provider finds it too
//     long, the oldest rounds of the conversation (a user message with the responses and tool
//     results that follow it, never cut inside a tool pair or a split response) are left out,
//     enough to cover the reported excess, and it is retried, at most 3 times. A failed
//     attempt appends a [transcript.SubtypeCompactFailure] record; the Fallback summarizer is tried next.
//  4. Installation, by appending: a compact boundary in Claude Code's shape (trigger,
//     pre- and post-compact tokens, logicalParentUuid), the summary as a user message marked
//     isCompactSummary, the kept tail (the most recent messages, verbatim, named by the
//     boundary's preservedSegment so that [transcript.BuildChain] relinks them), rehydration records
//     (recently read files re-read, invoked skills, the last plan and todo list; see
//     [RehydrateConfig]) and what session-start hooks return. Pinned content (see
//     [Pipeline.Pin]) is re-placed after the summary at read time. Memoized base context is
//     invalidated.
//  5. The drop is verified: the request built from the installed records must be under the
//     compaction's target (TargetFraction of the threshold); otherwise it goes down its
//     ladder (see [CompactRung]): the kept tail, the rehydration, the older results shrink.
//     Post-compact hooks observe the summary.
//
// The circuit breaker and the thrash guard are computed from the transcript: after
// MaxFailures consecutive failed attempts of the Summarizer on auto-compact it is no longer
// called — the Fallback writes the summaries — until a manual compaction runs (whatever its
// outcome: a person asked) or the Summarizer succeeds; a turn whose attempt failed is not
// attempted again when it is prepared again; and
// after ThrashRuns compactions in a row each made within ThrashTurns responses of the one
// before, auto-compact stops until a manual compaction, and the Report says so. Auto-compact
// never runs for a fork ([Input.SkipCacheWrite]), with [Input.NoCompact], or before the
// conversation has a new response since its latest compaction.
type CompactConfig struct {
	// Summarizer writes summaries. Nil: auto-compact waits for the blocking limit instead of
	// the threshold — a request that could not be sent is compacted with [summarize.Extractive] rather
	// than refused, and the Report says so (DisableAuto refuses it instead) — and
	// [Pipeline.Compact] uses [summarize.Extractive].
	Summarizer summarize.Summarizer
	// Fallback writes the summary when Summarizer fails or its circuit breaker is open. Nil:
	// [summarize.Extractive], unless Summarizer is itself extractive or DisableFallback is set.
	Fallback        summarize.Summarizer
	DisableFallback bool
	// DisableAuto turns auto-compact off; [Pipeline.Compact] still compacts on request.
	// Auto-compact runs at the threshold, and from the warning level on when the cached
	// prefix is cold (idle past the cache's TTL, or caching off: see [CacheConfig.ReadPrice])
	// and no collapse producer would fold instead: the request rewrites the prefix anyway.
	DisableAuto bool
	// Memory supplies session-memory summaries. Nil: none.
	Memory SessionMemory
	// Hooks run around a compaction.
	Hooks CompactHooks
	// Tail chooses the recent messages kept verbatim after the summary.
	Tail TailConfig
	// Rehydrate chooses what is re-injected after the summary.
	Rehydrate RehydrateConfig
	// SummaryMaxTokens caps a summary, in tokens; New rejects a cap above the model's maximum
	// output or half the window. Zero: 20,000 at a window of 200,000 tokens and more, window/10
	// below (at least min(1,024, window/8)), and at most the model's maximum output.
	SummaryMaxTokens int
	// PinnedMaxTokens caps the pinned content of a conversation, in counted tokens; pinning
	// beyond it is an error ([Pipeline.Pin]). Zero: 8,000 at a window of 200,000 tokens and
	// more, window/25 below, at least 500.
	PinnedMaxTokens int
	// TargetFraction is where a compaction aims, as a fraction of the auto-compact threshold:
	// it goes down its ladder (see [CompactRung]; never to the lossy rungs for this) until the
	// request is under it, so that the next compaction is not a few turns away. In aggressive
	// mode it aims at half that. Zero: 0.5, which on the closed-loop agent benchmark
	// (internal/liveloop) halves the context on median at every window from 8,000 tokens up,
	// with fewer compactions than aiming at the threshold itself; 1 stops at the first rung
	// under the threshold.
	TargetFraction float64
	// MaxFailures is the circuit breaker's limit. Zero: 3.
	MaxFailures int
	// ThrashTurns and ThrashRuns define thrash (see above). Zero: 3 and 3.
	ThrashTurns, ThrashRuns int
}

// TailConfig chooses the kept tail: the most recent messages, kept verbatim after the summary.
// The zero value is the default, Claude Code's session-memory budgets scaled to the window: at
// least 10,000 tokens and 5 messages with text, at most 40,000 tokens at a window of 200,000
// tokens and more (window/20 and window/5 below, at least 400 and 1,600) — and, whatever the
// budgets, at least a quarter and at most half of the auto-compact threshold when that is
// less, and never more than half of what the summary covers. The tail grows back from the end
// until it meets both minimums or would pass the maximum. It always starts at a cut that
// never separates a tool_use from its result or the records of one response, never reaches
// back over what an earlier compaction installed, and always holds the latest user input with
// the response it answers (unless compaction has to degrade: see [CompactConfig]).
type TailConfig struct {
	// Disable keeps only the latest user input (and the response it answers).
	Disable bool
	// MinTokens is the least the tail holds, in tokens. Zero: the scaled 10,000, or MaxTokens
	// when that is less.
	MinTokens int
	// MinTextMessages is the least number of messages with text the tail holds. Zero: 5.
	MinTextMessages int
	// MaxTokens is the most the tail holds, in tokens. Zero: the scaled 40,000.
	MaxTokens int
}

// minTokens is the tail's minimum for window.
func (c TailConfig) minTokens(window int) int {
	if c.MinTokens == 0 {
		// A maximum set alone lowers the default minimum.
		return min(scaled(defaultTailMinTokens, 400, window), c.maxTokens(window))
	}
	return c.MinTokens
}

func (c TailConfig) minText() int { return cmp.Or(c.MinTextMessages, 5) }

// maxTokens is the tail's maximum for window.
func (c TailConfig) maxTokens(window int) int {
	return cmp.Or(c.MaxTokens, scaled(defaultTailMaxTokens, 1_600, window))
}

func (c CompactConfig) validate() error {
	var errs []error
	for _, f := range []struct {
		name string
		v    int
	}{
		{"SummaryMaxTokens", c.SummaryMaxTokens}, {"PinnedMaxTokens", c.PinnedMaxTokens},
		{"MaxFailures", c.MaxFailures}, {"ThrashTurns", c.ThrashTurns}, {"ThrashRuns", c.ThrashRuns},
		{"Tail.MinTokens", c.Tail.MinTokens}, {"Tail.MinTextMessages", c.Tail.MinTextMessages}, {"Tail.MaxTokens", c.Tail.MaxTokens},
	} {
		if f.v < 0 {
			errs = append(errs, fmt.Errorf("agentctx: Compact.%s %d is negative", f.name, f.v))
		}
	}
	if f := c.TargetFraction; f < 0 || f > 1 || math.IsNaN(f) {
		errs = append(errs, fmt.Errorf("agentctx: Compact.TargetFraction %v is not in (0, 1]", f))
	}
	if c.Tail.MaxTokens != 0 && c.Tail.MinTokens != 0 && c.Tail.MaxTokens < c.Tail.MinTokens {
		errs = append(errs, fmt.Errorf("agentctx: Compact.Tail.MaxTokens %d is below Tail.MinTokens %d", c.Tail.MaxTokens, c.Tail.MinTokens))
	}
	errs = append(errs, c.Rehydrate.validate())
	return errors.Join(errs...)
}

// target is the pressure figure a compaction aims under, for a threshold.
func (c CompactConfig) target(threshold int) int {
	return int(cmp.Or(c.TargetFraction, defaultTargetFraction) * float64(threshold))
}

func (c CompactConfig) maxFailures() int { return cmp.Or(c.MaxFailures, defaultMaxCompactFailures) }

func (c CompactConfig) thrashTurns() int { return cmp.Or(c.ThrashTurns, defaultThrashTurns) }

func (c CompactConfig) thrashRuns() int { return cmp.Or(c.ThrashRuns, defaultThrashRuns) }

// pinnedMax is the pinned-content budget for window.
func (c CompactConfig) pinnedMax(window int) int {
	return cmp.Or(c.PinnedMaxTokens, scaled(defaultPinnedMaxTokens, 500, window))
}

// summaryMax is the summary's output cap for window and the pipeline's maximum output.
func (c CompactConfig) summaryMax(window, maxOutput int) int {
	if c.SummaryMaxTokens > 0 {
		return c.SummaryMaxTokens
	}
	return max(1, min(maxOutput, scaled(defaultSummaryMaxTokens, min(1_024, window/8), window)))
}

// compactor runs the compaction transaction (see [CompactConfig]): it plans the kept tail,
// has the summary written, installs the boundary, summary and rehydration records, and builds
// the view again from them. It holds the stages a summary request reuses (normalize, cache)
// and whose replacements its lower rungs apply (budget), and builds a turn through build.
type compactor struct {
	cfg       CompactConfig
	pressure  PressureConfig
	context   ContextConfig
	model     string
	thinking  *provider.Thinking
	window    int
	maxOutput int
	counter   *Counter
	budget    *budgetStage
	normalize *normalizeStage
	cache     *cacheStage
	// build builds the turn of an input: the pipeline's, run again on the compacted records.
	build func(context.Context, *Input) (*turn, error)
	// server: the provider compacts (see [CompactServer]); auto-compact waits for the
	// blocking limit.
	server bool
	// started observes a compaction about to write its summary ([Observer.CompactStart]).
	started func(context.Context, CompactEvent)
	// folds: a collapse producer is set, which makes the early rewrite of a cold prefix
	// (see early) instead of a compaction.
	folds bool
}

// summaryMax is the summary's output cap for the pipeline.
func (co *compactor) summaryMax() int { return co.cfg.summaryMax(co.window, co.maxOutput) }

// CompactOptions are the options of a manual compaction.
type CompactOptions struct {
	// Instructions are extra instructions for the summary, as in "/compact focus on the
	// parser"; they rule out the session-memory summary.
	Instructions string
}

// Compact compacts the conversation in in.Records now, whatever its pressure, and builds the
// next request from the compacted view: a manual compaction, with optional instructions. It
// runs the same transaction as auto-compact (see [CompactConfig]), with the Summarizer (or
// [summarize.Extractive] when none is configured), and returns the records to append in Result.Append.
// A failed compaction returns an error wrapping the summarizers' errors (errors.Is and As
// reach them), with the failure records in Result.Append; a veto from a pre-compact hook
// returns [ErrCompactVetoed].
func (p *Pipeline) Compact(ctx context.Context, in Input, opts CompactOptions) (Result, error) {
	p, err := p.forTurn(&in)
	if err != nil {
		return Result{}, err
	}
	res, err := p.prepare(ctx, &in, &opts)
	p.logTurn(ctx, &res.Report, err)
	return res, err
}

// ErrCompactVetoed is returned by [Pipeline.Compact] when a pre-compact hook vetoed it.
var ErrCompactVetoed = errors.New("agentctx: compaction vetoed by a pre-compact hook")

// CompactOutcome says how a compaction attempt ended.
type CompactOutcome string

// The outcomes of a compaction attempt.
const (
	CompactCompacted CompactOutcome = "compacted"
	CompactFailed    CompactOutcome = "failed"
	CompactSkipped   CompactOutcome = "skipped"
	CompactVetoed    CompactOutcome = "vetoed"
)

// CompactReport describes the compaction a turn attempted.
type CompactReport struct {
	// Trigger is "auto" or "manual".
	Trigger string
	// Outcome and Reason say how it ended and why.
	Outcome CompactOutcome
	Reason  string
	// Summarizer names what wrote the summary; Fallback is true when it was the fallback, and
	// FallbackReason says why. SummaryUsage is the provider's usage for the summary call, when
	// the Summarizer gave it.
	Summarizer     string
	Fallback       bool
	FallbackReason string
	SummaryUsage   *transcript.Usage
	// ProviderFailed names the answer whose provider compaction failed (server strategy),
	// which this compaction replaces; its failure is recorded and counted by the breaker.
	ProviderFailed string
	// Rung is how far down its ladder the compaction went (see [CompactRung]).
	Rung CompactRung
	// Attempts counts the summarizer calls; Failures lists the failed attempts' reasons.
	Attempts int
	Failures []string
	// PreTokens and PostTokens are the pressure figures before and after.
	PreTokens, PostTokens int
	// Floor is the irreducible floor computed before compacting (see [CompactConfig]).
	Floor int
	// Summarized is the number of view messages the summary covers, Omitted those left out of
	// the summary request to fit.
	Summarized, Omitted int
	// Kept is the number of records of the kept tail, KeptTokens their counted size.
	Kept, KeptTokens int
	// Rehydrated lists what was re-injected after the summary ("file PATH", "skill NAME", …).
	Rehydrated []string
	// BoundaryUUID and SummaryUUID name the installed records.
	BoundaryUUID, SummaryUUID string
	// ConsecutiveFailures is the circuit breaker's count after this turn; BreakerOpen is true
	// when it reached the limit. Compactions counts the thread's compactions before this one.
	// Thrash is true when the compactions before came right after one another; Aggressive
	// when the compaction therefore started lower down its ladder and aimed at half its usual
	// target.
	ConsecutiveFailures int
	BreakerOpen         bool
	Compactions         int
	Thrash              bool
	Aggressive          bool
}

// due reports whether this turn should compact automatically, and whether only because the
// cached prefix is cold at the warning level (see early). When it should not although the
// pressure calls for it, the reason is left in the Report.
func (co *compactor) due(t *turn) (due, early bool) {
	pr := &t.report.Pressure
	tooSmall := t.req.MaxTokens < co.pressure.minOutput(co.window, co.maxOutput)
	tooBig := t.report.BodyBytes > t.maxBody
	failed := co.server && serverFailure(t) != nil // the provider passed its trigger and failed
	if pr.Tokens < pr.Levels.Threshold && !tooSmall && !tooBig && !failed {
		if early = co.early(t); !early {
			return false, false
		}
	}
	why := ""
	switch c := co.cfg; {
	case c.Summarizer == nil && pr.Tokens < pr.Levels.Blocking && !tooSmall && !tooBig:
		// Without a Summarizer the threshold compacts nothing; a request that cannot be sent
		// is compacted with Extractive rather than refused.
		why = "auto-compact is off until the blocking limit: no Summarizer is configured"
	case c.DisableAuto:
		why = "auto-compact is disabled"
	case t.in.SkipCacheWrite:
		why = "a fork never compacts the conversation"
	case t.in.NoCompact:
		why = "auto-compact is off for this request (NoCompact)"
	case co.server && pr.Tokens < pr.Levels.Blocking && !tooSmall && !tooBig && !failed:
		why = "the provider compacts at the threshold (server strategy): the library compacts only at the blocking limit"
	case (t.chain.Boundary != nil || t.point != nil) && !answeredSince(t.items, t.boundaryPos):
		why = "nothing new since the latest compaction: no response after it"
	}
	if why != "" {
		if !early { // under the threshold there is nothing to explain
			pr.Why += "; " + why
		}
		return false, false
	}
	return true, early
}

// answeredSince reports whether the view holds a response written after the record at file
// position pos.
func answeredSince(items []item, pos int) bool {
	for i := range items {
		if it := &items[i]; it.role == transcript.RoleAssistant && it.rec != nil && it.pos > pos {
			return true
		}
	}
	return false
}

// compact runs the compaction transaction on the built turn t and returns the turn to send:
// the one built from the compacted records, or t itself (with failure records appended) when
// no compaction was installed. For a manual compaction that installed nothing it also returns
// the error to give the caller.
func (co *compactor) compact(ctx context.Context, t *turn, manual *CompactOptions) (*turn, error) {
	c := co.cfg
	trigger, custom := transcript.TriggerAuto, ""
	if manual != nil {
		trigger, custom = transcript.TriggerManual, manual.Instructions
	}
	rep := &CompactReport{Trigger: trigger, PreTokens: t.report.Pressure.Tokens}
	t.report.Compaction = rep
	st := t.report.stage("compact")
	var failed []error
	end := func(o CompactOutcome, reason string) (*turn, error) {
		rep.Outcome, rep.Reason = o, reason
		st.add(Action{Kind: ActionSkipped, Detail: "compaction " + string(o) + ": " + reason})
		switch {
		case manual == nil:
			return t, nil
		case o == CompactVetoed:
			return t, fmt.Errorf("%w: %s", ErrCompactVetoed, reason)
		case len(failed) > 0:
			return t, fmt.Errorf("agentctx: compaction %s: %w", o, errors.Join(failed...))
		}
		return t, fmt.Errorf("agentctx: compaction %s: %s", o, reason)
	}
	if t.chain.Leaf == nil || len(t.items) == 0 {
		return end(CompactSkipped, "the conversation has no messages")
	}
	h := readHistory(t.in.Records, t.chain.Scan(), t.chain.Leaf, t.boundaryPos, c.thrashTurns())
	if a := serverFailure(t); co.server && trigger == transcript.TriggerAuto && a != nil {
		if co.recordServerFailure(t, a) {
			h.failures++
		}
		rep.ProviderFailed = a.UUID
	}
	rep.ConsecutiveFailures, rep.Compactions = h.failures, h.compactions

	// Which summarizers may run.
	primary, fallback := c.Summarizer, c.Fallback
	if fallback == nil && !c.DisableFallback {
		fallback = summarize.Extractive{}
	}
	if primary == nil {
		primary, fallback = summarize.Extractive{}, nil
		if trigger == transcript.TriggerAuto {
			t.report.degrade(DegradedFallback, "no Summarizer is configured and the request is at the blocking limit: Extractive writes the summary rather than the request be refused", "")
		}
	}
	if isExtractive(primary) && isExtractive(fallback) {
		fallback = nil
	}
	aggressive := false
	if trigger == transcript.TriggerAuto {
		if h.failedHere && !t.reactive {
			// Preparing the same turn again must not call the summarizer again, nor count a
			// second failure: the next turn tries anew.
			return end(CompactSkipped, "an attempt on this very turn already failed (a failure record names this leaf); the next turn tries again")
		}
		if h.failures >= c.maxFailures() {
			rep.BreakerOpen = true
			why := fmt.Sprintf("circuit breaker open: the summarizer failed %d times in a row", h.failures)
			if fallback == nil {
				t.report.degrade(DegradedBreaker, why+"; no fallback is configured, so auto-compact stops until it succeeds or a manual compaction runs", "")
				return end(CompactSkipped, why+"; auto-compact stops until it succeeds or a manual compaction runs")
			}
			t.report.degrade(DegradedBreaker, why+"; the fallback writes the summaries until it succeeds again or a manual compaction runs", "")
			rep.FallbackReason = why
			primary, fallback = fallback, nil
			rep.Fallback = true
		}
		if h.refills >= c.thrashRuns() {
			// Thrash: the context refills right after each compaction. Compact harder rather
			// than stop: a smaller tail, nothing re-injected, aiming at half the usual target.
			rep.Thrash, rep.Aggressive, aggressive = true, true, true
			t.report.degrade(DegradedAggressive, fmt.Sprintf("thrash: the last %d compactions each came within %d responses of the one before; this one starts at rung %s and aims at half its usual target",
				h.refills, c.thrashTurns(), CompactRungNoRehydrate), "")
		}
	}

	// 1. Pre-compact hooks.
	custom, veto := co.preCompact(ctx, t, st, trigger, custom)
	if veto != "" {
		return end(CompactVetoed, veto)
	}
	if co.started != nil {
		co.started(ctx, CompactEvent{Trigger: trigger, SessionID: t.sessionID, PreTokens: t.report.Pressure.Tokens, Instructions: custom})
	}

	// 2. The progress contract: the floor picks the rung the ladder starts from.
	tail := co.planTail(t, len(t.items))
	pr := t.report.Pressure
	start := tail.startRung(pr.Levels.Blocking, aggressive)
	rep.Floor = tail.floorOf(start)
	// The token floor says nothing of bytes: a body over the size limit is compacted for the
	// media the summary drops, whatever its tokens.
	bodyOver := t.report.BodyBytes > t.maxBody
	switch {
	case start == "":
		floor := min(tail.floor, tail.floorPreviews)
		if tail.bare {
			floor = min(floor, tail.floorBare)
		}
		rep.Floor = floor
		reason := fmt.Sprintf("the irreducible floor %d (%s; %d with the latest tool results as previews) is at or above the blocking limit %d: no compaction can make the request fit",
			floor, tail.floorParts, tail.floorPreviews, pr.Levels.Blocking)
		if manual != nil {
			rep.Outcome, rep.Reason = CompactSkipped, reason
			st.add(Action{Kind: ActionSkipped, Detail: "compaction skipped: " + reason})
			return t, &provider.PromptTooLongError{Tokens: pr.Tokens, Limit: pr.Levels.Blocking, Window: co.window, Reason: "manual compaction skipped: " + reason}
		}
		return end(CompactSkipped, reason)
	case trigger == transcript.TriggerAuto && !bodyOver && tail.floor >= pr.Levels.Threshold && pr.Tokens < pr.Levels.Blocking:
		return end(CompactSkipped, fmt.Sprintf("the irreducible floor %d (%s) is at or above the threshold %d: compacting would not bring the request under it, and it fits as it is", tail.floor, tail.floorParts, pr.Levels.Threshold))
	case trigger == transcript.TriggerAuto && !bodyOver && tail.floor*20 >= pr.Tokens*19 && pr.Tokens < pr.Levels.Blocking:
		return end(CompactSkipped, fmt.Sprintf("the irreducible floor %d (%s) leaves less than 5%% to gain on %d", tail.floor, tail.floorParts, pr.Tokens))
	}
	target := c.target(pr.Levels.Threshold)
	if aggressive {
		target /= 2
	}
	co.invalidateContext(t)
	// Session-start hooks run once a summary is written, once.
	var hooks []attachment
	hooksRan := false
	sessionStart := func() []attachment {
		if !hooksRan {
			hooks, hooksRan = co.sessionStart(ctx, t, trigger), true
		}
		return hooks
	}

	// 3. The summary: session memory when it is fresh and the compacted request fits under
	// the threshold, else the summarizers.
	// Session memory leaves the latest input as it is: it cannot help a lossy rung.
	var sm *summary
	why := ""
	if !start.lossy() {
		sm, why = co.memorySummary(ctx, t, custom)
	}
	if sm != nil {
		done, err := co.install(ctx, t, sm, co.planTail(t, sm.through), start, target, sessionStart(), trigger, rep.PreTokens)
		if err != nil {
			return t, err
		}
		switch {
		case done.post == nil:
			st.add(Action{Kind: ActionSkipped, Detail: "session memory: no kept tail could be installed after it: the summarizer writes the summary instead"})
		case done.under() && !done.step.rung.lossy():
			return co.installed(ctx, t, rep, sm, done, tail), nil
		default:
			st.add(Action{Kind: ActionSkipped, Detail: fmt.Sprintf("session memory would leave the request at %d tokens, not under the compaction's target %d: the summarizer writes the summary instead",
				done.post.report.Pressure.Tokens, target)})
		}
	} else if why != "" {
		st.add(Action{Kind: ActionSkipped, Detail: why})
	}
	sum, failures, errs, err := co.writeSummary(ctx, t, rep, trigger, custom, primary, fallback, h.failures)
	t.appended = append(t.appended, failures...)
	failed = errs
	if err != nil {
		return t, err
	}
	for _, f := range failures {
		if f.CompactFailure.Counts() && trigger == transcript.TriggerAuto {
			rep.ConsecutiveFailures++
		}
	}
	if !rep.BreakerOpen && rep.ConsecutiveFailures >= c.maxFailures() {
		rep.BreakerOpen = true
		t.report.degrade(DegradedBreaker, fmt.Sprintf("circuit breaker open: the summarizer failed %d times in a row; the fallback writes the summaries until it succeeds again or a manual compaction runs", rep.ConsecutiveFailures), "")
	}
	if sum == nil {
		return end(CompactFailed, strings.Join(rep.Failures, "; "))
	}
	if !sum.fallback || trigger == transcript.TriggerManual {
		rep.ConsecutiveFailures, rep.BreakerOpen = 0, false // the summarizer works again
	}
	if sum.fallback {
		if rep.FallbackReason == "" {
			rep.FallbackReason = strings.Join(rep.Failures, "; ")
		}
		t.report.degrade(DegradedFallback, fmt.Sprintf("the summary was written by the fallback %s: %s", sum.by, rep.FallbackReason), "")
	}

	// 4. and 5. Install, verify, shrink.
	done, err := co.install(ctx, t, sum, tail, start, target, sessionStart(), trigger, rep.PreTokens)
	if err != nil {
		return t, err
	}
	return co.installed(ctx, t, rep, sum, done, tail), nil
}

// summary is a summary ready to install.
type summary struct {
	text     string // the summary, without tags
	by       string // who wrote it
	fallback bool
	through  int // the view items it covers: items[:through]
	omitted  int // of those, how many were left out of the summary request to fit
	usage    *transcript.Usage
	cutFrom  int // the calibrated size of a reply cut to the summary's cap; 0: not cut
}

// installation is a compaction's records and the turn built from them.
type installation struct {
	post    *turn
	recs    []transcript.Record
	step    tailStep
	names   []string // what was rehydrated
	notes   []string // what rehydration skipped, and why
	maxBody int      // the body size limit
	target  int      // the pressure figure the compaction aims under
}

// under reports whether the post-compact request is under the compaction's target (the
// auto-compact threshold, or less in aggressive mode), and its body within the size limit.
func (in installation) under() bool {
	return in.post.report.Pressure.Tokens < in.target && !in.bodyOver()
}

// sendable reports whether the post-compact request can be sent: under the blocking limit,
// with room for max_tokens' floor, its body within the size limit.
func (in installation) sendable() bool {
	pr := in.post.report.Pressure
	return pr.Tokens < pr.Levels.Blocking && !in.bodyOver()
}

// bodyOver reports whether the post-compact request's body is over the size limit.
func (in installation) bodyOver() bool { return in.post.report.BodyBytes > in.maxBody }

// install climbs the compaction ladder from start (see [CompactRung]): for each rung it builds
// the compaction's records on a copy of the turn's input and the request from them, and it
// takes the first rung whose request is under target; when none is, the smallest rung that
// keeps the latest input verbatim and can be sent, and only when none can, the first lossy
// rung that can.
func (co *compactor) install(ctx context.Context, t *turn, sum *summary, tail tailPlan, start CompactRung, target int, hooks []attachment, trigger string, pre int) (installation, error) {
	var done, fits installation
	steps := tail.ladder(start, len(t.items))
	if n := len(steps); n == 0 || steps[n-1].cut != len(t.items) {
		// The last resort keeps no tail, so nothing needs relinking: only when no tail could
		// be installed.
		steps = append(steps, tailStep{rung: CompactRungSummaryOnly, cut: len(t.items), resort: true})
	}
	for _, step := range steps {
		if step.rung.lossy() && fits.post != nil || step.resort && done.post != nil {
			break // something verbatim can be sent; or the last resort, and a tail was installed
		}
		atts, notes := co.rehydrate(ctx, t, step.cut, step.rehydrate)
		recs, from := co.compactionRecords(t, sum, step.cut, slices.Concat(atts, hooks), trigger, pre)
		if step.clear {
			if r := co.clearRecord(t, step.cut, tail.latest); r != nil {
				recs = append(recs, *r)
			}
		}
		if step.previews {
			r, err := co.previewRecord(t, tail.latest)
			if err != nil {
				return done, err
			}
			if r != nil {
				recs = append(recs, *r)
			}
		}
		in := *t.in
		if in.Leaf != "" {
			in.Leaf = lastChainRecord(recs)
		}
		// From the new cut on, as a read does: the compaction costs the tail, not the records.
		tail, ok := transcript.CutTail(t.in.Records, recs, from, in.Leaf)
		if !ok {
			tail = slices.Concat(t.in.Records, recs)
		}
		in.Records = tail
		post, err := co.build(ctx, &in)
		if err != nil {
			return done, err
		}
		if missing := missingKept(t.items[step.cut:], post.items); missing != "" {
			// A kept record the relinked chain does not reach: never report a tail the
			// request does not hold; try the next, smaller one.
			notes = append(notes, "kept tail from item "+fmt.Sprint(step.cut)+" not installed: the relinked chain misses record "+missing)
			done.notes = append(done.notes, notes...)
			continue
		}
		step.records, step.tokens = co.keptSize(t, step.cut)
		done = installation{post: post, recs: recs, step: step, names: rehydratedNames(atts, hooks), notes: append(done.notes, notes...), maxBody: post.maxBody, target: target}
		switch {
		case done.under():
			return done, nil
		case step.rung.lossy() && done.sendable():
			return done, nil
		case !step.rung.lossy() && done.sendable():
			fits = done // the smallest so far that can be sent
		}
	}
	if fits.post != nil {
		fits.notes = done.notes
		return fits, nil
	}
	return done, nil
}

// missingKept returns the uuid of the first record of kept that the post-compact view does not
// hold, or "".
func missingKept(kept, post []item) string {
	in := make(map[string]bool, len(post))
	for i := range post {
		in[post[i].uuid] = true
	}
	for i := range kept {
		if kept[i].rec != nil && !in[kept[i].uuid] {
			return kept[i].uuid
		}
	}
	return ""
}

// installed completes the Report and the records of an installed compaction and runs the
// post-compact hooks; it returns the turn to send.
func (co *compactor) installed(ctx context.Context, t *turn, rep *CompactReport, sum *summary, done installation, tail tailPlan) *turn {
	post, recs := done.post, done.recs
	rep.Outcome = CompactCompacted
	rep.PostTokens = post.report.Pressure.Tokens
	rep.Summarizer, rep.Fallback, rep.SummaryUsage = sum.by, sum.fallback, sum.usage
	rep.Summarized, rep.Omitted = sum.through, sum.omitted
	rep.Kept, rep.KeptTokens = done.step.records, done.step.tokens
	rep.Rehydrated = done.names
	rep.BoundaryUUID, rep.SummaryUUID = recs[0].UUID, recs[1].UUID
	rep.Rung = done.step.rung
	m := recs[0].CompactMetadata
	m.PostTokens, m.Rung, m.Aggressive = rep.PostTokens, string(rep.Rung), rep.Aggressive
	if sum.fallback {
		m.FallbackReason = rep.FallbackReason
	}
	rep.Reason = fmt.Sprintf("summary by %s of %d messages, %d records kept verbatim (%d tokens), %d attachments, rung %s; %d → %d tokens",
		sum.by, sum.through, rep.Kept, rep.KeptTokens, len(rep.Rehydrated), rep.Rung, rep.PreTokens, rep.PostTokens)
	if b := keptBridges(t.items[done.step.cut:], t.report.ChainProblems); b != "" {
		rep.Reason += "; the kept tail is bridged over " + b
	}
	if pr := post.report.Pressure; done.bodyOver() {
		rep.Reason += fmt.Sprintf("; the body is still %d bytes, over the limit %d: what the compaction keeps is that large", post.report.BodyBytes, done.maxBody)
	} else if pr.Tokens >= pr.Levels.Threshold {
		rep.Reason += fmt.Sprintf("; still at or above the threshold %d: the irreducible floor is %d (%s)",
			pr.Levels.Threshold, tail.floorOf(rep.Rung), tail.floorParts)
	}
	if rep.Rung != CompactRungTail {
		t.report.degrade(DegradedRung, fmt.Sprintf("the compaction went down its ladder to rung %s (%s) to bring the request from %d to %d tokens",
			rep.Rung, rungText(rep.Rung), rep.PreTokens, rep.PostTokens), recs[0].UUID)
	}
	post.report.Compaction = rep
	// The post-compact view may hold the new tail alone: the records are the caller's.
	post.report.Records, post.report.Damage = t.report.Records+len(recs), t.report.Damage
	post.report.Degradations = slices.Concat(t.report.Degradations, post.report.Degradations)
	// What the chain the summary was made from met stays reported.
	post.report.ChainProblems = unionProblems(t.report.ChainProblems, post.report.ChainProblems)
	post.report.Replays = union(t.report.Replays, post.report.Replays)
	cs := t.report.stage("compact")
	for _, n := range done.notes {
		cs.add(Action{Kind: ActionSkipped, Detail: "rehydration: " + n})
	}
	cs.add(Action{Kind: ActionCompacted, UUID: recs[0].UUID, Record: recs[0].UUID, Tokens: rep.PostTokens - rep.PreTokens, Detail: rep.Reason})
	post.report.Stages = insertStage(post.report.Stages, *cs, "collapse")
	// The pre-compact view's own decisions are dropped: the request is built from the
	// compacted records, and a resume must build the same one. Failed attempts stay.
	post.appended = slices.Concat(failureRecords(t.appended), recs, post.appended)
	co.postCompact(ctx, post, rep, sum)
	return post
}

// keptSize returns the number of records and the calibrated size of the tail items[cut:].
func (co *compactor) keptSize(t *turn, cut int) (int, int) {
	n, tokens := 0, 0
	for i := cut; i < len(t.items); i++ {
		if t.items[i].rec != nil {
			n++
		}
		tokens += co.counter.itemTokens(&t.items[i])
	}
	return n, calibration{ratio: t.report.Pressure.Ratio}.scale(tokens)
}

// failureRecords returns the failure records and collapse commits of recs: the records of a
// turn's attempts that a compaction built on it keeps (a fold's commit is in the records the
// compaction's view was built from).
func failureRecords(recs []transcript.Record) []transcript.Record {
	var out []transcript.Record
	for _, r := range recs {
		if r.Subtype == transcript.SubtypeCompactFailure || r.Subtype == transcript.SubtypeCollapseCommit {
			out = append(out, r)
		}
	}
	return out
}

// insertStage returns stages with s inserted after the stage named after.
func insertStage(stages []StageReport, s StageReport, after string) []StageReport {
	for i := range stages {
		if stages[i].Stage == after {
			return slices.Insert(stages, i+1, s)
		}
	}
	return append(stages, s)
}

// lastChainRecord returns the uuid of the last record of recs that is a user or assistant
// record: the new leaf of the chain.
func lastChainRecord(recs []transcript.Record) string {
	for i := len(recs) - 1; i >= 0; i-- {
		if recs[i].IsConversation() {
			return recs[i].UUID
		}
	}
	return ""
}

// compactionRecords builds the records a compaction appends: boundary, summary, then the
// rehydration and hook records chained after the kept tail (or the summary). from is the
// position in the turn's records of the kept head, the cut a read from the transcript's new
// active tail starts at; len(t.in.Records) when nothing is kept.
func (co *compactor) compactionRecords(t *turn, sum *summary, cut int, atts []attachment, trigger string, pre int) (recs []transcript.Record, from int) {
	leaf := t.chain.Leaf
	stamp := transcript.Timestamp(t.now)
	cwd := transcript.LastCwd(t.in.Records)
	kept := t.items[cut:]
	head := keptHead(t, kept)
	h := sha256.Sum256([]byte(sum.text))
	prev := ""
	if t.chain.Boundary != nil {
		prev = t.chain.Boundary.UUID
	}
	// The same transcript compacted the same way gives the same records, whether it was read
	// whole or from a cut; another transcript (one more record, another compaction before)
	// gives others.
	key := strings.Join([]string{leaf.UUID, trigger, hex.EncodeToString(h[:8]), head, prev, readPoint(t.in.Records)}, "\x00")
	b := transcript.Record{
		Type:              transcript.TypeSystem,
		Subtype:           transcript.SubtypeCompactBoundary,
		UUID:              transcript.ContentUUID("compact_boundary", key),
		LogicalParentUUID: leaf.UUID,
		IsSidechain:       leaf.IsSidechain,
		SessionID:         t.sessionID,
		Timestamp:         stamp,
		Content:           mustJSON("Conversation compacted"),
		Level:             "info",
		Cwd:               cwd,
		CompactMetadata: &transcript.CompactMetadata{
			Trigger:            trigger,
			PreTokens:          pre,
			Summarizer:         sum.by,
			Fallback:           sum.fallback,
			MessagesSummarized: sum.through,
		},
	}
	s := transcript.Record{
		Type:                      transcript.TypeUser,
		UUID:                      transcript.ContentUUID("compact_summary", b.UUID),
		ParentUUID:                b.UUID,
		IsSidechain:               leaf.IsSidechain,
		IsCompactSummary:          true,
		IsVisibleInTranscriptOnly: true,
		SessionID:                 t.sessionID,
		Timestamp:                 stamp,
		Cwd:                       cwd,
		Message: &transcript.Message{Role: transcript.RoleUser, StringContent: true,
			Content: []transcript.Block{&transcript.Text{Text: summaryMessageAt(sum.text, head != "", trigger, t.in.TranscriptPath)}}},
	}
	// The records before the cut: those before the kept head, or, when nothing is kept, all
	// of them and the turn's failed attempts, written before the boundary.
	records, end := t.in.Records, -1
	from = len(t.in.Records)
	for k, r := range t.chain.Records {
		if head != "" && r.UUID == head {
			from = t.chain.Index(k)
			end = from
			break
		}
	}
	if end < 0 { // not copied otherwise: a long session holds many records
		records = slices.Concat(t.in.Records, failureRecords(t.appended))
		end = len(records)
	}
	if d, err := transcript.CutHistory(records, end, leaf); err == nil {
		b.History = d
	}
	parent := s.UUID
	if head != "" {
		b.CompactMetadata.PreservedSegment = &transcript.PreservedSegment{HeadUUID: head, AnchorUUID: s.UUID, TailUUID: leaf.UUID}
		parent = leaf.UUID
	}
	return append([]transcript.Record{b, s}, attachmentRecords(t, atts, "rehydration", b.UUID, parent, leaf.IsSidechain)...), from
}

// keptHead returns the uuid of the first record of the kept tail along the leaf's parentUuid
// path — the preserved segment's head — or "" when nothing is kept. Walking up from the leaf,
// across the bridges the chain made over unreadable records and dangling parents, it is the
// last record met whose file position is at or after the first kept item's.
func keptHead(t *turn, kept []item) string {
	first := -1
	for i := range kept {
		if kept[i].rec != nil && kept[i].pos >= 0 && (first < 0 || kept[i].pos < first) {
			first = kept[i].pos
		}
	}
	if first < 0 {
		return ""
	}
	pos := map[string]int{}
	for k, r := range t.chain.Records {
		pos[r.UUID] = t.chain.Index(k)
	}
	head := ""
	byUUID := map[string]*transcript.Record{}
	for _, r := range t.chain.Records {
		byUUID[r.UUID] = r
	}
	var bridges map[string]string
	for _, p := range t.chain.Problems {
		if p.Bridge != "" {
			if bridges == nil {
				bridges = map[string]string{}
			}
			bridges[p.UUID] = p.Bridge
		}
	}
	for r := t.chain.Leaf; r != nil; {
		at, ok := pos[r.UUID]
		if !ok || at < first {
			break
		}
		head = r.UUID
		if r.IsCompactSummary || r.IsCompactBoundary() {
			break // the walk reached the previous compaction's install
		}
		next := byUUID[r.ParentUUID]
		if next == nil {
			next = byUUID[bridges[r.UUID]] // the chain bridged a break here (see transcript.ChainProblem)
		}
		r = next
	}
	return head
}

// failureRecord returns the record of a failed compaction attempt.
func (co *compactor) failureRecord(t *turn, f transcript.CompactFailure, n int) transcript.Record {
	key := fmt.Sprintf("%s\x00%s\x00%d\x00%s\x00%s", f.LeafUUID, f.Trigger, n, f.Summarizer, readPoint(t.in.Records))
	r := t.newDecision(transcript.SubtypeCompactFailure, key, "Compaction failed: "+f.Reason)
	r.IsSidechain = t.chain.Leaf != nil && t.chain.Leaf.IsSidechain
	r.CompactFailure = &f
	return r
}

// invalidateContext drops memoized base context after a compaction, so that the first request
// after it reads memory files, the date and the repository state again.
func (co *compactor) invalidateContext(t *turn) {
	c := cmp.Or(t.in.Context, &co.context)
	for _, cp := range []ContextProvider{c.System, c.User} {
		if inv, ok := cp.(interface{ Invalidate() }); ok {
			inv.Invalidate()
		}
	}
}

// union returns a followed by the elements of b that a does not hold.
func union[T comparable](a, b []T) []T {
	out := slices.Clip(a)
	for _, x := range b {
		if !slices.Contains(a, x) {
			out = append(out, x)
		}
	}
	return out
}
