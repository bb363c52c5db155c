package agentctx

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/agentctx/agentctx/provider"

	"github.com/agentctx/agentctx/internal/wire"

	"github.com/agentctx/agentctx/transcript"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// checkConservation fails t unless Prepare conserved every block of the active chain (see
// [conservation]); name is the session file or case, for the messages.
func checkConservation(t testing.TB, name string, in Input, res Result) {
	t.Helper()
	vs := conservation(in, res)
	const show = 20
	for i, v := range vs {
		if i == show {
			t.Errorf("%s: … and %d more conservation violations", name, len(vs)-show)
			break
		}
		t.Errorf("%s: %s", name, v)
	}
}

// conservation checks that a turn loses no block: every content block of the active chain
// (text, tool_use, tool_result, thinking, media, server tool and unknown blocks) reaches
// res.Request byte for byte, or as the replacement a recorded decision says stands in for it,
// unless a recorded decision or a reported repair removed it. It returns the violations, each
// naming the record uuid and the block (index, kind, tool id); nil when the turn conserved
// everything. It is cheap: a few map operations per block.
//
// What the model sees of a block is compared, not its encoding: the fields the request builder
// owns (cache_control, cache_reference) and transcript-only fields (Extra, citations) do not
// count, and tool ids and names the provider rejects are compared in their rewritten form.
//
// The check runs in phases:
//
//  1. The expected blocks: those of the chain's messages (see [transcript.Chain.Messages]; records before
//     the latest compact boundary and API error records are not messages). Because the check
//     must not trust the code it checks, chainViolations first verifies that the chain is
//     closed: the leaf's whole parent walk, every record of each response on it, a result for
//     each of its tool calls, and nothing from another thread or from before the boundary.
//  2. The rules of conservationRules, in pipeline order, read the Report and the decision
//     records and say which records are gone (removed by a recorded decision, or never sent)
//     and which blocks the request shows in another form (a preview, the cleared marker); a
//     rule may also require a block in the request (a collapse summary).
//  3. Matching: each expected block consumes one equal block of the request.
//  4. Normalize: each block still unmatched needs a normalize action naming its record (and
//     tool id): a repair whose changed form is in the request, or a drop. One absence needs
//     no action of its own: thinking, when Report.ThinkingUnavailable is set.
//  5. Pairs: a decision removes a tool_use and its results together or not at all, and
//     normalize may drop a tool block only when the chain itself breaks its pair (a drop of
//     a block whose pair was whole means that a stage split it).
//
// # Adding a rule
//
// A stage that removes or replaces blocks on a decision adds a consRule to conservationRules,
// at its place in pipeline order. Its apply func reads the stage's actions
// (c.actions("stage")), looks up the decision record each carries out (c.decision: in the
// transcript, or in Result.Append when made this turn) and marks what it explains:
// c.removeRecord(r, byDecision, why) for a record the decision removed from the view,
// c.replace(bl, block, why) for a block the request shows in another form, and
// c.require(block, why) for a block the decision adds that must be in the request. What a rule
// cannot explain it reports with c.fail; it never explains a block without a record or an
// action that says so.
//
// Compaction, for instance: the rule finds the compact stage's action and the boundary record
// it names, removes every chain record before the boundary except the preserved tail and
// requires the summary message's text (and any pinned content re-sent after it); the pair
// phase then proves that the tail never starts inside a tool_use/tool_result pair.
func conservation(in Input, res Result) []string {
	chain, err := transcript.BuildChain(in.Records, transcript.ChainOptions{Leaf: in.Leaf})
	if err != nil {
		return []string{"chain: " + err.Error()}
	}
	c := newConsCheck(in, res, chain)
	c.errs = append(c.errs, chainViolations(in.Records, chain, in.Leaf)...)
	for _, r := range conservationRules {
		c.rule = r.name
		r.apply(c)
	}
	c.rule = ""
	c.match()
	c.resolve()
	c.pairs()
	return c.errs
}

// consRule explains, for one stage, why chain blocks are absent from the request or reach it
// in another form (see [conservation], "Adding a rule"). name prefixes its violations.
type consRule struct {
	name  string
	apply func(c *consCheck)
}

// conservationRules are the explanations of a missing or replaced block, in pipeline order
// (a later replacement of the same block wins, as in the pipeline).
var conservationRules = []consRule{
	{"provider compaction", consProviderCompaction},
	{"media", consMedia},
	{"recovery", consRecovery},
	{"budget", consBudget},
	{"snip", consSnip},
	{"microcompact", consMicrocompact},
	{"collapse", consCollapse},
	{"compact", consCompact},
	{"never sent", consNeverSent},
}

// goneKind says who removed a record or block from the request.
type goneKind int

const (
	kept        goneKind = iota
	byDecision           // a recorded decision (snip, collapse, compaction)
	byNormalize          // normalize: a record never sent, or a reported drop
	byContract           // thinking unavailable: no thinking is sent
)

// consRecord is one message of the chain and what the check learnt about it.
type consRecord struct {
	rec    *transcript.Record
	pos    int // position in Chain.Records
	blocks []*consBlock
	gone   goneKind
	why    string
}

// consBlock is one content block of a chain message and what the check learnt about it.
type consBlock struct {
	r     *consRecord
	index int // position in the record's message content
	b     transcript.Block
	id    string           // the tool id it carries, "" for other blocks
	want  transcript.Block // what the request must hold: b, or the replacement a decision made
	why   string           // why want is not b, or why the block is gone
	gone  goneKind
	done  bool // found in the request (as want, or changed by a reported repair)
}

func (bl *consBlock) String() string {
	s := fmt.Sprintf("record %s block %d (%s", bl.r.rec.UUID, bl.index, transcript.KindOf(bl.b))
	if bl.id != "" {
		s += " " + bl.id
	}
	return s + ")"
}

// consCheck is the state of one conservation check.
type consCheck struct {
	in       Input
	res      Result
	chain    *transcript.Chain
	msgs     []*consRecord                 // the chain's messages, in chain order
	blocks   []*consBlock                  // their blocks, in chain order
	byUUID   map[string][]*consRecord      // record uuid → its messages (one, unless a uuid repeats)
	records  map[string]*transcript.Record // uuid → first record of in.Records, then res.Append
	required []consRequired
	norm     map[string][]*Action // record uuid → normalize actions not yet used to explain a block
	rewrite  *normalizer          // normalize's deterministic tool id and name rewrites
	pool     map[string]int       // key of a request block → how many are not matched yet
	idPool   map[string]int       // kind and tool id of a request block → how many are unmatched
	rule     string               // the rule running, for its violations
	errs     []string
}

// consRequired is a block a rule requires in the request.
type consRequired struct {
	b   transcript.Block
	why string
}

func newConsCheck(in Input, res Result, chain *transcript.Chain) *consCheck {
	c := &consCheck{
		in: in, res: res, chain: chain,
		byUUID: map[string][]*consRecord{}, records: map[string]*transcript.Record{}, norm: map[string][]*Action{},
		rewrite: &normalizer{st: &StageReport{}, ids: map[string]string{}, names: map[string]string{}},
	}
	for _, recs := range [][]transcript.Record{in.Records, res.Append} {
		for i := range recs {
			if u := recs[i].UUID; u != "" && c.records[u] == nil {
				c.records[u] = &recs[i]
			}
		}
	}
	for pos, r := range chain.Records {
		if !r.IsConversation() || r.IsAPIErrorMessage {
			continue
		}
		cr := &consRecord{rec: r, pos: pos}
		for i, b := range r.Message.Content {
			bl := &consBlock{r: cr, index: i, b: b, id: toolID(b), want: b}
			cr.blocks = append(cr.blocks, bl)
			c.blocks = append(c.blocks, bl)
		}
		c.msgs = append(c.msgs, cr)
		c.byUUID[r.UUID] = append(c.byUUID[r.UUID], cr)
	}
	if s := res.Report.Stage("normalize"); s != nil {
		for i := range s.Actions {
			if a := &s.Actions[i]; c.byUUID[a.UUID] != nil {
				c.norm[a.UUID] = append(c.norm[a.UUID], a)
			}
		}
	}
	return c
}

