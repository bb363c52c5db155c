package htmlreport

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/provider"
	"github.com/agentctx/agentctx/simulate"
	"github.com/agentctx/agentctx/transcript"
)

// maxActions is the most actions the page lists for one turn; the rest are counted.
const maxActions = 200

// The origins of a request block that is not the transcript as written.
const (
	originPreview  = "preview"  // the budget stored the result and shows its preview
	originCleared  = "cleared"  // microcompact cleared or deleted the result
	originSummary  = "summary"  // a compaction's summary
	originCollapse = "collapse" // a collapse commit's summary
	originReread   = "re-read"  // re-injected after a compaction: a file, a skill, the state
	originPinned   = "pinned"   // pinned content re-placed after a summary
)

// collector keeps what the page shows of each turn, as [simulate.Run] observes them.
type collector struct {
	maxText int
	turns   []turnData
	comps   []compaction
	// msgs holds each distinct message once; index finds one by its JSON.
	msgs  []messageData
	index map[string]int
	// prev and prevIDs are the turn before's request messages and their indexes in msgs.
	prev    []provider.Message
	prevIDs []int
	// texts gives the origin of the texts of the records that are no transcript as written
	// (summaries, re-read files); contained the texts whose holder has that origin (collapse
	// summaries, pinned records). scanned counts the records of the simulated transcript
	// already read for them.
	texts     map[string]string
	contained map[string]string
	scanned   int
	// decided holds the decisions the timeline has marked (see stageMark).
	decided map[string]bool
	// recovered is set when a recovery record (a rung the live session climbed after a
	// provider's error) was scanned since the last turn.
	recovered bool
	// byUUID finds the message records scanned so far, for the pins that name them.
	byUUID map[string]*transcript.Record
	levels [3]int
}

func newCollector(maxText int) *collector {
	if maxText == 0 {
		maxText = DefaultMaxText
	}
	return &collector{maxText: maxText, index: map[string]int{}, texts: map[string]string{}, contained: map[string]string{},
		byUUID: map[string]*transcript.Record{}, decided: map[string]bool{}}
}

// observe keeps one turn.
func (c *collector) observe(s *simulate.Step) {
	res, rep, st := s.Result, &s.Result.Report, s.Turn
	c.scan(s.Input.Records[c.scanned:])
	c.scanned = len(s.Input.Records)
	c.scan(res.Append)
	if l := rep.Pressure.Levels; l.Threshold > 0 {
		c.levels = [3]int{l.Warning, l.Threshold, l.Blocking}
	}
	td := turnData{N: st.Turn, Line: st.Line, UUID: st.UUID, In: st.InputTokens, Pressure: st.Pressure,
		Max: st.MaxTokens, Expired: st.Expired, Err: st.Error,
		Use:  [5]int{st.Uncached, st.CacheWrite5m, st.CacheWrite1h, st.CacheRead, st.Output},
		Cost: dollars(st.Cost)}
	if !st.Time.IsZero() {
		td.Time = st.Time.UTC().Format(time.RFC3339)
	}
	if r := st.Real; r != nil {
		td.Real = &[5]int{r.Uncached, r.CacheWrite5m, r.CacheWrite1h, r.CacheRead, r.Output}
		td.RealCost = dollars(r.Cost)
	}
	b := s.Pipeline.Breakdown(res)
	m := b.Messages
	td.Parts = []int{b.System, b.Tools, b.BaseContext, m.UserText, m.AssistantText, m.Thinking, m.ToolUse,
		m.ToolResult, m.Media, m.Other, b.CacheDeleted, b.Free, b.Buffer}

	origins := map[string]string{} // tool_use_id → what a stage made of its result
	for _, sr := range rep.Stages {
		if len(sr.Actions) > 0 || sr.TokensFreed != 0 {
			td.Stages = append(td.Stages, stageData{Stage: sr.Stage, Actions: len(sr.Actions), Freed: sr.TokensFreed})
		}
		for _, a := range sr.Actions {
			switch a.Kind {
			case agentctx.ActionReplaced, agentctx.ActionReapplied:
				if sr.Stage == "budget" && a.ToolUseID != "" {
					origins[a.ToolUseID] = originPreview
				}
			case agentctx.ActionCleared, agentctx.ActionMarked:
				if a.ToolUseID != "" {
					origins[a.ToolUseID] = originCleared
				}
			}
			if sr.Stage == "cache" || len(td.Acts) >= maxActions {
				td.More++
				continue
			}
			td.Acts = append(td.Acts, actionData{Stage: sr.Stage, Kind: string(a.Kind), UUID: a.UUID,
				ToolUse: a.ToolUseID, Record: a.Record, Detail: visible(a.Detail), Tokens: a.Tokens})
		}
		if mk := stageMark(sr, c.decided); mk != "" {
			td.Marks = append(td.Marks, mk)
		}
	}
	for _, d := range rep.Degradations {
		td.Deg = append(td.Deg, string(d.Kind)+": "+visible(d.Detail))
		td.Marks = append(td.Marks, degradationMark(d.Kind))
	}
	if cr := rep.Compaction; cr != nil {
		td.Comp = len(c.comps) + 1
		td.Marks = append(td.Marks, compactionMark(cr))
		c.comps = append(c.comps, c.compaction(st.Turn, cr, res))
	}
	if c.recovered {
		td.Marks = append(td.Marks, markRecovery)
		c.recovered = false
	}
	if st.Expired {
		td.Marks = append(td.Marks, markExpired)
	}
	if st.Error != "" {
		td.Marks = append(td.Marks, markError)
	}
	td.Marks = dedupe(td.Marks)

	msgs := res.Request.Messages
	ids := make([]int, len(msgs))
	for i := range msgs {
		if i < len(c.prev) && sameBlocks(c.prev[i].Content, msgs[i].Content) {
			ids[i] = c.prevIDs[i]
			continue
		}
		ids[i] = c.message(&msgs[i], origins, s.Pipeline.Counter())
	}
	for td.Keep < len(ids) && td.Keep < len(c.prevIDs) && ids[td.Keep] == c.prevIDs[td.Keep] {
		td.Keep++
	}
	td.Add = ids[td.Keep:]
	if cr := rep.Compaction; cr != nil && cr.Outcome == agentctx.CompactCompacted {
		comp := &c.comps[len(c.comps)-1]
		comp.Facts = checkFacts(c.prev, summaryText(cr, res), msgs)
	}
	c.prev, c.prevIDs = msgs, ids
	c.turns = append(c.turns, td)
}

