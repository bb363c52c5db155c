package main

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
)

// inspection is what inspect shows; --json prints it as is.
type inspection struct {
	File          string         `json:"file"`
	Records       int            `json:"records"`
	RecordsByType map[string]int `json:"recordsByType"`
	Problems      []string       `json:"problems,omitempty"`
	Torn          string         `json:"torn,omitempty"`
	Chain         chainInfo      `json:"chain"`
	Model         modelInfo      `json:"model"`
	Tokens        tokenInfo      `json:"tokens"`
	Largest       []largeRecord  `json:"largest"`
	Pressure      pressureInfo   `json:"pressure"`
	Compaction    compactionInfo `json:"compaction"`
	Request       requestInfo    `json:"nextRequest"`
	Stages        []stageInfo    `json:"stages"`
	// Clock is the time of the next turn, and whether it is the wall clock (no --now).
	Clock     string `json:"clock"`
	WallClock bool   `json:"wallClock"`
}

// pressureInfo is the next request's pressure figure and its parts.
type pressureInfo struct {
	Tokens      int     `json:"tokens"`
	Level       string  `json:"level"`
	Remaining   int     `json:"remainingBeforeCompact"`
	Warning     int     `json:"warning"`
	Error       int     `json:"error"`
	Threshold   int     `json:"threshold"`
	Blocking    int     `json:"blocking"`
	Counted     int     `json:"counted"`
	Anchor      int     `json:"anchor"`
	AnchorUUID  string  `json:"anchorUuid,omitempty"`
	Added       int     `json:"added"`
	Freed       int     `json:"freed"`
	Ratio       float64 `json:"ratio"`
	RatioSource string  `json:"ratioSource"`
	Why         string  `json:"why"`
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
}

type chainInfo struct {
	Records    int            `json:"records"`
	ByType     map[string]int `json:"byType"`
	Leaf       string         `json:"leaf,omitempty"`
	Boundary   *boundaryInfo  `json:"boundary,omitempty"`
	Unanswered []string       `json:"unansweredToolUses,omitempty"`
}

type boundaryInfo struct {
	UUID              string `json:"uuid"`
	LogicalParentUUID string `json:"logicalParentUuid,omitempty"`
	Trigger           string `json:"trigger,omitempty"`
	PreTokens         int    `json:"preTokens,omitempty"`
	PostTokens        int    `json:"postTokens,omitempty"`
	Summarizer        string `json:"summarizer,omitempty"`
	KeptTail          bool   `json:"keptTail,omitempty"`
}

func boundaryOf(b *agentctx.Record) *boundaryInfo {
	if b == nil {
		return nil
	}
	bi := &boundaryInfo{UUID: b.UUID, LogicalParentUUID: b.LogicalParentUUID}
	if m := b.CompactMetadata; m != nil {
		bi.Trigger, bi.PreTokens, bi.PostTokens, bi.Summarizer = m.Trigger, m.PreTokens, m.PostTokens, m.Summarizer
		bi.KeptTail = m.PreservedSegment != nil
	}
	return bi
}

type modelInfo struct {
	Name                 string `json:"name"`
	Source               string `json:"source"`
	ContextWindow        int    `json:"contextWindow"`
	AutoCompactThreshold int    `json:"autoCompactThreshold"`
}

type tokenInfo struct {
	ByCategory  map[string]int  `json:"byCategory"`
	Counted     int             `json:"counted"`
	Anchored    int             `json:"anchored"`
	AnchorUUID  string          `json:"anchorUuid,omitempty"`
	AnchorUsage *agentctx.Usage `json:"anchorUsage,omitempty"`
	AfterAnchor int             `json:"afterAnchor"`
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
	InputTokens   int    `json:"inputTokens"`
	MaxTokens     int    `json:"maxTokens"`
	OverThreshold bool   `json:"overThreshold"`
	Appends       int    `json:"decisionRecords"`
	Error         string `json:"error,omitempty"` // the request cannot be sent: why
}

type stageInfo struct {
	Stage       string            `json:"stage"`
	TokensFreed int               `json:"tokensFreed"`
	Actions     map[string]int    `json:"actions"`
	Details     []agentctx.Action `json:"details,omitempty"`
}