// fail records a violation.
func (c *consCheck) fail(format string, args ...any) {
	v := fmt.Sprintf(format, args...)
	if c.rule != "" {
		v = c.rule + " rule: " + v
	}
	c.errs = append(c.errs, v)
}

// actions returns the actions the named stage reported.
func (c *consCheck) actions(stage string) []Action {
	if s := c.res.Report.Stage(stage); s != nil {
		return s.Actions
	}
	return nil
}

// decision returns the decision record that an action of stage carries out (a.Record), which
// must have subtype sub, or reports it and returns nil.
func (c *consCheck) decision(stage string, a Action, sub transcript.Subtype) *transcript.Record {
	r := c.records[a.Record]
	if r == nil || r.Type != transcript.TypeSystem || r.Subtype != sub {
		on := "record " + a.UUID
		if a.ToolUseID != "" {
			on += " tool_use " + a.ToolUseID
		}
		c.fail("%s %s action on %s names record %q, which is no %s record of the transcript or Result.Append",
			stage, a.Kind, on, a.Record, sub)
		return nil
	}
	return r
}

// removeRecord marks a chain message, all its blocks, as legitimately absent from the request.
// The first explanation stands.
func (c *consCheck) removeRecord(r *consRecord, kind goneKind, why string) {
	if r.gone != kept {
		return
	}
	r.gone, r.why = kind, why
	for _, bl := range r.blocks {
		c.remove(bl, kind, why)
	}
}

// remove marks a block as legitimately absent from the request.
func (c *consCheck) remove(bl *consBlock, kind goneKind, why string) {
	if bl.gone == kept {
		bl.gone, bl.why = kind, why
	}
}

// replace says the request shows b instead of the block.
func (c *consCheck) replace(bl *consBlock, b transcript.Block, why string) {
	bl.want, bl.why = b, why
}

// require says the request must hold b.
func (c *consCheck) require(b transcript.Block, why string) {
	c.required = append(c.required, consRequired{b, why})
}

// resultsOf returns the tool_result blocks with tool id id of the record uuid.
func (c *consCheck) resultsOf(uuid, id string) []*consBlock {
	var out []*consBlock
	for _, r := range c.byUUID[uuid] {
		for _, bl := range r.blocks {
			if _, ok := bl.b.(*transcript.ToolResult); ok && bl.id == id {
				out = append(out, bl)
			}
		}
	}
	return out
}

// consBudget: a replaced result is shown as the preview its budget decision froze.
func consBudget(c *consCheck) {
	for _, a := range c.actions("budget") {
		if a.Kind != ActionReplaced && a.Kind != ActionReapplied {
			continue
		}
		if cc, preview := c.claudeReplacement(a); cc != nil {
			for _, bl := range c.resultsOf(a.UUID, a.ToolUseID) {
				c.replace(bl, &transcript.ToolResult{ToolUseID: a.ToolUseID, Content: []transcript.Block{&transcript.Text{Text: preview}}, IsError: bl.want.(*transcript.ToolResult).IsError},
					"the replacement of Claude Code's content-replacement record")
			}
			continue
		}
		d := c.decision("budget", a, transcript.SubtypeToolResultBudget)
		if d == nil {
			continue
		}
		preview := ""
		if d.Budget != nil {
			for _, r := range d.Budget.Results {
				if r.ToolUseID == a.ToolUseID && r.Replaced {
					preview = r.Preview
					break
				}
			}
		}
		if preview == "" {
			c.fail("budget %s action on record %s: decision %s holds no replacement of tool_use %s", a.Kind, a.UUID, a.Record, a.ToolUseID)
			continue
		}
		for _, bl := range c.resultsOf(a.UUID, a.ToolUseID) {
			c.replace(bl, &transcript.ToolResult{ToolUseID: a.ToolUseID, Content: []transcript.Block{&transcript.Text{Text: preview}}, IsError: bl.want.(*transcript.ToolResult).IsError},
				"the preview of budget decision "+d.UUID)
		}
	}
}

// claudeReplacement returns the first Claude Code content-replacement record of the transcript
// that replaces the result of a budget action's tool_use, when the action names it (its uuid,
// often none), and the replacement's text.
func (c *consCheck) claudeReplacement(a Action) (*transcript.Record, string) {
	for i := range c.in.Records {
		r := &c.in.Records[i]
		for _, cr := range r.ContentReplacements() {
			if cr.ToolUseID == a.ToolUseID {
				if r.UUID != a.Record {
					return nil, ""
				}
				return r, cr.Replacement
			}
		}
	}
	return nil, ""
}

// consMedia: a media block a recovery decision names by its hash is shown as the decision's
// text marker, at top level or inside a tool_result, wherever it stands.
func consMedia(c *consCheck) {
	stripped := map[string]string{} // media hash → the decision record naming it first
	for _, recs := range [][]transcript.Record{c.in.Records, c.res.Append} {
		for _, r := range recs {
			if r.Type == transcript.TypeSystem && r.Subtype == transcript.SubtypeRecovery && r.Recovery != nil && r.Recovery.Rung == transcript.RungMediaRejected {
				for _, m := range r.Recovery.Media {
					if _, ok := stripped[m.Hash]; !ok {
						stripped[m.Hash] = r.UUID
					}
				}
			}
		}
	}
	marker := func(b transcript.Block) (transcript.Block, bool) {
		var src transcript.MediaSource
		switch b := b.(type) {
		case *transcript.Image:
			src = b.Source
		case *transcript.Document:
			src = b.Source
		default:
			return nil, false
		}
		if _, ok := stripped[transcript.MediaHash(src)]; !ok {
			return nil, false
		}
		return strippedMarker(transcript.KindOf(b)), true
	}
	for _, a := range c.actions("media") {
		if a.Kind != ActionReplaced {
			c.fail("media %s action on record %s: the media stage only replaces", a.Kind, a.UUID)
			continue
		}
		d := c.decision("media", a, transcript.SubtypeRecovery)
		if d == nil {
			continue
		}
		found := false
		for _, r := range c.byUUID[a.UUID] {
			for _, bl := range r.blocks {
				if a.ToolUseID == "" {
					if m, ok := marker(bl.b); ok {
						c.replace(bl, m, "the marker of media decision "+d.UUID)
						found = true
					}
					continue
				}
				tr, ok := bl.want.(*transcript.ToolResult)
				if !ok || bl.id != a.ToolUseID {
					continue
				}
				content := slices.Clone(tr.Content)
				for k, cb := range content {
					if m, ok := marker(cb); ok {
						content[k], found = m, true
					}
				}
				cp := *tr
				cp.Content = content
				c.replace(bl, &cp, "the markers of media decision "+d.UUID)
			}
		}
		if !found {
			c.fail("media replaced action on record %s names decision %s, which strips no media block of the record", a.UUID, a.Record)
		}
	}
}

// consRecovery: a response cut at max_tokens that an output-cap decision withholds is gone.
func consRecovery(c *consCheck) {
	for _, a := range c.actions("recovery") {
		d := c.decision("recovery", a, transcript.SubtypeRecovery)
		if d == nil {
			continue
		}
		if a.Kind != ActionSnipped || d.Recovery == nil || !slices.Contains(d.Recovery.Withheld, a.UUID) {
			c.fail("recovery %s action on record %s: decision %s withholds no such record", a.Kind, a.UUID, d.UUID)
			continue
		}
		for _, r := range c.byUUID[a.UUID] {
			c.removeRecord(r, byDecision, "withheld by output-cap decision "+d.UUID)
		}
	}
}

// consSnip: a snipped record is gone, by the snip record the action names.
func consSnip(c *consCheck) {
	for _, a := range c.actions("snip") {
		if a.Kind != ActionSnipped {
			continue
		}
		if d := c.decision("snip", a, transcript.SubtypeSnip); d != nil {
			for _, r := range c.byUUID[a.UUID] {
				c.removeRecord(r, byDecision, "snipped by "+d.UUID)
			}
		}
	}
}