// scan notes the texts of records whose content is no transcript as written: compaction
// summaries, re-injected material, collapse summaries and pinned records.
func (c *collector) scan(records []transcript.Record) {
	for i := range records {
		r := &records[i]
		if r.UUID != "" && r.Message != nil {
			c.byUUID[r.UUID] = r
		}
		switch {
		case r.Subtype == transcript.SubtypeRecovery:
			c.recovered = true
		case r.Collapse != nil && r.Collapse.Summary != "":
			c.contained[r.Collapse.Summary] = originCollapse
		case r.Pin != nil:
			for _, u := range r.Pin.UUIDs {
				if pinned := c.byUUID[u]; pinned != nil {
					for _, b := range pinned.Message.Content {
						if t, ok := b.(*transcript.Text); ok && strings.TrimSpace(t.Text) != "" {
							c.contained[t.Text] = originPinned
						}
					}
				}
			}
		}
		if r.Message == nil {
			continue
		}
		origin := ""
		switch {
		case r.IsCompactSummary:
			origin = originSummary
		case r.Rehydration != nil:
			origin = originReread
		}
		for _, b := range r.Message.Content {
			if t, ok := b.(*transcript.Text); ok && origin != "" {
				c.texts[t.Text] = origin
			}
		}
	}
}

// sameBlocks reports whether two messages hold the very same blocks.
func sameBlocks(a, b []transcript.Block) bool {
	if len(a) != len(b) || len(a) == 0 {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// message returns the index of m's entry in c.msgs, adding it when no message so far reads
// the same.
func (c *collector) message(m *provider.Message, origins map[string]string, counter *agentctx.Counter) int {
	md := messageData{Role: string(m.Role)}
	for _, b := range m.Content {
		if b.Kind() == transcript.KindCacheEdits {
			continue
		}
		bd := c.block(b, origins)
		bd.Tokens = counter.Block(b)
		md.Tokens += bd.Tokens
		md.Blocks = append(md.Blocks, bd)
	}
	key, _ := json.Marshal(md) // strings and numbers: it cannot fail
	if i, ok := c.index[string(key)]; ok {
		return i
	}
	c.msgs = append(c.msgs, md)
	c.index[string(key)] = len(c.msgs) - 1
	return len(c.msgs) - 1
}

// block describes one block for the page.
func (c *collector) block(b transcript.Block, origins map[string]string) blockData {
	bd := blockData{Kind: string(b.Kind())}
	var text string
	switch b := b.(type) {
	case *transcript.Text:
		text = b.Text
		bd.Origin = c.textOrigin(text)
	case *transcript.Thinking:
		text = b.Thinking
	case *transcript.RedactedThinking:
		text = "(redacted thinking)"
	case *transcript.ToolUse:
		bd.Name, bd.ID = b.Name, b.ID
		text = string(b.Input)
	case *transcript.ToolResult:
		bd.ID, bd.Error, bd.Origin = b.ToolUseID, b.IsError, origins[b.ToolUseID]
		text = resultText(b)
	case *transcript.Image:
		text = fmt.Sprintf("(image, %s, %d base64 characters)", b.Source.MediaType, len(b.Source.Data))
	case *transcript.Document:
		text = fmt.Sprintf("(document %s, %s)", b.Title, b.Source.Type)
	default:
		if raw, err := transcript.AppendBlock(nil, b); err == nil {
			text = string(raw)
		}
	}
	bd.Text, bd.Full = c.cut(text)
	return bd
}

// textOrigin says where a text block of a request came from: "" for the transcript as
// written.
func (c *collector) textOrigin(text string) string {
	if o, ok := c.texts[text]; ok {
		return o
	}
	for part, o := range c.contained {
		if len(part) < len(text) && strings.Contains(text, part) {
			return o
		}
	}
	return ""
}

// resultText is a tool result's content as text: its text blocks, and a note for each other.
func resultText(r *transcript.ToolResult) string {
	var parts []string
	for _, b := range r.Content {
		switch b := b.(type) {
		case *transcript.Text:
			parts = append(parts, b.Text)
		case *transcript.Image:
			parts = append(parts, fmt.Sprintf("(image, %s, %d base64 characters)", b.Source.MediaType, len(b.Source.Data)))
		default:
			parts = append(parts, "("+string(b.Kind())+")")
		}
	}
	return strings.Join(parts, "\n")
}

// cut shortens text to c.maxText characters, keeping its head and tail, and makes its
// control characters visible; it returns the text and, when it cut, the original length.
func (c *collector) cut(text string) (string, int) {
	text = visible(text)
	if c.maxText < 0 {
		return text, 0
	}
	n := 0
	for range text {
		n++
	}
	if n <= c.maxText {
		return text, 0
	}
	runes := []rune(text)
	head, tail := c.maxText*3/4, c.maxText/4
	note := fmt.Sprintf("\n\n[… %d characters not shown …]\n\n", n-head-tail)
	return string(runes[:head]) + note + string(runes[n-tail:]), n
}

// visible replaces the control characters of s, other than tab and newline, by their
// visible symbols (U+2400 and on; U+2421 for DEL, U+FFFD for the C1 controls), and invalid
// UTF-8 by U+FFFD, so that the page shows them as text.
func visible(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\t' || r == '\n':
			return r
		case r < 0x20:
			return 0x2400 + r
		case r == 0x7f:
			return 0x2421
		case r >= 0x80 && r < 0xa0:
			return '\uFFFD'
		}
		return r
	}, strings.ToValidUTF8(s, "\uFFFD"))
}

