package agentctx

import (
	"fmt"
	"io"
	"strings"

	"github.com/agentctx/agentctx/transcript"
)

// ActionKind names what a stage did to one item of the view.
type ActionKind string

// The actions stages report.
const (
	ActionReplaced  ActionKind = "replaced"  // budget: result stored externally, preview shown
	ActionReapplied ActionKind = "reapplied" // a frozen decision applied again
	ActionKept      ActionKind = "kept"      // budget: no longer reported (kept results need no record)
	ActionExempt    ActionKind = "exempt"    // budget: a result of an exempt tool kept, with its size
	ActionSnipped   ActionKind = "snipped"   // snip: record removed from the view
	ActionCleared   ActionKind = "cleared"   // microcompact: result content cleared
	ActionMarked    ActionKind = "marked"    // cached microcompact: cache_reference + cache_edits
	ActionCollapsed ActionKind = "collapsed" // collapse: span replaced by its summary
	ActionFolded    ActionKind = "folded"    // collapse: the producer committed a new span
	ActionInjected  ActionKind = "injected"  // base context added
	ActionRepaired  ActionKind = "repaired"  // normalize: a provider-contract repair
	ActionDropped   ActionKind = "dropped"   // normalize: a block or message removed
	ActionMarker    ActionKind = "marker"    // cache: a cache_control marker placed
	// ActionSkipped: a decision record was not applied (a snip refused because it would
	// remove a protected record, a collapse commit whose span is not in the view).
	ActionSkipped ActionKind = "skipped"
	// ActionExpanded: a snip removal or a collapse span was widened so that it never splits a
	// tool_use from its tool_result (or a response from its own blocks).
	ActionExpanded ActionKind = "expanded"
	// ActionTagged: snip: user messages tagged with "[id:…]" so a snip tool can name them.
	ActionTagged ActionKind = "tagged"
	// ActionReminded: snip: a context_efficiency reminder was put after the latest input,
	// asking the model to snip what it no longer needs (see [SnipConfig.ReminderTokens]).
	ActionReminded ActionKind = "reminded"
	// ActionCompacted: compact: the history before the kept tail was replaced by a summary.
	ActionCompacted ActionKind = "compacted"
)

// Action is one thing a stage did. UUID names the record, ToolUseID the tool call, where they
// apply; Record is the uuid of the decision record the action carries out, whether it was
// read from the transcript or made this turn (then it is in [Result.Append]); empty for
// actions that follow from the view alone, such as normalize's repairs. Tokens is the change
// in counted tokens (negative when tokens were freed).
type Action struct {
	Kind      ActionKind
	UUID      string
	ToolUseID string
	Record    string
	Detail    string
	Tokens    int
}

// StageReport lists what one stage did. TokensFreed is the counted tokens the stage removed
// from the view (what the auto-compact check subtracts).
type StageReport struct {
	Stage       string
	Actions     []Action
	TokensFreed int
}