// consMicrocompact: a cleared result is shown as the cleared marker; a result deleted from the
// provider's cache keeps its content.
func consMicrocompact(c *consCheck) {
	for _, a := range c.actions("microcompact") {
		if a.ToolUseID == "" || (a.Kind != ActionCleared && a.Kind != ActionReapplied && a.Kind != ActionMarked) {
			continue
		}
		if r := c.records[a.Record]; r != nil && r.MicrocompactBoundary() != nil && slices.Contains(r.MicrocompactBoundary().CompactedToolIDs, a.ToolUseID) {
			for _, bl := range c.resultsOf(a.UUID, a.ToolUseID) {
				c.replace(bl, &transcript.ToolResult{ToolUseID: a.ToolUseID, Content: []transcript.Block{&transcript.Text{Text: ClearedToolResultText}}, IsError: bl.want.(*transcript.ToolResult).IsError},
					"cleared by Claude Code's microcompact_boundary "+r.UUID)
			}
			continue
		}
		d := c.decision("microcompact", a, transcript.SubtypeMicrocompact)
		if d == nil {
			continue
		}
		if d.Microcompact == nil || !slices.Contains(d.Microcompact.ClearedToolUseIDs, a.ToolUseID) {
			c.fail("microcompact %s action on record %s: decision %s does not name tool_use %s", a.Kind, a.UUID, a.Record, a.ToolUseID)
			continue
		}
		if d.Microcompact.Trigger == mcTriggerCached {
			continue // a cache_reference only: the content stays
		}
		for _, bl := range c.resultsOf(a.UUID, a.ToolUseID) {
			c.replace(bl, &transcript.ToolResult{ToolUseID: a.ToolUseID, Content: []transcript.Block{&transcript.Text{Text: ClearedToolResultText}}, IsError: bl.want.(*transcript.ToolResult).IsError},
				"cleared by microcompact decision "+d.UUID)
		}
	}
}

// collapseDetail is the form of a collapse action's Detail (see collapse.go): the number of
// view entries replaced, the span after widening, the summary's uuid and those it supersedes.
var collapseDetail = regexp.MustCompile(`^collapse (.+?): (\d+) records (\S+)\.\.(\S+) replaced by summary (\S+)(?:; supersedes (.+))?$`)

// consCollapse: the records of a collapsed span are gone, replaced by the commit's summary,
// which must be in the request unless a later collapse superseded it. The span is the one the
// action reports, checked against the chain: it must hold as many view entries as it says.
func consCollapse(c *consCheck) {
	at := map[string]int{} // uuid → index in c.msgs; summary uuid → its first or last
	for i, r := range c.msgs {
		if _, ok := at[r.rec.UUID]; !ok {
			at[r.rec.UUID] = i
		}
	}
	type summary struct {
		lo, hi int // the span, as indices in c.msgs
		text   transcript.Block
	}
	summaries := map[string]*summary{}
	var order []string
	superseded := map[string]bool{}
	for _, a := range c.actions("collapse") {
		if a.Kind != ActionCollapsed {
			continue
		}
		d := c.decision("collapse", a, transcript.SubtypeCollapseCommit)
		if d == nil || d.Collapse == nil {
			continue
		}
		m := collapseDetail.FindStringSubmatch(a.Detail)
		if m == nil {
			c.fail("collapse action of commit %s: detail %q is not in the form collapseDetail reads", d.UUID, a.Detail)
			continue
		}
		n, _ := strconv.Atoi(m[2])
		lo, okLo := at[m[3]]
		if s := summaries[m[3]]; s != nil {
			lo, okLo = s.lo, true
		}
		hi, okHi := at[m[4]]
		if s := summaries[m[4]]; s != nil {
			hi, okHi = s.hi, true
		}
		if !okLo || !okHi || lo > hi {
			c.fail("collapse commit %s: span %s..%s is not on the chain", d.UUID, m[3], m[4])
			continue
		}
		// The view entries of the span: the messages still in the view, and the summaries of
		// earlier collapses inside it.
		entries := 0
		for u, s := range summaries {
			if s.lo >= lo && s.hi <= hi && !superseded[u] {
				entries++
			}
		}
		for _, r := range c.msgs[lo : hi+1] {
			if r.gone == kept {
				entries++
			}
			c.removeRecord(r, byDecision, "collapsed by commit "+d.UUID)
		}
		if entries != n {
			c.fail("collapse commit %s: the Report says %d records %s..%s were replaced, the chain has %d there", d.UUID, n, m[3], m[4], entries)
		}
		if m[6] != "" {
			for u := range strings.SplitSeq(m[6], ", ") {
				superseded[u] = true
			}
		}
		summaries[m[5]] = &summary{lo, hi, &transcript.Text{Text: collapsedText(collapseID(d), d.Collapse.Summary)}}
		order = append(order, m[5])
	}
	for _, u := range order {
		if !superseded[u] {
			c.require(summaries[u].text, "collapse summary "+u)
		}
	}
}

// neverSent reports whether normalize never sends a message record: synthetic and virtual
// records and display-only ones (compact summaries excepted). Judged on the record alone.
func neverSent(r *transcript.Record) bool {
	return r.IsAPIErrorMessage || r.IsVirtual || (r.IsVisibleInTranscriptOnly && !r.IsCompactSummary) ||
		(r.Type == transcript.TypeAssistant && r.Message != nil && r.Message.Model == transcript.SyntheticModel)
}

// consCompact: a compaction this turn removes every chain message before its preserved
// segment's head (all of them without a segment), by the boundary record the action names; the
// kept messages must reach the request as they are (the matching phase proves it, and the pair
// phase that the cut never splits a tool pair), and so must the summary and every message the
// compaction wrote after it (re-injected files, skills, hook output).
func consCompact(c *consCheck) {
	for _, a := range c.actions("compact") {
		if a.Kind != ActionCompacted {
			continue
		}
		b := c.decision("compact", a, transcript.SubtypeCompactBoundary)
		if b == nil {
			continue
		}
		if b.CompactMetadata == nil {
			c.fail("compaction %s: the boundary has no compactMetadata", b.UUID)
			continue
		}
		head := len(c.msgs)
		if seg := b.CompactMetadata.PreservedSegment; seg != nil {
			head = slices.IndexFunc(c.msgs, func(r *consRecord) bool { return r.rec.UUID == seg.HeadUUID })
			if head < 0 {
				c.fail("compaction %s: the preserved segment's head %s is not a message of the chain", b.UUID, seg.HeadUUID)
				continue
			}
			if last := c.msgs[len(c.msgs)-1].rec.UUID; seg.TailUUID != last && c.in.Leaf == "" {
				c.fail("compaction %s: the preserved segment ends at %s, not at the chain's leaf %s", b.UUID, seg.TailUUID, last)
			}
		}
		for _, r := range c.msgs[:head] {
			c.removeRecord(r, byDecision, "summarized by compaction "+b.UUID)
		}
		// The records it wrote: the summary hangs off the boundary; what follows it hangs off
		// the summary or, with a kept tail, off the tail's end.
		summary := false
		for i := range c.res.Append {
			r := &c.res.Append[i]
			if !r.IsConversation() {
				continue
			}
			switch {
			case r.ParentUUID == b.UUID && r.IsCompactSummary:
				summary = true
			case r.Rehydration != nil || r.IsMeta:
			default:
				continue
			}
			for _, blk := range r.Message.Content {
				c.require(blk, "written by compaction "+b.UUID)
			}
		}
		if !summary {
			c.fail("compaction %s: Result.Append holds no summary under the boundary", b.UUID)
		}
	}
}

// consNeverSent: a record the provider never sees is gone when normalize reported its drop.
func consNeverSent(c *consCheck) {
	for _, r := range c.msgs {
		if !neverSent(r.rec) {
			continue
		}
		for _, a := range c.norm[r.rec.UUID] {
			if a.Kind == ActionDropped {
				c.removeRecord(r, byNormalize, "never sent: "+a.Detail)
				break
			}
		}
	}
}

// consKey returns what the model sees of a block: its kind and payload, length-prefixed so that
// different blocks never share a key. cache_control, cache_reference, citations and Extra
// fields do not count.
func consKey(b transcript.Block) string {
	var k strings.Builder
	writeConsKey(&k, b)
	return k.String()
}

