package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/provider"
	"github.com/agentctx/agentctx/transcript"
)

// inspection is what inspect shows; --json prints it as is.
type inspection struct {
	File string `json:"file"`
	// Format is the file's format when it is not Claude Code's ("codex"), and Unmapped what
	// of it the model's view cannot hold (kept in the records, never sent).
	Format   string   `json:"format,omitempty"`
	Unmapped []string `json:"unmapped,omitempty"`
	// Tail says where the read started when only the file's active tail was decoded.
	Tail          *tailInfo      `json:"tail,omitempty"`
	Records       int            `json:"records"`
	RecordsByType map[string]int `json:"recordsByType"`
	Problems      []string       `json:"problems,omitempty"`
	Dropped       []string       `json:"droppedFields,omitempty"`
	Torn          string         `json:"torn,omitempty"`
	Chain         chainInfo      `json:"chain"`
	Model         modelInfo      `json:"model"`
	Largest       []largeRecord  `json:"largest"`
	Pressure      pressureInfo   `json:"pressure"`
	Compaction    compactionInfo `json:"compaction"`
	Request       requestInfo    `json:"nextRequest"`
	Stages        []stageInfo    `json:"stages"`
	// Clock is the time of the next turn, and whether it is the wall clock (no --now).
	Clock     string `json:"clock"`
	WallClock bool   `json:"wallClock"`
	// GivenTools is the number of tool definitions --tools gave.
	GivenTools int `json:"givenTools"`
}

// tailInfo is where a read from the active tail started (transcript.Tail).
type tailInfo struct {
	Line    int   `json:"line"`
	Offset  int64 `json:"offset"`
	Size    int64 `json:"size"`
	History int   `json:"historyRecords"`
	// Digest is true when the history came from the latest boundary's record and no line
	// before the tail was read; DigestProblem says why a history there could not be used.
	Digest        bool   `json:"fromBoundary,omitempty"`
	DigestProblem string `json:"boundaryHistoryProblem,omitempty"`
}

// pressureInfo is the next request's pressure figure and its parts.
type pressureInfo struct {
	Tokens     int    `json:"tokens"`
	Anchored   int    `json:"anchored"` // Report.AnchoredTokens
	Level      string `json:"level"`
	Remaining  int    `json:"remainingBeforeCompact"`
	Warning    int    `json:"warning"`
	Error      int    `json:"error"`
	Threshold  int    `json:"threshold"`
	Blocking   int    `json:"blocking"`
	Counted    int    `json:"counted"`
	Anchor     int    `json:"anchor"`
	AnchorUUID string `json:"anchorUuid,omitempty"`
	// AnchorUsage is the usage the anchor record reports, when its parts add up to Anchor.
	AnchorUsage *transcript.Usage `json:"anchorUsage,omitempty"`
	Added       int               `json:"added"`
	Freed       int               `json:"freed"`
	Ratio       float64           `json:"ratio"`
	RatioSource string            `json:"ratioSource"`
	Why         string            `json:"why"`
	// Differ says, in two sentences, why the anchored and counted figures differ.
	Differ []string `json:"countedVsAnchored"`
}

// compactionInfo is the session's compaction state and what the next turn's compaction did.
type compactionInfo struct {
	Compactions         int                     `json:"compactions"`
	Last                *boundaryInfo           `json:"last,omitempty"`
	ConsecutiveFailures int                     `json:"consecutiveFailures"`
	BreakerOpen         bool                    `json:"breakerOpen"`
	Refills             int                     `json:"refills"`
	Thrash              bool                    `json:"thrash"`
	Next                *agentctx.CompactReport `json:"nextTurn,omitempty"`
	// Degraded lists what the next turn would do short of the policy (Report.Degradations).
	Degraded []agentctx.Degradation `json:"degraded,omitempty"`
}

type chainInfo struct {
	Records    int            `json:"records"`
	ByType     map[string]int `json:"byType"`
	Leaf       string         `json:"leaf,omitempty"`
	Boundary   *boundaryInfo  `json:"boundary,omitempty"`
	Unanswered []string       `json:"unansweredToolUses,omitempty"`
	// Breaks are the broken parentUuid links the chain met, Replays the records it left out
	// as repeats; Notes describe each on one line.
	Breaks  []transcript.ChainProblem `json:"breaks,omitempty"`
	Replays []transcript.Replay       `json:"replays,omitempty"`
	Notes   []string                  `json:"notes,omitempty"`
}

