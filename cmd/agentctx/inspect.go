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
	Request       requestInfo    `json:"nextRequest"`
	Stages        []stageInfo    `json:"stages"`
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
	Messages      int  `json:"messages"`
	InputTokens   int  `json:"inputTokens"`
	MaxTokens     int  `json:"maxTokens"`
	OverThreshold bool `json:"overThreshold"`
	Appends       int  `json:"decisionRecords"`
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
	s, err := open("inspect", args, func(fs *flag.FlagSet) { asJSON = fs.Bool("json", false, "print JSON") })
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
	if b := chain.Boundary; b != nil {
		in.Chain.Boundary = &boundaryInfo{UUID: b.UUID, LogicalParentUUID: b.LogicalParentUUID}
		if b.CompactMetadata != nil {
			in.Chain.Boundary.Trigger, in.Chain.Boundary.PreTokens = b.CompactMetadata.Trigger, b.CompactMetadata.PreTokens
		}
	}

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
	if err != nil && !errors.Is(err, agentctx.ErrNoMessages) {
		return nil, err
	}
	rep := res.Report
	in.Model = modelInfo{Name: s.model, Source: s.modelSrc, ContextWindow: rep.ContextWindow, AutoCompactThreshold: rep.AutoCompactThreshold}
	in.Request = requestInfo{Messages: rep.Messages, InputTokens: rep.InputTokens, MaxTokens: rep.MaxTokens, OverThreshold: rep.OverThreshold, Appends: len(res.Append)}
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
	p("\nnext request  %d messages  %d input tokens  max_tokens %d  %d decision records to append",
		r.Messages, r.InputTokens, r.MaxTokens, r.Appends)
	if r.OverThreshold {
		p("  OVER the auto-compact threshold")
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