func writeConsKey(k *strings.Builder, b transcript.Block) {
	field := func(s string) {
		k.WriteString(strconv.Itoa(len(s)))
		k.WriteByte(':')
		k.WriteString(s)
	}
	source := func(s transcript.MediaSource) {
		enc, err := s.MarshalJSON()
		if err != nil {
			enc = []byte(err.Error())
		}
		field(string(enc))
	}
	field(string(transcript.KindOf(b)))
	switch b := b.(type) {
	case *transcript.Text:
		field(b.Text)
	case *transcript.Image:
		source(b.Source)
	case *transcript.Document:
		source(b.Source)
		field(b.Title)
		field(b.Context)
	case *transcript.ToolUse:
		field(b.ID)
		field(b.Name)
		field(string(b.Input))
	case *transcript.ToolResult:
		field(b.ToolUseID)
		field(strconv.FormatBool(b.IsError))
		field(strconv.Itoa(len(b.Content)))
		for _, cb := range b.Content {
			writeConsKey(k, cb)
		}
	case *transcript.Thinking:
		field(b.Thinking)
		field(b.Signature)
	case *transcript.RedactedThinking:
		field(b.Data)
	case *transcript.ToolReference:
		field(b.ToolName)
	case *transcript.ServerToolUse:
		field(b.ID)
		field(b.Name)
		field(string(b.Input))
	case *transcript.ServerToolResult:
		field(b.ToolUseID)
		field(string(b.Content))
	case *transcript.UnknownBlock:
		field(string(b.JSON))
	case *transcript.CacheEdits:
		for _, e := range b.Edits {
			field(e.Type + " " + e.CacheReference)
		}
	}
}

// sent returns b as normalize sends it when nothing is wrong with it: tool ids and names the
// provider rejects rewritten (normalize's deterministic rewrite).
func (c *consCheck) sent(b transcript.Block) transcript.Block {
	switch b := b.(type) {
	case *transcript.ToolUse:
		return &transcript.ToolUse{ID: c.rewrite.fixID(b.ID, ""), Name: c.rewrite.fixName(b.Name, ""), Input: b.Input}
	case *transcript.ToolResult:
		return &transcript.ToolResult{ToolUseID: c.rewrite.fixID(b.ToolUseID, ""), Content: b.Content, IsError: b.IsError}
	case *transcript.ServerToolUse:
		return &transcript.ServerToolUse{ID: c.rewrite.fixID(b.ID, ""), Name: b.Name, Input: b.Input}
	case *transcript.ServerToolResult:
		return &transcript.ServerToolResult{Type: b.Type, ToolUseID: c.rewrite.fixID(b.ToolUseID, ""), Content: b.Content}
	}
	return b
}

func idKey(b transcript.Block) string { return string(transcript.KindOf(b)) + "\x00" + toolID(b) }

// match pairs each expected block with an equal block of the request. Blocks of records
// without normalize actions go first, then those of records normalize changed but dropped
// nothing from, then those of records it dropped blocks from, so that a block normalize
// changed or dropped never takes the request block of an identical one elsewhere (an image
// dropped from an assistant message, the same image sent in the user message after it).
func (c *consCheck) match() {
	c.pool, c.idPool = map[string]int{}, map[string]int{}
	for _, m := range c.res.Request.Messages {
		for _, b := range m.Content {
			if transcript.KindOf(b) == transcript.KindCacheEdits {
				continue
			}
			c.pool[consKey(b)]++
			if toolID(b) != "" {
				c.idPool[idKey(b)]++
			}
		}
	}
	for _, r := range c.required {
		if k := consKey(r.b); c.pool[k] > 0 {
			c.pool[k]--
		} else {
			c.fail("%s is missing from the request: %.80q", r.why, blockText(r.b))
		}
	}
	rank := func(uuid string) int {
		acts := c.norm[uuid]
		switch {
		case len(acts) == 0:
			return 0
		case slices.ContainsFunc(acts, func(a *Action) bool { return a.Kind == ActionDropped }):
			return 2
		}
		return 1
	}
	for pass := range 3 {
		for _, bl := range c.blocks {
			if bl.gone != kept || bl.done || rank(bl.r.rec.UUID) != pass {
				continue
			}
			want := c.sent(bl.want)
			if k := consKey(want); c.pool[k] > 0 {
				c.pool[k]--
				if toolID(want) != "" {
					c.idPool[idKey(want)]--
				}
				bl.done = true
			}
		}
	}
}

func blockText(b transcript.Block) string {
	if t, ok := b.(*transcript.Text); ok {
		return t.Text
	}
	return consKey(b)
}

// take removes and returns the first unused normalize action on the record that satisfies ok.
func (c *consCheck) take(uuid string, ok func(*Action) bool) *Action {
	acts := c.norm[uuid]
	for i, a := range acts {
		if ok(a) {
			c.norm[uuid] = slices.Delete(acts, i, i+1)
			return a
		}
	}
	return nil
}

// resolve explains each block the request does not hold as it was expected: changed by a
// reported normalize repair, dropped by a reported normalize drop, or removed by the provider
// contract's thinking rules; anything else is lost.
func (c *consCheck) resolve() {
	// The chain position of the last user prompt that reached the request in a user message
	// without tool results: the final assistant turn (contract 4.2) starts after that message;
	// a prompt sent beside tool results does not end the turn. Identical prompts are told
	// apart by order: the n-th one on the chain is the n-th one in the request.
	inPrompt := map[string][]bool{} // content key → each occurrence in a user message: without tool results
	for _, m := range c.res.Request.Messages {
		if m.Role != transcript.RoleUser {
			continue
		}
		alone := !wire.ContainsKind(m.Content, transcript.KindToolResult)
		for _, b := range m.Content {
			k := consKey(b)
			inPrompt[k] = append(inPrompt[k], alone)
		}
	}
	lastPrompt := -1
	for _, bl := range c.blocks { // in chain order
		if !bl.done || bl.r.rec.Type != transcript.TypeUser || transcript.KindOf(bl.b) == transcript.KindToolResult {
			continue
		}
		k := consKey(c.sent(bl.want))
		if occ := inPrompt[k]; len(occ) > 0 {
			if occ[0] {
				lastPrompt = max(lastPrompt, bl.r.pos)
			}
			inPrompt[k] = occ[1:]
		}
	}
	for _, bl := range c.blocks {
		if bl.gone != kept || bl.done {
			continue
		}
		uuid := bl.r.rec.UUID
		sent := c.sent(bl.want)
		ids := []string{""}
		// A tool block is matched by its id as sent, which normalize rewrites when the
		// provider would reject it: an empty id too.
		tool := toolID(sent) != ""
		if tool {
			ids = []string{bl.id, toolID(sent)}
		}
		forBlock := func(kinds ...ActionKind) func(*Action) bool {
			return func(a *Action) bool { return slices.Contains(kinds, a.Kind) && slices.Contains(ids, a.ToolUseID) }
		}
		// Changed in place: the request holds a tool block with its id, and normalize reported
		// what it did to it (input, content). A decision's replacement (a preview, the
		// cleared marker) is one text that normalize has no reason to change.
		if tool && c.idPool[idKey(sent)] > 0 {
			if bl.want != bl.b {
				c.fail("%s reaches the request other than as %s", bl, bl.why)
				continue
			}
			if a := c.take(uuid, forBlock(ActionRepaired, ActionDropped)); a != nil {
				c.idPool[idKey(sent)]--
				bl.done, bl.why = true, "changed by normalize: "+a.Detail
				continue
			}
			c.fail("%s reaches the request changed, and normalize reported nothing on it", bl)
			continue
		}
		// Replaced by a placeholder, trimmed (a prefill's trailing whitespace), or media
		// repaired.
		var forms []transcript.Block
		forms = append(forms, &transcript.Text{Text: fmt.Sprintf(unsupportedBlockText, transcript.KindOf(bl.b))})
		switch w := bl.want.(type) {
		case *transcript.Text:
			forms = append(forms, &transcript.Text{Text: strings.TrimRightFunc(w.Text, unicode.IsSpace)})
		case *transcript.Image: // media its bytes do not match: the type they show, or a marker
			forms = append(forms, &transcript.Text{Text: imageNotDecodedText}, &transcript.Text{Text: imageUnknownText})
			for _, mt := range []string{"image/png", "image/jpeg", "image/gif", "image/webp"} {
				im := *w
				im.Source.MediaType = mt
				forms = append(forms, &im)
			}
		case *transcript.Document:
			forms = append(forms, &transcript.Text{Text: documentNotDecoded})
		}
		changed := false
		for _, f := range forms {
			if k := consKey(f); c.pool[k] > 0 {
				if a := c.take(uuid, forBlock(ActionRepaired)); a != nil {
					c.pool[k]--
					bl.done, bl.why, changed = true, "replaced by normalize: "+a.Detail, true
					break
				}
			}
		}
		if changed {
			continue
		}
		if a := c.take(uuid, forBlock(ActionDropped)); a != nil {
			c.remove(bl, byNormalize, "dropped by normalize: "+a.Detail)
			continue
		}
		if c.res.Report.ThinkingUnavailable && wire.IsThinking(bl.b) {
			c.remove(bl, byContract, "thinking unavailable: no thinking block is sent")
			continue
		}
		what := "is missing from the request"
		if bl.why != "" {
			what += " (expected as replaced: " + bl.why + ")"
		}
		c.fail("%s %s, and no decision or normalize action explains it", bl, what)
	}
}