type boundaryInfo struct {
	UUID              string `json:"uuid"`
	LogicalParentUUID string `json:"logicalParentUuid,omitempty"`
	Trigger           string `json:"trigger,omitempty"`
	PreTokens         int    `json:"preTokens,omitempty"`
	PostTokens        int    `json:"postTokens,omitempty"`
	Summarizer        string `json:"summarizer,omitempty"`
	KeptTail          bool   `json:"keptTail,omitempty"`
	// Rung, Aggressive and FallbackReason say how far the compaction had to degrade.
	Rung           string `json:"rung,omitempty"`
	Aggressive     bool   `json:"aggressive,omitempty"`
	FallbackReason string `json:"fallbackReason,omitempty"`
}

func boundaryOf(b *transcript.Record) *boundaryInfo {
	if b == nil {
		return nil
	}
	bi := &boundaryInfo{UUID: b.UUID, LogicalParentUUID: b.LogicalParentUUID}
	if m := b.CompactMetadata; m != nil {
		bi.Trigger, bi.PreTokens, bi.PostTokens, bi.Summarizer = m.Trigger, m.PreTokens, m.PostTokens, m.Summarizer
		bi.KeptTail = m.PreservedSegment != nil
		bi.Rung, bi.Aggressive = m.Rung, m.Aggressive
		if m.Fallback {
			bi.FallbackReason = cmp.Or(m.FallbackReason, "the primary summarizer failed")
		}
	}
	return bi
}

type modelInfo struct {
	Name                 string `json:"name"`
	Source               string `json:"source"`
	ContextWindow        int    `json:"contextWindow"`
	AutoCompactThreshold int    `json:"autoCompactThreshold"`
}

type largeRecord struct {
	UUID    string `json:"uuid"`
	Line    int    `json:"line"`
	Type    string `json:"type"`
	Content string `json:"content"`
	Tokens  int    `json:"tokens"`
}

type requestInfo struct {
	Messages      int    `json:"messages"`
	Tools         int    `json:"tools"` // tool definitions
	InputTokens   int    `json:"inputTokens"`
	MaxTokens     int    `json:"maxTokens"`
	OverThreshold bool   `json:"overThreshold"`
	Appends       int    `json:"decisionRecords"`
	Error         string `json:"error,omitempty"` // the request cannot be sent: why
	// ByCategory is the request by part: the parts sum to InputTokens, and with FreeSpace and
	// AutoCompactBuffer to the window (when the request fits in it).
	ByCategory categoryInfo `json:"byCategory"`
}

// categoryInfo is [agentctx.RequestBreakdown] for printing.
type categoryInfo struct {
	SystemPrompt       int            `json:"systemPrompt"`
	ToolDefinitions    int            `json:"toolDefinitions"`
	BaseContext        int            `json:"baseContext"`
	Messages           int            `json:"messages"`
	MessagesByCategory map[string]int `json:"messagesByCategory"`
	CacheDeleted       int            `json:"cacheDeleted,omitempty"` // sent, deleted by cache_edits, in no other figure
	FreeSpace          int            `json:"freeSpace"`
	AutoCompactBuffer  int            `json:"autoCompactBuffer"`
}

// messageCategories are the categories of a request's messages, in display order.
func messageCategories() []agentctx.Category {
	return slices.DeleteFunc(agentctx.Categories(), func(c agentctx.Category) bool { return c == agentctx.CategorySystem })
}

type stageInfo struct {
	Stage       string            `json:"stage"`
	TokensFreed int               `json:"tokensFreed"`
	Actions     map[string]int    `json:"actions"`
	Details     []agentctx.Action `json:"details,omitempty"`
}

// inspect prints what the model sees of a session.
func (a *app) inspect(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var asJSON *bool
	s, err := a.open(ctx, "inspect", args, func(fs *flag.FlagSet) {
		asJSON = fs.Bool("json", false, "print the inspection as JSON instead of text")
	})
	if err != nil {
		return err
	}
	defer s.close()
	in, err := s.inspect(ctx)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(in)
	}
	return in.writeText(stdout)
}