// inspect prints what the model sees of a session.
func inspect(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var asJSON *bool
	s, err := open("inspect", args, func(fs *flag.FlagSet) {
		asJSON = fs.Bool("json", false, "print the inspection as JSON instead of text")
	})
	if err != nil {
		return err
	}
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
	in := &inspection{File: s.path, Records: len(tr.Records), RecordsByType: map[string]int{}}
	for _, r := range tr.Records {
		in.RecordsByType[recordKind(&r)]++
	}
	for _, p := range tr.Problems {
		in.Problems = append(in.Problems, p.Error())
	}
	if tr.Torn != nil {
		in.Torn = tr.Torn.Error()
	}
	chain, err := agentctx.BuildChain(tr.Records, agentctx.ChainOptions{})
	if err != nil {
		return nil, err
	}
	in.Chain = chainInfo{Records: len(chain.Records), ByType: map[string]int{}, Unanswered: chain.Unanswered}
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
	in.Clock, in.WallClock = s.now.Format(time.RFC3339), s.wallNow

	var bd agentctx.Breakdown
	var large []largeRecord
	for i, r := range chain.Records {
		bd = bd.Add(s.counter.Breakdown(r))
		if n := s.counter.Record(r); n > 0 {
			large = append(large, largeRecord{UUID: r.UUID, Line: tr.Lines[chain.Index(i)], Type: string(r.Type), Content: describe(r), Tokens: n})
		}
	}
	slices.SortStableFunc(large, func(a, b largeRecord) int { return cmp.Compare(b.Tokens, a.Tokens) })
	in.Largest = large[:min(10, len(large))]
	in.Tokens.ByCategory = map[string]int{}
	for _, c := range agentctx.Categories() {
		in.Tokens.ByCategory[string(c)] = bd.Get(c)
	}
	tot := s.counter.Totals(chain.Records)
	in.Tokens.Counted, in.Tokens.Anchored = tot.Counted, tot.Anchored
	in.Tokens.AnchorUUID, in.Tokens.AnchorUsage, in.Tokens.AfterAnchor = tot.AnchorUUID, tot.AnchorUsage, tot.AfterAnchor

	res, err := s.prepare(ctx)
	if err != nil && !errors.Is(err, agentctx.ErrNoMessages) && !errors.Is(err, agentctx.ErrPromptTooLong) {
		return nil, err
	}
	rep := res.Report
	pr := rep.Pressure
	in.Pressure = pressureInfo{Tokens: pr.Tokens, Level: string(pr.Level), Remaining: pr.Remaining, Warning: pr.Levels.Warning,
		Error: pr.Levels.Error, Threshold: pr.Levels.Threshold, Blocking: pr.Levels.Blocking, Counted: pr.Counted,
		Anchor: pr.Anchor, AnchorUUID: pr.AnchorUUID, Added: pr.Added, Freed: pr.Freed, Ratio: pr.Ratio, RatioSource: pr.RatioSource, Why: pr.Why}
	in.Compaction.Next = rep.Compaction
	if err != nil && errors.Is(err, agentctx.ErrPromptTooLong) {
		in.Request.Error = strings.TrimPrefix(err.Error(), "agentctx: ")
	}
	in.Model = modelInfo{Name: s.model, Source: s.modelSrc, ContextWindow: rep.ContextWindow, AutoCompactThreshold: rep.AutoCompactThreshold}
	in.Request = requestInfo{Messages: rep.Messages, InputTokens: rep.InputTokens, MaxTokens: rep.MaxTokens, OverThreshold: rep.OverThreshold,
		Appends: len(res.Append), Error: in.Request.Error}
	for _, st := range rep.Stages {
		si := stageInfo{Stage: st.Stage, TokensFreed: st.TokensFreed, Actions: map[string]int{}, Details: st.Actions}
		for _, a := range st.Actions {
			si.Actions[string(a.Kind)]++
		}
		in.Stages = append(in.Stages, si)
	}
	return in, nil
}

func recordKind(r *agentctx.Record) string {
	if r.Subtype != "" {
		return string(r.Type) + "/" + string(r.Subtype)
	}
	return string(r.Type)
}