// pairOf returns the pair a block belongs to ("t:" client, "s:" server) when it stands where
// the provider expects it: a tool_use or server block in an assistant record, a tool_result
// in a user record; "" otherwise.
func pairOf(bl *consBlock) string {
	switch bl.b.(type) {
	case *transcript.ToolUse:
		if bl.r.rec.Type == transcript.TypeAssistant {
			return "t:" + bl.id
		}
	case *transcript.ToolResult:
		if bl.r.rec.Type == transcript.TypeUser {
			return "t:" + bl.id
		}
	case *transcript.ServerToolUse, *transcript.ServerToolResult:
		if bl.r.rec.Type == transcript.TypeAssistant {
			return "s:" + bl.id
		}
	}
	return ""
}

// pairs checks that decisions remove tool pairs whole and that normalize drops a tool block
// only when the chain itself breaks its pair.
func (c *consCheck) pairs() {
	type pair struct {
		uses, results []*consBlock
	}
	ps := map[string]*pair{}
	var keys []string
	for _, bl := range c.blocks {
		k := pairOf(bl)
		if k == "" || neverSent(bl.r.rec) {
			continue
		}
		p := ps[k]
		if p == nil {
			p = &pair{}
			ps[k] = p
			keys = append(keys, k)
		}
		switch bl.b.(type) {
		case *transcript.ToolUse, *transcript.ServerToolUse:
			p.uses = append(p.uses, bl)
		default:
			p.results = append(p.results, bl)
		}
	}
	for _, k := range keys {
		p := ps[k]
		all := append(slices.Clone(p.uses), p.results...)
		var removed, other *consBlock
		for _, bl := range all {
			if bl.gone == byDecision {
				removed = bl
			} else {
				other = bl
			}
		}
		if removed != nil && other != nil {
			c.fail("%s was removed (%s) but its pair partner %s was not: a decision must remove a tool_use and its results together",
				removed, removed.why, other)
		}
		whole := len(p.uses) == 1 && len(p.results) == 1
		if whole {
			u, r := p.uses[0], p.results[0]
			whole = u.r.pos < r.r.pos || (u.r == r.r && u.index < r.index)
			if k[0] == 's' {
				whole = whole && (u.r == r.r || (u.r.rec.Message.ID != "" && u.r.rec.Message.ID == r.r.rec.Message.ID))
			}
		}
		if !whole {
			continue
		}
		for _, bl := range all {
			if bl.gone == byNormalize {
				c.fail("%s was %s, but the chain holds its whole pair: a stage before normalize split it", bl, bl.why)
			}
		}
	}
}

// chainViolations checks that chain is closed as [transcript.BuildChain] documents, on the records alone:
// the leaf is the default one (when leaf is ""), the leaf's parent walk up to the latest
// compact boundary is on the chain, so is every record of each response on it, for each of its
// tool calls a record holding the result, and the interrupt notices written under those
// results; and nothing comes from another thread or from before the boundary.
func chainViolations(records []transcript.Record, chain *transcript.Chain, leaf string) []string {
	return chainViolationsAt(records, chain, chain.Index, leaf)
}

// chainViolationsAt is chainViolations with the position in records of each record of the
// chain given by index, so that a test can check a chain it altered.
func chainViolationsAt(records []transcript.Record, chain *transcript.Chain, index func(int) int, leaf string) []string {
	var errs []string
	fail := func(format string, args ...any) { errs = append(errs, "chain: "+fmt.Sprintf(format, args...)) }
	indexOf := func(r *transcript.Record) int {
		for i := range records {
			if &records[i] == r {
				return i
			}
		}
		return -1
	}
	// The default leaf, computed here rather than with defaultLeaf: the check must not trust
	// the code it checks.
	want := -1
	for i := len(records) - 1; i >= 0; i-- {
		r := &records[i]
		if !r.IsConversation() || r.IsAPIErrorMessage {
			continue
		}
		if !r.IsSidechain {
			want = i
			break
		}
		if want < 0 {
			want = i
		}
	}
	if chain.Leaf == nil {
		if leaf == "" && want >= 0 {
			fail("no leaf, but records[%d] %s is a message", want, records[want].UUID)
		}
		return errs
	}
	leafAt := indexOf(chain.Leaf)
	if leaf == "" && leafAt != want {
		fail("leaf is records[%d] %s, want records[%d] (the last message of the main thread, else of a sidechain)", leafAt, chain.Leaf.UUID, want)
	}
	on := map[int]bool{}
	for i := range chain.Records {
		on[index(i)] = true
	}
	first := map[string]int{}
	for i := range records {
		if u := records[i].UUID; u != "" {
			if _, ok := first[u]; !ok {
				first[u] = i
			}
		}
	}
	// The boundary, and the kept tail a compaction relinked after its summary: the records from
	// the preserved segment's head on, which come before the boundary in file order. The walk
	// goes from the head to the anchor (the summary).
	start, from, head, anchor := 0, 0, -1, -1
	if chain.Boundary != nil {
		start = indexOf(chain.Boundary)
		from = start
		if md := chain.Boundary.CompactMetadata; md != nil && md.PreservedSegment != nil {
			h, okH := first[md.PreservedSegment.HeadUUID]
			a, okA := first[md.PreservedSegment.AnchorUUID]
			if okH && okA && on[h] {
				head, anchor, from = h, a, min(h, start)
			}
		}
	}
	side := chain.Leaf.IsSidechain
	msgIDs, toolUses := map[string]bool{}, map[string]bool{}
	for i, r := range chain.Records {
		if at := index(i); at < from {
			fail("records[%d] %s is before the compact boundary records[%d]", at, r.UUID, start)
		}
		if r.IsSidechain != side {
			fail("records[%d] %s has isSidechain %t, the leaf %t: another thread", index(i), r.UUID, r.IsSidechain, side)
		}
		if r.Type == transcript.TypeAssistant && r.Message != nil {
			if r.Message.ID != "" {
				msgIDs[r.Message.ID] = true
			}
			for _, b := range r.Message.Content {
				if tu, ok := b.(*transcript.ToolUse); ok {
					toolUses[tu.ID] = true
				}
			}
		}
	}
	// The records the chain says it left out as repeats of records under other uuids: each
	// may be off the walk if the record it repeats is on the chain and holds the same
	// content, which the check compares itself.
	repeats := map[int]int{}
	for _, rp := range chain.Replays {
		i, okI := first[rp.UUID]
		of, okOf := first[rp.Of]
		if !rp.SameUUID && okI && okOf {
			repeats[i] = of
		}
	}
	sameContent := func(a, b *transcript.Record) bool {
		if a.Message == nil || b.Message == nil {
			return false
		}
		ea, err1 := json.Marshal(a.Message.Content)
		eb, err2 := json.Marshal(b.Message.Content)
		return err1 == nil && err2 == nil && string(ea) == string(eb)
	}
	// The parent walk.
	seen := map[int]bool{}
	for i := leafAt; i >= 0 && !seen[i]; {
		seen[i] = true
		if of, ok := repeats[i]; !on[i] && !(ok && on[of] && sameContent(&records[i], &records[of])) {
			fail("records[%d] %s is on the leaf's parentUuid walk but not on the chain", i, records[i].UUID)
		}
		if records[i].IsCompactBoundary() {
			break
		}
		if i == head {
			i = anchor
			continue
		}
		p, ok := first[records[i].ParentUUID]
		if !ok {
			break
		}
		i = p
	}
	// The responses' other records and the results of their tool calls.
	answered := map[string]bool{}
	var results []string
	where := map[string]int{}
	for i := from; i < len(records); i++ {
		r := &records[i]
		if r.IsSidechain != side || r.Message == nil {
			continue
		}
		if r.Type == transcript.TypeAssistant && msgIDs[r.Message.ID] && !on[i] {
			fail("records[%d] %s belongs to response %s on the chain but is not on it", i, r.UUID, r.Message.ID)
		}
		if r.Type != transcript.TypeUser {
			continue
		}
		for _, b := range r.Message.Content {
			if tr, ok := b.(*transcript.ToolResult); ok && toolUses[tr.ToolUseID] {
				if _, ok := where[tr.ToolUseID]; !ok {
					where[tr.ToolUseID] = i
					results = append(results, tr.ToolUseID)
				}
				answered[tr.ToolUseID] = answered[tr.ToolUseID] || on[i]
			}
		}
	}
	for _, id := range results {
		if !answered[id] {
			fail("records[%d] %s answers tool_use %s of the chain but no record holding its result is on it", where[id], records[where[id]].UUID, id)
		}
	}
	// Interrupt notices written under a result on the chain.
	resultRecs := map[string]bool{}
	for i, r := range chain.Records {
		if r.Type == transcript.TypeUser && r.Message != nil && slices.ContainsFunc(r.Message.Content, func(b transcript.Block) bool {
			tr, ok := b.(*transcript.ToolResult)
			return ok && toolUses[tr.ToolUseID]
		}) {
			resultRecs[chain.Records[i].UUID] = true
		}
	}
	for i := start; i < len(records); i++ {
		r := &records[i]
		if on[i] || r.Type != transcript.TypeUser || r.IsSidechain != side || r.Message == nil || r.ParentUUID == "" || !resultRecs[r.ParentUUID] {
			continue
		}
		for _, b := range r.Message.Content {
			if t, ok := b.(*transcript.Text); ok && strings.HasPrefix(t.Text, "[Request interrupted by user") {
				fail("records[%d] %s is an interrupt notice under result record %s of the chain but is not on it", i, r.UUID, r.ParentUUID)
				break
			}
		}
	}
	return errs
}