func (s *session) inspect(ctx context.Context) (*inspection, error) {
	tr := s.tr
	in := &inspection{File: s.addr.String(), Records: len(tr.Records), RecordsByType: map[string]int{}}
	for _, r := range tr.Records {
		in.RecordsByType[recordKind(&r)]++
	}
	if tr.Format != "" && tr.Format != transcript.FormatClaudeCode {
		in.Format = string(tr.Format)
	}
	if t := tr.Tail; t != nil {
		in.Tail = &tailInfo{Line: t.Line, Offset: t.Offset, Size: t.Size, History: t.History, Digest: t.Digest, DigestProblem: t.DigestProblem}
	}
	for _, u := range tr.Unmapped {
		in.Unmapped = append(in.Unmapped, u.Error())
	}
	for _, p := range tr.Problems {
		in.Problems = append(in.Problems, p.Error())
	}
	for _, d := range tr.Dropped {
		in.Dropped = append(in.Dropped, d.Error())
	}
	if tr.Torn != nil {
		in.Torn = tr.Torn.Error()
	}
	chain, err := transcript.BuildChain(tr.Records, transcript.ChainOptions{})
	if err != nil {
		return nil, err
	}
	in.Chain = chainInfo{Records: len(chain.Records), ByType: map[string]int{}, Unanswered: chain.Unanswered,
		Breaks: chain.Problems, Replays: chain.Replays}
	for _, p := range chain.Problems {
		in.Chain.Notes = append(in.Chain.Notes, p.String())
	}
	for _, r := range chain.Replays {
		in.Chain.Notes = append(in.Chain.Notes, r.String())
	}
	if chain.Leaf != nil {
		in.Chain.Leaf = chain.Leaf.UUID
	}
	for _, r := range chain.Records {
		in.Chain.ByType[recordKind(r)]++
	}
	in.Chain.Boundary = boundaryOf(chain.Boundary)
	st, err := s.pipeline.CompactState(tr.Records, "")
	if err != nil {
		return nil, err
	}
	in.Compaction = compactionInfo{Compactions: st.Compactions, Last: boundaryOf(st.Last), ConsecutiveFailures: st.ConsecutiveFailures,
		BreakerOpen: st.BreakerOpen, Refills: st.Refills, Thrash: st.Thrash}
	in.Clock, in.WallClock, in.GivenTools = s.now.Format(time.RFC3339), s.wallNow, len(s.input.Tools)

	var large []largeRecord
	for i, r := range chain.Records {
		if n := s.counter.Record(r); n > 0 {
			large = append(large, largeRecord{UUID: r.UUID, Line: tr.Lines[chain.Index(i)], Type: string(r.Type), Content: describe(r), Tokens: n})
		}
	}
	slices.SortStableFunc(large, func(a, b largeRecord) int { return cmp.Compare(b.Tokens, a.Tokens) })
	in.Largest = large[:min(10, len(large))]

	res, err := s.prepare(ctx)
	if err != nil && !errors.Is(err, agentctx.ErrNoMessages) && !errors.Is(err, provider.ErrPromptTooLong) {
		return nil, err
	}
	rep := res.Report
	pr := rep.Pressure
	in.Pressure = pressureInfo{Tokens: pr.Tokens, Anchored: rep.AnchoredTokens, Level: string(pr.Level), Remaining: pr.Remaining, Warning: pr.Levels.Warning,
		Error: pr.Levels.Error, Threshold: pr.Levels.Threshold, Blocking: pr.Levels.Blocking, Counted: pr.Counted,
		Anchor: pr.Anchor, AnchorUUID: pr.AnchorUUID, Added: pr.Added, Freed: pr.Freed, Ratio: pr.Ratio, RatioSource: pr.RatioSource, Why: pr.Why}
	in.Pressure.AnchorUsage = s.anchorUsage(pr)
	in.Pressure.Differ = differ(rep, in.Pressure)
	in.Compaction.Next = rep.Compaction
	in.Compaction.Degraded = rep.Degradations
	if err != nil && errors.Is(err, provider.ErrPromptTooLong) {
		in.Request.Error = strings.TrimPrefix(err.Error(), "agentctx: ")
	}
	in.Model = modelInfo{Name: s.model, Source: s.modelSrc, ContextWindow: rep.ContextWindow, AutoCompactThreshold: rep.AutoCompactThreshold}
	in.Request = requestInfo{Messages: rep.Messages, Tools: len(res.Request.Tools), InputTokens: rep.InputTokens, MaxTokens: rep.MaxTokens,
		OverThreshold: rep.OverThreshold, Appends: len(res.Append), Error: in.Request.Error}
	bd := s.pipeline.Breakdown(&res)
	in.Request.ByCategory = categoryInfo{SystemPrompt: bd.System, ToolDefinitions: bd.Tools, BaseContext: bd.BaseContext,
		Messages: bd.Messages.Total(), MessagesByCategory: map[string]int{}, CacheDeleted: bd.CacheDeleted,
		FreeSpace: bd.Free, AutoCompactBuffer: bd.Buffer}
	for _, c := range messageCategories() {
		in.Request.ByCategory.MessagesByCategory[string(c)] = bd.Messages.Get(c)
	}
	for _, st := range rep.Stages {
		si := stageInfo{Stage: st.Stage, TokensFreed: st.TokensFreed, Actions: map[string]int{}, Details: st.Actions}
		for _, a := range st.Actions {
			si.Actions[string(a.Kind)]++
		}
		in.Stages = append(in.Stages, si)
	}
	return in, nil
}