// compaction describes the compaction a turn attempted.
func (c *collector) compaction(turn int, cr *agentctx.CompactReport, res *agentctx.Result) compaction {
	out := compaction{Turn: turn, Trigger: cr.Trigger, Outcome: string(cr.Outcome), Reason: visible(cr.Reason),
		Summarizer: cr.Summarizer, Rung: string(cr.Rung), Floor: cr.Floor, Pre: cr.PreTokens, Post: cr.PostTokens,
		Summarized: cr.Summarized, Omitted: cr.Omitted, Kept: cr.Kept, KeptTokens: cr.KeptTokens,
		Rehydrated: cr.Rehydrated, Attempts: cr.Attempts, Breaker: cr.BreakerOpen,
		Failed: cr.ConsecutiveFailures, Thrash: cr.Thrash, Aggressive: cr.Aggressive}
	if cr.Fallback {
		out.Fallback = visible(cr.FallbackReason)
		if out.Fallback == "" {
			out.Fallback = "the primary summarizer failed"
		}
	}
	for _, f := range cr.Failures {
		out.Failures = append(out.Failures, visible(f))
	}
	out.Summary = visible(summaryText(cr, res))
	return out
}

// summaryText is the text of the summary a compaction appended, or "".
func summaryText(cr *agentctx.CompactReport, res *agentctx.Result) string {
	for i := range res.Append {
		if r := &res.Append[i]; r.UUID == cr.SummaryUUID && r.Message != nil {
			var parts []string
			for _, b := range r.Message.Content {
				if t, ok := b.(*transcript.Text); ok {
					parts = append(parts, t.Text)
				}
			}
			return strings.Join(parts, "\n")
		}
	}
	return ""
}

// dollars rounds a cost to a ten-millionth of a dollar, which is all the page shows and
// keeps its figures short.
func dollars(v float64) float64 { return math.Round(v*1e7) / 1e7 }

// dedupe removes repeated names, keeping the first of each.
func dedupe(names []string) []string {
	out := names[:0]
	for i, n := range names {
		seen := false
		for _, m := range names[:i] {
			seen = seen || m == n
		}
		if !seen {
			out = append(out, n)
		}
	}
	return out
}

// finish returns the page's data once the simulation is done.
func (c *collector) finish(sim *simulate.Result, title string, generated time.Time) pageData {
	d := pageData{Title: visible(title), Model: sim.Model, Window: sim.ContextWindow, Levels: c.levels,
		Priced: sim.Priced, MaxText: c.maxText, Records: sim.Records, Skipped: sim.Skipped,
		Turns: c.turns, Msgs: c.msgs, Comps: c.comps}
	if d.Levels[1] == 0 {
		d.Levels[1] = sim.Threshold
	}
	if !generated.IsZero() {
		d.Generated = generated.UTC().Format(time.RFC3339)
	}
	for _, p := range parts() {
		d.Parts = append(d.Parts, p.name)
	}
	if d.Turns == nil {
		d.Turns = []turnData{}
	}
	if d.Msgs == nil {
		d.Msgs = []messageData{}
	}
	return d
}