// consScenario is a conversation that every explanation of the conservation check applies to:
//
//	1 user "first question"
//	2 A text, 3 A tool_use t1, 4 A tool_use t2   (one response)
//	5 result t1 (3,000 characters: over the budget cap), 6 result t2
//	7 A "done"   8 user "   " (blank: normalize drops it)
//	9 user "second"   10 A tool_use t3   11 result t3   12 A "ok"   (10..11 snipped)
//	13 user "collapse me"   14 A "collapsed answer"   (collapsed)
//	15 user "third"
func consScenario(t testing.TB) []transcript.Record {
	t.Helper()
	k := newTK()
	k.user("first question")
	k.assistant(text("let me look"), toolUse("t1", "Bash"), toolUse("t2", "Bash"))
	k.results(result("t1", strings.Repeat("long line of output\n", 150)), result("t2", "small"))
	// The budget decides on results while they are new, so the turn that sent them was
	// prepared (as a live session would) and its decision appended.
	_, pre := consPrepare(t, k.recs, false)
	for _, d := range pre.Append {
		k.decision(d)
	}
	k.assistant(text("done"))
	k.user("   ")
	k.user("second")
	k.assistant(toolUse("t3", "Bash"))
	k.results(result("t3", "x"))
	k.assistant(text("ok"))
	k.user("collapse me")
	k.assistant(text("collapsed answer"))
	k.user("third")
	snip, err := NewSnip(k.recs, []string{tkUUID(10)}, "noise", snipNow)
	require.NoError(t, err)
	k.decision(snip)
	k.decision(collapseRecord(t, k.recs, 13, 14, "The user asked to collapse; done."))
	return k.recs
}

// consPrepare prepares the scenario's next turn; cleared selects a clock that makes
// microcompact clear t1 (keeping only the newest result).
func consPrepare(t testing.TB, recs []transcript.Record, cleared bool) (Input, Result) {
	t.Helper()
	cfg := Config{Budget: BudgetConfig{MaxResultChars: 1000, PreviewBytes: 200}}
	now := snipNow
	if cleared {
		cfg.Microcompact.KeepRecent = 1
		now = now.Add(3 * time.Hour)
	}
	p := newTestPipeline(t, cfg, now)
	in := Input{Records: recs}
	res, err := p.Prepare(t.Context(), in)
	require.NoError(t, err)
	return in, res
}

// requestBlock returns the position of the first request block that satisfies ok.
func requestBlock(t testing.TB, req provider.Request, ok func(transcript.Block) bool) (int, int) {
	t.Helper()
	for i, m := range req.Messages {
		for j, b := range m.Content {
			if ok(b) {
				return i, j
			}
		}
	}
	require.Fail(t, "no such request block")
	return -1, -1
}

func isText(s string) func(transcript.Block) bool {
	return func(b transcript.Block) bool { t, ok := b.(*transcript.Text); return ok && t.Text == s }
}

func isResult(id string) func(transcript.Block) bool {
	return func(b transcript.Block) bool { tr, ok := b.(*transcript.ToolResult); return ok && tr.ToolUseID == id }
}

// withoutBlock returns a copy of req without its block at (i, j).
func withoutBlock(req provider.Request, i, j int) provider.Request {
	req.Messages = slices.Clone(req.Messages)
	req.Messages[i].Content = slices.Delete(slices.Clone(req.Messages[i].Content), j, j+1)
	return req
}

// withBlock returns a copy of req whose block at (i, j) is b.
func withBlock(req provider.Request, i, j int, b transcript.Block) provider.Request {
	req.Messages = slices.Clone(req.Messages)
	req.Messages[i].Content = slices.Clone(req.Messages[i].Content)
	req.Messages[i].Content[j] = b
	return req
}

// editActions returns a copy of the report in which edit rewrote the actions of the stage.
func editActions(rep Report, stage string, edit func([]Action) []Action) Report {
	rep.Stages = slices.Clone(rep.Stages)
	for i := range rep.Stages {
		if rep.Stages[i].Stage == stage {
			rep.Stages[i].Actions = edit(slices.Clone(rep.Stages[i].Actions))
		}
	}
	return rep
}