// anchorUsage returns the usage of the pressure figure's anchor record, when its parts add up
// to the anchor; nil otherwise.
func (s *session) anchorUsage(pr agentctx.Pressure) *transcript.Usage {
	if pr.AnchorUUID == "" {
		return nil
	}
	for i := len(s.tr.Records) - 1; i >= 0; i-- {
		if r := &s.tr.Records[i]; r.UUID == pr.AnchorUUID && r.Message != nil && r.Message.Usage != nil {
			if r.Message.Usage.Total() == pr.Anchor {
				return r.Message.Usage
			}
			return nil
		}
	}
	return nil
}

// differ explains the pressure figure pr of rep: what the anchored and the counted figures
// are, and why they differ (the tokenizer ratio, and what the provider counts that the session
// file does not hold).
func differ(rep agentctx.Report, pr pressureInfo) []string {
	var lines []string
	if pr.AnchorUUID != "" {
		usage := fmt.Sprintf("%d", pr.Anchor)
		if u := pr.AnchorUsage; u != nil {
			usage = fmt.Sprintf("%d (input %d + cache creation %d + cache read %d + output %d)", pr.Anchor, u.InputTokens, u.CacheCreationInputTokens, u.CacheReadInputTokens, u.OutputTokens)
		}
		lines = append(lines,
			fmt.Sprintf("anchored %d = the provider's usage at its last response %s, %s, + what was added since, %d, − what the stages freed, %d (both counted × the ratio %.3f, %s)",
				pr.Anchored, pr.AnchorUUID, usage, pr.Added, pr.Freed, pr.Ratio, pr.RatioSource),
			fmt.Sprintf("counted %d = our tokenizer on this request (the categories above); the pressure figure is the larger: %s", rep.InputTokens, pr.Why),
			"They differ by the tokenizer ratio and by what the provider counts that we do not: its own framing, and the system prompt and tool "+
				"definitions the runtime sent, which the session file does not hold (pass --tools to count the tools).")
		return lines
	}
	counted := fmt.Sprintf("counted %d = our tokenizer on this request (the categories above)", rep.InputTokens)
	if pr.Tokens == rep.InputTokens {
		counted += "; the pressure figure is raised to it"
	}
	return append(lines,
		fmt.Sprintf("anchored: none, no provider usage since the latest compact boundary, so the pressure figure is the counted size × the ratio %.3f (%s)", pr.Ratio, pr.RatioSource),
		counted,
		"The ratio stands for the tokenizer's difference; what the provider counts that we do not (its own framing, a system prompt and tools "+
			"the session file does not hold) enters the figure once a response reports usage.")
}

func recordKind(r *transcript.Record) string {
	if r.Subtype != "" {
		return string(r.Type) + "/" + string(r.Subtype)
	}
	return string(r.Type)
}

// describe names what a record holds: its block kinds, and the tool for tool blocks.
func describe(r *transcript.Record) string {
	if r.Message == nil {
		return recordKind(r)
	}
	var parts []string
	for _, b := range r.Message.Content {
		switch b := b.(type) {
		case *transcript.ToolUse:
			parts = append(parts, "tool_use "+b.Name)
		case *transcript.ToolResult:
			parts = append(parts, "tool_result "+b.ToolUseID)
		default:
			parts = append(parts, string(b.Kind()))
		}
	}
	if r.IsCompactSummary {
		parts = append(parts, "(compact summary)")
	}
	return strings.Join(parts, ", ")
}