// Report is what [Pipeline.Prepare] did this turn, stage by stage, and the figures of the
// request it built.
type Report struct {
	Model                string
	ContextWindow        int
	MaxTokens            int
	AutoCompactThreshold int
	// Records is the number of transcript records; ChainRecords those on the active chain.
	Records, ChainRecords int
	// Messages is the number of request messages.
	Messages int
	// InputTokens is the counted size of the request (system, tools and messages).
	InputTokens int
	// AnchoredTokens is the request's size anchored on the provider's last reported usage:
	// Pressure.Anchor + Pressure.Added − Pressure.Freed; 0 without an anchor.
	// Tool results the budget replaced count by an estimate (bytes/3) in Pressure.Freed:
	// they are not sent, and never tokenized.
	AnchoredTokens int
	// OverThreshold reports that the pressure figure (Pressure.Tokens) is at or above
	// AutoCompactThreshold: auto-compact is due.
	OverThreshold bool
	// BodyBytes is the size of the request's JSON body when an upper bound of it reached the
	// body limit ([PressureConfig.MaxBodyBytes]) and it was measured; 0 when the body is surely
	// under the limit (a typical turn never encodes its request to find out).
	BodyBytes int
	// CacheDeletedTokens is what the tool results the request's cache_edits delete from the
	// provider's cache count (see [MicrocompactConfig.Cached]): sent, but not held by the
	// provider, so InputTokens and the pressure figure leave them out.
	CacheDeletedTokens int
	// Pressure is the request's pressure figure, its parts and its level.
	Pressure Pressure
	// ProviderCompaction names the record whose provider compaction (an Anthropic
	// compaction block, an OpenAI compaction item) the view starts at, or is "": the
	// provider summarized what came before it, which the request leaves out.
	ProviderCompaction string
	// Compaction describes the compaction this turn attempted (auto or manual), or is nil.
	Compaction *CompactReport
	// CacheCosts lists, in the order they were weighed, the decisions of this turn that the
	// state of the provider's cached prefix made or deferred: a compaction or fold made early
	// because the prefix was cold, a fold or clearing under the threshold weighed against
	// what busting a warm prefix costs (see [CacheConfig.ReadPrice]).
	CacheCosts []CacheCost
	// ThinkingUnavailable reports that thinking is enabled but this request cannot carry it:
	// the assistant turn in flight does not open with replayable thinking (contract 4.2), or
	// the window leaves max_tokens no room for a budget of at least 1,024 tokens (4.8). The
	// turn's thinking blocks were dropped and Request.Thinking is nil.
	ThinkingUnavailable bool
	// Damage lists what reading the transcript could not take as written, in file order:
	// lines that were no record, and fields that could not be read, whose records the view
	// holds without them (see [transcript.Record.Damage]; records not read by a [transcript.Decoder] carry none).
	// The errors are the records' own values.
	Damage []*transcript.LineError
	// ChainProblems lists the breaks in the parentUuid links that rebuilding the conversation
	// met ([transcript.Chain.Problems]): unreadable records and dangling parents bridged in file
	// order, and cycles, each with its line and the records it cuts off.
	ChainProblems []transcript.ChainProblem
	// Replays lists the records left out of the view because they repeat records it holds
	// ([transcript.Chain.Replays]).
	Replays []transcript.Replay
	// Stages lists what each stage did, in pipeline order.
	Stages []StageReport
	// Recovery says what [Pipeline.Recover] did with the provider's error; nil for Prepare.
	Recovery *RecoveryReport
	// Degradations lists what this turn did short of the configured policy so that the
	// session could go on: nothing degrades in silence. Each is also logged through
	// [Config.Logger] and, where a record carries it, named by that record.
	Degradations []Degradation
}

// DegradationKind names a way a turn did less than the configured policy asks for.
type DegradationKind string

// The kinds of [Degradation].
const (
	// DegradedFallback: the fallback summarizer wrote the summary (the primary one failed,
	// was not called, or its circuit breaker is open).
	DegradedFallback DegradationKind = "fallback_summary"
	// DegradedBreaker: the circuit breaker is open: the primary summarizer is not called.
	DegradedBreaker DegradationKind = "breaker_open"
	// DegradedAggressive: thrash made the compaction start lower down its ladder.
	DegradedAggressive DegradationKind = "aggressive"
	// DegradedNotCalled: the summary request could not be sized to fit the window, so the
	// summarizer was not called (this does not count against its circuit breaker).
	DegradedNotCalled DegradationKind = "summarizer_not_called"
	// DegradedRung: the compaction went past its configured kept tail ([CompactReport.Rung]).
	DegradedRung DegradationKind = "compact_rung"
	// DegradedSummaryCut: a summary over its cap was cut to it.
	DegradedSummaryCut DegradationKind = "summary_cut"
	// DegradedExempt: a result of a tool exempt from the budget was replaced by its preview.
	DegradedExempt DegradationKind = "exempt_replaced"
)

// Degradation is one thing a turn did short of the configured policy.
type Degradation struct {
	Kind DegradationKind
	// Detail says what happened and why, in one line.
	Detail string
	// Record names the record that carries it, when there is one.
	Record string
}

// degrade adds a degradation to the report.
func (r *Report) degrade(kind DegradationKind, detail, record string) {
	r.Degradations = append(r.Degradations, Degradation{Kind: kind, Detail: detail, Record: record})
}

// Stage returns the report of the named stage, or nil.
func (r *Report) Stage(name string) *StageReport {
	for i := range r.Stages {
		if r.Stages[i].Stage == name {
			return &r.Stages[i]
		}
	}
	return nil
}

// stage returns the named stage's report, creating it.
func (r *Report) stage(name string) *StageReport {
	if s := r.Stage(name); s != nil {
		return s
	}
	r.Stages = append(r.Stages, StageReport{Stage: name})
	return &r.Stages[len(r.Stages)-1]
}

func (s *StageReport) add(a Action) {
	s.Actions = append(s.Actions, a)
	if a.Tokens < 0 {
		s.TokensFreed -= a.Tokens
	}
}

// addAll adds the actions as, one by one, add would.
func (s *StageReport) addAll(as []Action) {
	for _, a := range as {
		s.add(a)
	}
}