// TestConservation proves the conservation check has teeth: on the scenario every explanation
// applies and nothing is reported; each tampering — a block silently missing or changed, a
// drop or a replacement without its reason, a decision that splits a tool pair — is reported,
// naming the record and the block.
func TestConservation(t *testing.T) {
	recs := consScenario(t)
	in, res := consPrepare(t, recs, false)
	inC, resC := consPrepare(t, recs, true)
	// The scenario exercises every rule it claims to.
	kinds := map[string]bool{}
	for _, r := range []Result{res, resC} {
		for _, s := range r.Report.Stages {
			for _, a := range s.Actions {
				kinds[s.Stage+" "+string(a.Kind)] = true
			}
		}
	}
	for _, k := range []string{"budget reapplied", "snip snipped", "snip expanded", "microcompact cleared", "collapse collapsed", "normalize dropped"} {
		require.True(t, kinds[k], "the scenario has a %s action", k)
	}
	first, blank, t1, t3 := tkUUID(1), tkUUID(8), tkUUID(5), tkUUID(10)

	tests := []struct {
		name    string
		cleared bool
		tamper  func(t *testing.T, in *Input, res *Result)
		want    []string // substrings of one violation each; none: the turn conserves everything
	}{
		{name: "the scenario conserves everything"},
		{name: "with microcompact clearing", cleared: true},
		{name: "a prompt silently missing", tamper: func(t *testing.T, _ *Input, res *Result) {
			res.Request = withoutBlock(res.Request, 0, 0)
		}, want: []string{"record " + first + " block 0 (text) is missing from the request"}},
		{name: "a prompt silently changed", tamper: func(t *testing.T, _ *Input, res *Result) {
			i, j := requestBlock(t, res.Request, isText("second"))
			res.Request = withBlock(res.Request, i, j, text("second!"))
		}, want: []string{"record " + tkUUID(9) + " block 0 (text) is missing"}},
		{name: "a tool call silently missing", tamper: func(t *testing.T, _ *Input, res *Result) {
			i, j := requestBlock(t, res.Request, func(b transcript.Block) bool { tu, ok := b.(*transcript.ToolUse); return ok && tu.ID == "t2" })
			res.Request = withoutBlock(res.Request, i, j)
		}, want: []string{"record " + tkUUID(4) + " block 0 (tool_use t2) is missing"}},
		{name: "a result's content silently changed", tamper: func(t *testing.T, _ *Input, res *Result) {
			i, j := requestBlock(t, res.Request, isResult("t2"))
			res.Request = withBlock(res.Request, i, j, result("t2", "smaller"))
		}, want: []string{"record " + tkUUID(6) + " block 0 (tool_result t2) reaches the request changed, and normalize reported nothing"}},
		{name: "a preview other than the decision's", tamper: func(t *testing.T, _ *Input, res *Result) {
			i, j := requestBlock(t, res.Request, isResult("t1"))
			res.Request = withBlock(res.Request, i, j, result("t1", "<persisted-output>elsewhere</persisted-output>"))
		}, want: []string{"record " + t1 + " block 0 (tool_result t1) reaches the request other than as the preview of budget decision"}},
		{name: "a replacement without its decision record", tamper: func(t *testing.T, in *Input, _ *Result) {
			in.Records = slices.DeleteFunc(slices.Clone(in.Records), func(r transcript.Record) bool { return r.Subtype == transcript.SubtypeToolResultBudget })
		}, want: []string{"budget rule: budget reapplied action on record " + t1 + " tool_use t1 names record", "record " + t1 + " block 0 (tool_result t1) reaches the request changed"}},
		{name: "a cleared result shown in full", cleared: true, tamper: func(t *testing.T, _ *Input, res *Result) {
			i, j := requestBlock(t, res.Request, isResult("t1"))
			res.Request = withBlock(res.Request, i, j, result("t1", "full output"))
		}, want: []string{"record " + t1 + " block 0 (tool_result t1) reaches the request other than as cleared by microcompact decision"}},
		{name: "a drop without its reason", tamper: func(t *testing.T, _ *Input, res *Result) {
			res.Report = editActions(res.Report, "normalize", func(as []Action) []Action {
				return slices.DeleteFunc(as, func(a Action) bool { return a.UUID == blank })
			})
		}, want: []string{"record " + blank + " block 0 (text) is missing from the request, and no decision or normalize action explains it"}},
		{name: "a snip without its snip record", tamper: func(t *testing.T, in *Input, _ *Result) {
			in.Records = slices.DeleteFunc(slices.Clone(in.Records), func(r transcript.Record) bool { return r.Subtype == transcript.SubtypeSnip })
		}, want: []string{"snip snipped action on record " + t3, "snip snipped action on record " + tkUUID(11),
			"record " + t3 + " block 0 (tool_use t3) is missing", "record " + tkUUID(11) + " block 0 (tool_result t3) is missing"}},
		{name: "a snip that splits a tool pair", tamper: func(t *testing.T, _ *Input, res *Result) {
			// As if snip had left t3's result for normalize to drop as an orphan.
			res.Report = editActions(res.Report, "snip", func(as []Action) []Action {
				return slices.DeleteFunc(as, func(a Action) bool { return a.UUID == tkUUID(11) })
			})
			res.Report = editActions(res.Report, "normalize", func(as []Action) []Action {
				return append(as, Action{Kind: ActionDropped, UUID: tkUUID(11), ToolUseID: "t3", Detail: "tool_result without a tool_use"})
			})
		}, want: []string{"record " + t3 + " block 0 (tool_use t3) was removed (snipped by",
			"record " + tkUUID(11) + " block 0 (tool_result t3) was dropped by normalize: tool_result without a tool_use, but the chain holds its whole pair"}},
		{name: "a collapse summary missing", tamper: func(t *testing.T, _ *Input, res *Result) {
			i, j := requestBlock(t, res.Request, func(b transcript.Block) bool {
				tx, ok := b.(*transcript.Text)
				return ok && strings.HasPrefix(tx.Text, "<collapsed")
			})
			res.Request = withoutBlock(res.Request, i, j)
		}, want: []string{"collapse summary " + collapseItemUUID(collapseID(&recs[len(recs)-1])) + " is missing from the request"}},
		{name: "a collapse that claims fewer records than it removed", tamper: func(t *testing.T, _ *Input, res *Result) {
			res.Report = editActions(res.Report, "collapse", func(as []Action) []Action {
				for i := range as {
					as[i].Detail = strings.Replace(as[i].Detail, ": 2 records", ": 1 records", 1)
				}
				return as
			})
		}, want: []string{"the Report says 1 records " + tkUUID(13) + ".." + tkUUID(14) + " were replaced, the chain has 2 there"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in, res := in, res
			if tt.cleared {
				in, res = inC, resC
			}
			if tt.tamper != nil {
				tt.tamper(t, &in, &res)
			}
			got := conservation(in, res)
			require.Len(t, got, len(tt.want), "violations:\n%s", strings.Join(got, "\n"))
			for i, w := range tt.want {
				assert.Contains(t, got[i], w)
			}
		})
	}
}

// TestConservationThinkingUnavailable checks the one absence without an action of its own:
// when the window leaves no room for a thinking budget, the request goes without thinking,
// every turn's thinking is dropped and Report.ThinkingUnavailable says so; without the flag the
// same request loses blocks.
func TestConservationThinkingUnavailable(t *testing.T) {
	k := newTK()
	k.user("first?")
	k.assistant(&transcript.Thinking{Thinking: "easy", Signature: normSig}, text("first answer"))
	k.user(strings.Repeat("context ", 250) + "question?")
	k.assistant(&transcript.Thinking{Thinking: "plan", Signature: normSig}, toolUse("t1", "Read"))
	k.results(result("t1", "ok"))
	p := newTestPipeline(t, Config{ContextWindow: 1700, MaxOutputTokens: 8000,
		Thinking: &provider.Thinking{Type: "enabled", BudgetTokens: 2048}}, snipNow)
	in := Input{Records: k.recs}
	res, err := p.Prepare(t.Context(), in)
	require.NoError(t, err)
	require.True(t, res.Report.ThinkingUnavailable)
	assert.NotContains(t, string(requestBytes(t, res.Request)), `"thinking"`, "no turn keeps its thinking")
	assert.Empty(t, conservation(in, res))
	res.Report.ThinkingUnavailable = false
	assert.Equal(t, []string{
		"record " + tkUUID(2) + " block 0 (thinking) is missing from the request, and no decision or normalize action explains it",
		"record " + tkUUID(5) + " block 0 (thinking) is missing from the request, and no decision or normalize action explains it",
	}, conservation(in, res))
}

// TestConservationReportsThroughTB checks the testing.TB wrapper: a violation fails the test
// and names the session.
func TestConservationReportsThroughTB(t *testing.T) {
	in, res := consPrepare(t, consScenario(t), false)
	res.Request = withoutBlock(res.Request, 0, 0)
	fake := &fakeTB{TB: t}
	checkConservation(fake, "session.jsonl", in, res)
	require.Len(t, fake.errors, 1)
	assert.True(t, strings.HasPrefix(fake.errors[0], "session.jsonl: record "+tkUUID(1)+" block 0 (text)"), fake.errors[0])
}

// fakeTB records Errorf calls instead of failing.
type fakeTB struct {
	testing.TB
	errors []string
}

func (f *fakeTB) Helper() {}

func (f *fakeTB) Errorf(format string, args ...any) {
	f.errors = append(f.errors, fmt.Sprintf(format, args...))
}