func (in *inspection) writeText(w io.Writer) error {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("file       %s\n", in.File)
	if in.Format != "" {
		p("format     %s (read only: records are mapped from its lines, nothing is written to it)\n", in.Format)
	}
	if t := in.Tail; t != nil {
		from := "scanned from the lines before"
		if t.Digest {
			from = "carried by the latest compact boundary, no line before read"
		}
		p("read       the active tail: lines %d on, bytes %d to %d, and %d records from before for the history, %s (the file is over %d MiB and compacted; problems below are the tail's)\n",
			t.Line, t.Offset, t.Size, t.History, from, transcript.DefaultTailMinBytes>>20)
		if t.DigestProblem != "" {
			p("history    %s\n", t.DigestProblem)
		}
	}
	p("records    %d  %s\n", in.Records, counts(in.RecordsByType))
	for _, u := range in.Unmapped {
		p("unmapped   %s\n", u)
	}
	for _, pr := range in.Problems {
		p("problem    %s (skipped)\n", pr)
	}
	for _, d := range in.Dropped {
		p("dropped    %s (the record is kept without it)\n", d)
	}
	if in.Torn != "" {
		p("torn       %s (skipped)\n", in.Torn)
	}
	p("\nactive chain  %d records  %s\n", in.Chain.Records, counts(in.Chain.ByType))
	if in.Chain.Leaf != "" {
		p("  leaf       %s\n", in.Chain.Leaf)
	}
	if bd := in.Chain.Boundary; bd != nil {
		p("  boundary   %s (trigger %s, preTokens %d, logical parent %s)\n", bd.UUID, bd.Trigger, bd.PreTokens, bd.LogicalParentUUID)
	} else {
		p("  boundary   none\n")
	}
	for _, b := range in.Chain.Breaks {
		p("  break      %s\n", b)
	}
	for _, r := range in.Chain.Replays {
		p("  replay     %s\n", r)
	}
	if len(in.Chain.Unanswered) > 0 {
		p("  unanswered tool calls (session ended mid-call): %s\n", strings.Join(in.Chain.Unanswered, ", "))
	}

	if in.WallClock {
		p("\nclock      %s, the wall clock: pass --now for repeatable output\n", in.Clock)
	} else {
		p("\nclock      %s (--now)\n", in.Clock)
	}
	p("\nmodel      %s (%s)  window %d  auto-compact threshold %d\n", in.Model.Name, in.Model.Source, in.Model.ContextWindow, in.Model.AutoCompactThreshold)

	r := in.Request
	if r.Messages == 0 {
		p("\nnext request  none: the session has no messages to send\n")
	} else {
		p("\nnext request  %d messages  %d input tokens  max_tokens %d  %d records to append", r.Messages, r.InputTokens, r.MaxTokens, r.Appends)
		if c := in.Compaction.Next; c != nil && c.Outcome == agentctx.CompactCompacted {
			p("  (after the in-memory compaction)")
		}
		if r.OverThreshold {
			p("  OVER the auto-compact threshold")
		}
		if r.Error != "" {
			p("\n  NOT SENDABLE: %s", r.Error)
		}
		p("\n")
		in.writeCategories(p)
	}

	pr := in.Pressure
	p("\npressure   %d tokens, level %s: %d before auto-compact (warning %d, error %d, threshold %d, blocking %d)\n",
		pr.Tokens, pr.Level, pr.Remaining, pr.Warning, pr.Error, pr.Threshold, pr.Blocking)
	for _, l := range pr.Differ {
		p("  %s\n", l)
	}

	cp := in.Compaction
	p("\ncompaction %d earlier", cp.Compactions)
	if l := cp.Last; l != nil {
		p(" (last %s: %s, %d → %d tokens, summary by %s", l.UUID, l.Trigger, l.PreTokens, l.PostTokens, cmp.Or(l.Summarizer, "unknown"))
		if l.KeptTail {
			p(", kept a tail")
		}
		if l.Rung != "" {
			p(", rung %s", l.Rung)
		}
		if l.Aggressive {
			p(", aggressive after thrash")
		}
		if l.FallbackReason != "" {
			p(", fallback summary: %s", l.FallbackReason)
		}
		p(")")
	}
	p("; breaker %d consecutive failures (open %t); thrash: %d refills in a row (aggressive %t)\n", cp.ConsecutiveFailures, cp.BreakerOpen, cp.Refills, cp.Thrash)
	if c := cp.Next; c != nil {
		p("  next turn: %s (%s): %s\n", c.Outcome, c.Trigger, c.Reason)
		if c.Outcome == agentctx.CompactCompacted {
			p("  (in memory only: `agentctx compact` appends the records)\n")
		}
	}
	for _, d := range cp.Degraded {
		p("  degraded: %s: %s\n", d.Kind, d.Detail)
	}

	p("\nlargest records (active chain, counted)\n")
	for i, l := range in.Largest {
		p("  %2d. %7d tokens  line %-5d %-9s %s  %s\n", i+1, l.Tokens, l.Line, l.Type, l.UUID, l.Content)
	}

	if r.Messages > 0 {
		p("\nstages (next turn)\n")
		for _, st := range in.Stages {
			in.writeStage(p, st)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeCategories prints the next request by category: the parts, their sum (the counted
// input tokens), then the free space and the auto-compact buffer, which complete the window.
func (in *inspection) writeCategories(p func(string, ...any)) {
	c, r := in.Request.ByCategory, in.Request
	window, threshold := in.Model.ContextWindow, in.Model.AutoCompactThreshold
	row := func(indent int, label string, n int, note string) {
		p("  %*s%-*s %9d", indent, "", 22-indent, label, n)
		if note != "" {
			p("  %s", note)
		}
		p("\n")
	}
	p("  by category, counted (our tokenizer on the request, after every stage)\n")
	row(2, "system prompt", c.SystemPrompt, "")
	row(2, "tool definitions", c.ToolDefinitions, fmt.Sprintf("%d tools, %d from --tools; the others the history uses, declared unavailable", r.Tools, in.GivenTools))
	row(2, "base context", c.BaseContext, "")
	row(2, "messages", c.Messages, "")
	for _, cat := range messageCategories() {
		note := ""
		if cat == agentctx.CategoryOther {
			note = "message framing, unknown blocks"
		}
		row(4, string(cat), c.MessagesByCategory[string(cat)], note)
	}
	row(2, "= input tokens", r.InputTokens, "")
	if c.CacheDeleted > 0 {
		p("    (and %d tokens of tool results that cache_edits delete: sent, in no figure here)\n", c.CacheDeleted)
	}
	if r.InputTokens > window {
		row(2, "over the window by", r.InputTokens-window, fmt.Sprintf("window %d", window))
		return
	}
	row(2, "free space", c.FreeSpace, fmt.Sprintf("below the auto-compact threshold %d", threshold))
	note := "the window above the threshold, kept for the output and the compaction"
	if taken := window - threshold - c.AutoCompactBuffer; taken > 0 {
		note = fmt.Sprintf("the window above the threshold, less the %d of it the request takes", taken)
	}
	row(2, "auto-compact buffer", c.AutoCompactBuffer, note)
	row(2, "= window", window, "")
}

// writeStage prints one stage of the next turn and its actions. Microcompact's clearings
// measure the idle gap to the time of the next turn: without --now, they say so.
func (in *inspection) writeStage(p func(string, ...any), st stageInfo) {
	clock := in.WallClock && st.Stage == "microcompact"
	p("  %-13s %s", st.Stage, counts(st.Actions))
	if st.TokensFreed > 0 {
		p("  %d tokens freed", st.TokensFreed)
	}
	shown := slices.ContainsFunc(st.Details, shownAction)
	if clock && shown {
		p("  (decided on the wall clock: pass --now for repeatable output)")
	}
	p("\n")
	for _, a := range st.Details {
		if !shownAction(a) {
			continue
		}
		id := a.ToolUseID
		if id == "" {
			id = a.UUID
		}
		p("      %-9s %s %s", a.Kind, id, a.Detail)
		if clock {
			p(" (wall clock)")
		}
		p("\n")
	}
}

// shownAction reports whether inspect lists an action: not the cache marker, nor a recorded
// decision applied again.
func shownAction(a agentctx.Action) bool {
	return a.Kind != agentctx.ActionMarker && a.Kind != agentctx.ActionReapplied
}

// counts formats a histogram in key order: "assistant 3, user 2".
func counts(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}