// WriteText writes the report for humans: a header, then one line per stage and one indented
// line per action. The format is stable; golden files use it.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "model %s window %d max_tokens %d threshold %d\n", r.Model, r.ContextWindow, r.MaxTokens, r.AutoCompactThreshold)
	fmt.Fprintf(&b, "records %d chain %d messages %d input_tokens %d anchored %d over_threshold %t\n",
		r.Records, r.ChainRecords, r.Messages, r.InputTokens, r.AnchoredTokens, r.OverThreshold)
	pr := &r.Pressure
	fmt.Fprintf(&b, "pressure %d level %s remaining %d (warning %d threshold %d blocking %d) ratio %.3f %s\n",
		pr.Tokens, pr.Level, pr.Remaining, pr.Levels.Warning, pr.Levels.Threshold, pr.Levels.Blocking, pr.Ratio, pr.RatioSource)
	if pr.Why != "" {
		b.WriteString("  " + pr.Why + "\n")
	}
	if r.ProviderCompaction != "" {
		fmt.Fprintf(&b, "provider compaction in record %s: the view starts at it\n", r.ProviderCompaction)
	}
	if r.CacheDeletedTokens > 0 {
		fmt.Fprintf(&b, "cache_edits delete %d tokens (not in input_tokens)\n", r.CacheDeletedTokens)
	}
	if r.BodyBytes > 0 {
		fmt.Fprintf(&b, "body %d bytes\n", r.BodyBytes)
	}
	if rc := r.Recovery; rc != nil {
		rung := rc.Rung
		if rung == "" {
			rung = "none"
		}
		fmt.Fprintf(&b, "recovery %s %s (class %s): %s\n", rung, rc.Outcome, rc.Class, rc.Reason)
	}
	if c := r.Compaction; c != nil {
		fmt.Fprintf(&b, "compaction %s (%s): %s\n", c.Outcome, c.Trigger, c.Reason)
		fmt.Fprintf(&b, "  breaker %d failures open %t, %d earlier compactions, thrash %t\n", c.ConsecutiveFailures, c.BreakerOpen, c.Compactions, c.Thrash)
	}
	for _, d := range r.Degradations {
		fmt.Fprintf(&b, "degraded %s: %s", d.Kind, d.Detail)
		if d.Record != "" {
			b.WriteString(" (record " + d.Record + ")")
		}
		b.WriteByte('\n')
	}
	if r.ThinkingUnavailable {
		b.WriteString("thinking unavailable: the request is sent with thinking disabled\n")
	}
	if len(r.Damage) > 0 {
		fmt.Fprintf(&b, "damage: %d unreadable lines or fields\n", len(r.Damage))
		for _, d := range r.Damage {
			b.WriteString("  " + damageText(d) + "\n")
		}
	}
	if len(r.ChainProblems) > 0 {
		fmt.Fprintf(&b, "chain: %d broken parent links\n", len(r.ChainProblems))
		for _, p := range r.ChainProblems {
			b.WriteString("  " + p.String() + "\n")
		}
	}
	if len(r.Replays) > 0 {
		fmt.Fprintf(&b, "replays: %d records left out as repeats\n", len(r.Replays))
		for _, rp := range r.Replays {
			b.WriteString("  " + rp.String() + "\n")
		}
	}
	for _, s := range r.Stages {
		fmt.Fprintf(&b, "%s: %d actions, %d tokens freed\n", s.Stage, len(s.Actions), s.TokensFreed)
		for _, a := range s.Actions {
			b.WriteString("  " + string(a.Kind))
			if a.UUID != "" {
				b.WriteString(" uuid=" + a.UUID)
			}
			if a.ToolUseID != "" {
				b.WriteString(" tool_use_id=" + a.ToolUseID)
			}
			if a.Record != "" {
				b.WriteString(" record=" + a.Record)
			}
			if a.Tokens != 0 {
				fmt.Fprintf(&b, " tokens=%d", a.Tokens)
			}
			if a.Detail != "" {
				b.WriteString(": " + a.Detail)
			}
			b.WriteByte('\n')
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// String returns the text form of [Report.WriteText].
func (r *Report) String() string {
	var b strings.Builder
	_ = r.WriteText(&b)
	return b.String()
}

// damageText describes one damaged line or field for a report: the error, and what became of
// the line.
func damageText(le *transcript.LineError) string {
	if le.Field != "" {
		return le.Error() + " (the record is kept without it)"
	}
	return le.Error() + " (skipped)"
}