// TestChainViolations checks that the conservation check does not trust BuildChain: a chain
// that lost a record of a response, a result, an interrupt notice, a record of the parent walk,
// or took a record of another thread, or the wrong leaf, is reported.
func TestChainViolations(t *testing.T) {
	k := newTK()
	k.user("q")                                                                  // 1
	k.assistant(text("two calls"), toolUse("t1", "Read"), toolUse("t2", "Read")) // 2 3 4
	k.results(result("t2", "two"), result("t1", "one"))                          // 5 6: the walk skips 4 and 5
	k.assistant(text("done"))                                                    // 7
	side := k.user("subagent prompt")                                            // 8
	side.IsSidechain, side.ParentUUID = true, ""
	k.last = tkUUID(5)
	k.user("[Request interrupted by user for tool use]") // 9: under t2's result
	k.last = tkUUID(7)
	k.user("next") // 10
	recs := k.recs
	good, err := transcript.BuildChain(recs, transcript.ChainOptions{})
	require.NoError(t, err)
	require.Contains(t, chainUUIDs(good), tkUUID(9))
	require.Empty(t, chainViolations(recs, good, ""))

	// altered is a chain and the position of each of its records: good altered.
	type altered struct {
		chain *transcript.Chain
		index []int
	}
	// without returns a copy of the chain without records[i].
	without := func(i int) altered {
		c := *good
		a := altered{chain: &c}
		c.Records = nil
		for k, r := range good.Records {
			if good.Index(k) != i {
				c.Records, a.index = append(c.Records, r), append(a.index, good.Index(k))
			}
		}
		return a
	}
	with := func(i int) altered {
		a := without(-1)
		at := slices.Index(a.index, i+1)
		a.chain.Records, a.index = slices.Insert(a.chain.Records, at, &recs[i]), slices.Insert(a.index, at, i)
		return a
	}
	tests := []struct {
		name  string
		chain altered
		leaf  string
		want  string
	}{
		{"a split record of a response", without(3), "", "records[3] " + tkUUID(4) + " belongs to response msg_0001 on the chain but is not on it"},
		{"a tool result", without(4), "", "records[4] " + tkUUID(5) + " answers tool_use t2 of the chain but no record holding its result is on it"},
		{"a record of the parent walk", without(0), "", "records[0] " + tkUUID(1) + " is on the leaf's parentUuid walk but not on the chain"},
		{"a sidechain record", with(7), "", "records[7] " + tkUUID(8) + " has isSidechain true, the leaf false: another thread"},
		{"an interrupt notice", without(8), "", "records[8] " + tkUUID(9) + " is an interrupt notice under result record " + tkUUID(5) + " of the chain but is not on it"},
		{"the wrong leaf", func() altered { a := without(-1); a.chain.Leaf = &recs[6]; return a }(), "",
			"leaf is records[6] " + tkUUID(7) + ", want records[9]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			index := func(k int) int { return tt.chain.index[k] }
			got := chainViolationsAt(recs, tt.chain.chain, index, tt.leaf)
			require.NotEmpty(t, got)
			assert.Contains(t, got[0], tt.want, "all: %v", got)
		})
	}
}

// A record on the leaf's parent walk may be off the chain when the chain left it out as a
// repeat of tool results it holds (a result written twice, the later one the parent of what
// follows, as FuzzPrepareInvariants found): the check accepts it only when the record it
// repeats is on the chain and holds the same content.
func TestChainViolationsRepeatOnWalk(t *testing.T) {
	k := newTK()
	k.user("read it")                                   // 1
	k.assistant(text("reading"), toolUse("t1", "Read")) // 2, 3
	k.results(result("t1", "contents"))                 // 4, under the call
	k.results(result("t1", "contents"))                 // 5: the same result again, under the call
	k.user("and now?")                                  // 6, under 5
	recs := k.recs
	chain, err := transcript.BuildChain(recs, transcript.ChainOptions{})
	require.NoError(t, err)
	require.NotContains(t, chainUUIDs(chain), tkUUID(5), "the repeat is left out")
	require.Len(t, chain.Replays, 1)
	assert.Empty(t, chainViolations(recs, chain, ""))

	t.Run("the repeat claims another record", func(t *testing.T) {
		c := *chain
		c.Replays = []transcript.Replay{c.Replays[0]}
		c.Replays[0].Of = tkUUID(1)
		got := chainViolations(recs, &c, "")
		require.NotEmpty(t, got)
		assert.Contains(t, got[0], "records[4] "+tkUUID(5)+" is on the leaf's parentUuid walk but not on the chain")
	})
	t.Run("no repeat listed", func(t *testing.T) {
		c := *chain
		c.Replays = nil
		got := chainViolations(recs, &c, "")
		require.NotEmpty(t, got)
		assert.Contains(t, got[0], "records[4] "+tkUUID(5)+" is on the leaf's parentUuid walk but not on the chain")
	})
}

// TestConservationCompaction runs the check on a turn that compacts with a kept tail: nothing
// is reported, and each tampering — a kept block missing, the summary missing, the boundary
// record missing, a segment that claims more than the request keeps — is.
func TestConservationCompaction(t *testing.T) {
	k := newTK()
	k.user("build the parser " + strings.Repeat("with care ", 300))
	k.assistant(text("reading"), toolUse("t1", "Read"))
	k.results(result("t1", strings.Repeat("package parser\n", 200)))
	k.assistant(text("ok " + strings.Repeat("thinking about it ", 300)))
	k.user("and more " + strings.Repeat("detail ", 300))
	k.assistant(text("checking"), toolUse("t2", "Bash"))
	k.results(result("t2", "PASS"))
	a := k.assistant(text("done " + strings.Repeat("reading the files ", 200)))
	a.Message.Usage = &transcript.Usage{InputTokens: 9_000, OutputTokens: 1_500}
	k.user("now the error recovery, please")
	p := newTestPipeline(t, Config{ContextWindow: 12_000, Compact: CompactConfig{Summarizer: gistSummarizer(),
		Tail: TailConfig{MinTokens: 100, MinTextMessages: 3, MaxTokens: 2000}}}, k.at(time.Second))
	in := Input{Records: k.recs}
	res, err := p.Prepare(t.Context(), in)
	require.NoError(t, err)
	c := res.Report.Compaction
	require.Equal(t, CompactCompacted, c.Outcome)
	require.Positive(t, c.Kept, "the scenario keeps a tail")
	require.Empty(t, conservation(in, res))

	boundary := slices.IndexFunc(res.Append, func(r transcript.Record) bool { return r.IsCompactBoundary() })
	require.GreaterOrEqual(t, boundary, 0)
	tests := []struct {
		name   string
		tamper func(t *testing.T, res *Result)
		want   string
	}{
		{"a kept block missing", func(t *testing.T, res *Result) {
			i, j := requestBlock(t, res.Request, isResult("t2"))
			req := res.Request
			req.Messages = slices.Clone(req.Messages)
			req.Messages[i].Content = slices.Delete(slices.Clone(req.Messages[i].Content), j, j+1)
			res.Request = req
		}, "block 0 (tool_result t2) is missing from the request"},
		{"the summary missing", func(t *testing.T, res *Result) {
			i, j := requestBlock(t, res.Request, func(b transcript.Block) bool {
				tx, ok := b.(*transcript.Text)
				return ok && strings.Contains(tx.Text, "<summary>")
			})
			res.Request = withBlock(res.Request, i, j, text("no summary here"))
		}, "written by compaction"},
		{"the boundary missing", func(t *testing.T, res *Result) {
			res.Append = slices.Delete(slices.Clone(res.Append), boundary, boundary+1)
		}, "compact rule: compact compacted action"},
		{"a segment claiming more than is kept", func(t *testing.T, res *Result) {
			res.Append = slices.Clone(res.Append)
			b := res.Append[boundary]
			md := *b.CompactMetadata
			seg := *md.PreservedSegment
			seg.HeadUUID = k.recs[0].UUID
			md.PreservedSegment = &seg
			b.CompactMetadata = &md
			res.Append[boundary] = b
		}, "block 0 (text) is missing from the request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := res
			tt.tamper(t, &r)
			errs := conservation(in, r)
			require.NotEmpty(t, errs)
			assert.Contains(t, strings.Join(errs, "\n"), tt.want)
		})
	}
}