// describe names what a record holds: its block kinds, and the tool for tool blocks.
func describe(r *agentctx.Record) string {
	if r.Message == nil {
		return recordKind(r)
	}
	var parts []string
	for _, b := range r.Message.Content {
		switch b := b.(type) {
		case *agentctx.ToolUse:
			parts = append(parts, "tool_use "+b.Name)
		case *agentctx.ToolResult:
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
	p("records    %d  %s\n", in.Records, counts(in.RecordsByType))
	for _, pr := range in.Problems {
		p("problem    %s\n", pr)
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
	if len(in.Chain.Unanswered) > 0 {
		p("  unanswered tool calls (session ended mid-call): %s\n", strings.Join(in.Chain.Unanswered, ", "))
	}

	if in.WallClock {
		p("\nclock      %s, the wall clock: pass --now for repeatable output\n", in.Clock)
	} else {
		p("\nclock      %s (--now)\n", in.Clock)
	}
	p("\nmodel      %s (%s)  window %d  auto-compact threshold %d\n", in.Model.Name, in.Model.Source, in.Model.ContextWindow, in.Model.AutoCompactThreshold)
	p("\ntokens by category (active chain, counted)\n")
	for _, c := range agentctx.Categories() {
		p("  %-15s %9d\n", c, in.Tokens.ByCategory[string(c)])
	}
	p("  %-15s %9d\n", "counted total", in.Tokens.Counted)
	if in.Tokens.AnchorUsage != nil {
		u := in.Tokens.AnchorUsage
		p("  %-15s %9d  = usage at %s (input %d + cache creation %d + cache read %d + output %d) + %d counted after\n",
			"anchored total", in.Tokens.Anchored, in.Tokens.AnchorUUID, u.InputTokens, u.CacheCreationInputTokens, u.CacheReadInputTokens, u.OutputTokens, in.Tokens.AfterAnchor)
	} else {
		p("  %-15s %9d  (no reported usage to anchor on)\n", "anchored total", in.Tokens.Anchored)
	}

	pr := in.Pressure
	p("\npressure   %d tokens, level %s: %d before auto-compact (warning %d, error %d, threshold %d, blocking %d)\n",
		pr.Tokens, pr.Level, pr.Remaining, pr.Warning, pr.Error, pr.Threshold, pr.Blocking)
	if pr.AnchorUUID != "" {
		p("  = anchor %d (usage at %s) + added %d − freed %d, or the counted size %d when larger\n", pr.Anchor, pr.AnchorUUID, pr.Added, pr.Freed, pr.Counted)
	} else {
		p("  = the counted size %d × the ratio (no usage since the latest compact boundary)\n", pr.Counted)
	}
	p("  ratio %.3f, %s\n  %s\n", pr.Ratio, pr.RatioSource, pr.Why)
	cp := in.Compaction
	p("\ncompaction %d earlier", cp.Compactions)
	if l := cp.Last; l != nil {
		p(" (last %s: %s, %d → %d tokens, summary by %s", l.UUID, l.Trigger, l.PreTokens, l.PostTokens, cmp.Or(l.Summarizer, "unknown"))
		if l.KeptTail {
			p(", kept a tail")
		}
		p(")")
	}
	p("; breaker %d consecutive failures (open %t); thrash: %d refills in a row (stopped %t)\n", cp.ConsecutiveFailures, cp.BreakerOpen, cp.Refills, cp.Thrash)
	if c := cp.Next; c != nil {
		p("  next turn: %s (%s): %s\n", c.Outcome, c.Trigger, c.Reason)
		if c.Outcome == agentctx.CompactCompacted {
			p("  (in memory only: `agentctx compact` appends the records)\n")
		}
	}

	p("\nlargest records\n")
	for i, l := range in.Largest {
		p("  %2d. %7d tokens  line %-5d %-9s %s  %s\n", i+1, l.Tokens, l.Line, l.Type, l.UUID, l.Content)
	}

	r := in.Request
	if r.Messages == 0 {
		p("\nnext request  none: the session has no messages to send\n")
		_, err := io.WriteString(w, b.String())
		return err
	}
	p("\nnext request  %d messages  %d input tokens  max_tokens %d  %d records to append",
		r.Messages, r.InputTokens, r.MaxTokens, r.Appends)
	if r.OverThreshold {
		p("  OVER the auto-compact threshold")
	}
	if r.Error != "" {
		p("\n  NOT SENDABLE: %s", r.Error)
	}
	p("\nstages\n")
	for _, st := range in.Stages {
		p("  %-13s %s", st.Stage, counts(st.Actions))
		if st.TokensFreed > 0 {
			p("  %d tokens freed", st.TokensFreed)
		}
		p("\n")
		for _, a := range st.Details {
			if a.Kind == agentctx.ActionMarker || a.Kind == agentctx.ActionReapplied {
				continue
			}
			id := a.ToolUseID
			if id == "" {
				id = a.UUID
			}
			p("      %-9s %s %s\n", a.Kind, id, a.Detail)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
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
