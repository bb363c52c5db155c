package agentctx

import (
	"errors"
	"fmt"
	"html"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/agentctx/agentctx/transcript"
)

// CollapseConfig configures the collapse stage. The zero value is the default: collapse
// commits are applied.
//
// The collapse stage substitutes committed span summaries at read time, before auto-compact,
// so that the rest of the conversation survives verbatim. Each collapse commit
// ([transcript.SubtypeCollapseCommit], [transcript.Record.Collapse]; written with [NewCollapseCommit]) is applied in
// record order: the view's entries from FirstUUID through LastUUID (in view order, inclusive)
// are replaced by one meta user message
//
//	<collapsed id="COLLAPSE-ID">
//	SUMMARY
//	</collapsed>
//
// whose uuid is derived from the collapse id. A span is widened so that it never splits a
// tool_use from its tool_result or an assistant response from its other records (reported as
// [ActionExpanded]). A commit whose first or last record is not in the view (snipped, before the
// latest compact boundary, on another branch, or inside a span an earlier commit collapsed) is
// skipped and reported ([ActionSkipped]); a commit whose span contains an earlier commit's whole
// summary supersedes it.
//
// Commits come from the runtime ([NewCollapseCommit]) or from a Producer. With one, when the
// request's pressure reaches the commit level (CommitFraction of the auto-compact threshold),
// Prepare folds before it considers auto-compact: the producer chooses a span of the view's
// oldest complete rounds (never past the tail a compaction would keep verbatim, never cutting
// a tool pair or a split response: see [FoldRequest]), the compaction's Summarizer writes its
// summary ([github.com/agentctx/agentctx/summarize.Extractive] when none is set) unless the producer did, and the commit goes in
// [Result.Append] and the view is built again from the records with it, so that auto-compact
// runs only when folding did not bring the request under the threshold. At most one fold is
// made per turn, none for a fork or with [Input.NoCompact], and none before a new response
// after a compaction. A failed attempt (the summarizer's error, a span that is not a run of
// rounds) appends a [transcript.SubtypeCompactFailure] record with trigger
// [transcript.TriggerCollapse], so that preparing the same turn again does not retry it, and
// after [CompactConfig.MaxFailures] failures in a row the producer rests until the next
// compaction: both are read from the records, and survive a restart.
//
// The prompt cache weighs on the fold (see [CacheConfig.ReadPrice]): when the cached prefix is
// cold (idle past the TTL, or caching off) the producer runs from the warning level on, since
// the request rewrites the prefix anyway; when it is warm, a fold under the auto-compact
// threshold is made only when the tokens it frees reach [CacheConfig.MinGain] per token of the
// prefix it rewrites, and is otherwise deferred (reported in [Report.CacheCosts]).
type CollapseConfig struct {
	// Disable ignores collapse commits: the view keeps every span in full. The Producer does
	// not run either.
	Disable bool
	// Producer folds spans into new collapse commits before auto-compact. Nil: none, and the
	// requests are as without it. [FoldOldest] is the library's.
	Producer CollapseProducer
	// CommitFraction is the pressure at which the Producer runs, as a fraction of the
	// auto-compact threshold. Zero: 0.9, Claude Code's.
	CommitFraction float64
	// TargetFraction is the pressure a fold aims under, as a fraction of the threshold, given
	// to the Producer as [FoldRequest.Target]. Zero: 0.75.
	TargetFraction float64
}

func (c CollapseConfig) validate() error {
	var errs []error
	for _, f := range []struct {
		name string
		v    float64
	}{{"CommitFraction", c.CommitFraction}, {"TargetFraction", c.TargetFraction}} {
		if f.v < 0 || f.v > 1 || math.IsNaN(f.v) {
			errs = append(errs, fmt.Errorf("agentctx: Collapse.%s %v is not in (0, 1]", f.name, f.v))
		}
	}
	if c.CommitFraction != 0 && c.TargetFraction != 0 && c.TargetFraction >= c.CommitFraction {
		errs = append(errs, fmt.Errorf("agentctx: Collapse.TargetFraction %v is not below CommitFraction %v", c.TargetFraction, c.CommitFraction))
	}
	return errors.Join(errs...)
}

// collapseStage is the collapse stage (see [CollapseConfig]): it replaces each committed span with its
// summary.
type collapseStage struct {
	cfg     CollapseConfig
	counter *Counter
}

func (*collapseStage) name() string { return "collapse" }

// run applies the transcript's collapse commits in record order.
func (st *collapseStage) run(t *turn) error {
	if st.cfg.Disable {
		return nil
	}
	rep := t.report.stage("collapse")
	t.chain.Scan().Each(t.in.Records, transcript.ScanCollapse, func(_ int, r *transcript.Record) {
		if r.Type != transcript.TypeSystem || r.Subtype != transcript.SubtypeCollapseCommit {
			return
		}
		if r.Collapse == nil {
			rep.add(Action{Kind: ActionSkipped, UUID: r.UUID, Detail: "collapse commit without collapseCommit metadata"})
			return
		}
		st.applyCollapse(t, rep, r)
	})
	return nil
}

// applyCollapse substitutes one commit's span, or reports why it cannot.
func (st *collapseStage) applyCollapse(t *turn, rep *StageReport, r *transcript.Record) {
	c := r.Collapse
	id := collapseID(r)
	first, last := -1, -1
	for i := range t.items {
		switch t.items[i].uuid {
		case c.FirstUUID:
			first = i
		case c.LastUUID:
			last = i
		}
	}
	if c.FirstUUID == c.LastUUID {
		last = first
	}
	var missing []string
	if first < 0 {
		missing = append(missing, "first "+c.FirstUUID)
	}
	if last < 0 {
		missing = append(missing, "last "+c.LastUUID)
	}
	if len(missing) > 0 {
		rep.add(Action{Kind: ActionSkipped, UUID: r.UUID, Detail: fmt.Sprintf("collapse %s skipped: %s not in the view", id, strings.Join(missing, " and "))})
		return
	}
	if first > last {
		rep.add(Action{Kind: ActionSkipped, UUID: r.UUID, Detail: fmt.Sprintf("collapse %s skipped: %s comes after %s in the view", id, c.FirstUUID, c.LastUUID)})
		return
	}
	lo, hi, ext := extendSpan(t.items, first, last)
	for _, e := range ext {
		rep.add(Action{Kind: ActionExpanded, UUID: r.UUID, ToolUseID: e.toolUseID, Record: r.UUID, Detail: fmt.Sprintf("collapse %s: span extended to %s: %s", id, e.uuid, e.why)})
	}
	span := t.items[lo : hi+1]
	freed := 0
	var superseded []string
	for i := range span {
		freed += st.counter.Blocks(span[i].blocks)
		if span[i].origin == "collapse" {
			superseded = append(superseded, span[i].uuid)
		}
	}
	sum := item{
		uuid:   collapseItemUUID(id),
		pos:    -1,
		role:   transcript.RoleUser,
		meta:   true,
		time:   span[len(span)-1].at(),
		blocks: []transcript.Block{&transcript.Text{Text: collapsedText(id, c.Summary)}},
		owned:  true,
		origin: "collapse",
	}
	detail := fmt.Sprintf("collapse %s: %d records %s..%s replaced by summary %s", id, len(span), span[0].uuid, span[len(span)-1].uuid, sum.uuid)
	if len(superseded) > 0 {
		detail += "; supersedes " + strings.Join(superseded, ", ")
	}
	rep.add(Action{Kind: ActionCollapsed, UUID: r.UUID, Record: r.UUID, Detail: detail, Tokens: st.counter.Blocks(sum.blocks) - freed})
	t.items = slices.Concat(t.items[:lo], []item{sum}, t.items[hi+1:])
}

// spanExtension is one widening of a collapse span.
type spanExtension struct {
	uuid, toolUseID, why string
}

// extendSpan widens [lo, hi] until no entry inside shares a tool_use/tool_result pair, a server
// tool pair or an assistant message id with an entry outside.
func extendSpan(items []item, lo, hi int) (int, int, []spanExtension) {
	at := map[string][]int{}
	keys := make([][]string, len(items))
	for i := range items {
		keys[i] = tieKeys(&items[i])
		for _, k := range keys[i] {
			at[k] = append(at[k], i)
		}
	}
	var ext []spanExtension
	for changed := true; changed; {
		changed = false
		for k := lo; k <= hi; k++ {
			for _, key := range keys[k] {
				for _, j := range at[key] {
					if j >= lo && j <= hi {
						continue
					}
					e := spanExtension{uuid: items[j].uuid}
					switch key[0] {
					case 't':
						e.toolUseID = key[2:]
						e.why = "tool_use " + key[2:] + " and its result stay together"
					case 's':
						e.toolUseID = key[2:]
						e.why = "server tool call " + key[2:] + " and its result stay together"
					default:
						e.why = "response " + key[2:] + " stays whole"
					}
					ext = append(ext, e)
					lo, hi = min(lo, j), max(hi, j)
					changed = true
				}
			}
		}
	}
	return lo, hi, ext
}

// collapsedText is the text of a collapse's summary message.
func collapsedText(id, summary string) string {
	return "<collapsed id=\"" + html.EscapeString(id) + "\">\n" + summary + "\n</collapsed>"
}

// collapseID returns a commit's collapse id, or its record uuid when it has none.
func collapseID(r *transcript.Record) string {
	if r.Collapse != nil && r.Collapse.CollapseID != "" {
		return r.Collapse.CollapseID
	}
	return r.UUID
}

// collapseItemUUID derives the uuid of a collapse's summary message from the collapse id.
func collapseItemUUID(id string) string {
	return transcript.ContentUUID("collapse", id)
}

// NewCollapseCommit returns a collapse commit record that replaces, in the model's view, the
// records from firstUUID through lastUUID (inclusive) by summary; the runtime appends it to the
// transcript. Both uuids must name user or assistant records of records, and firstUUID must not
// come after lastUUID in file order (they may be equal); summary must not be blank.
//
// The record's uuid and its collapse id (16 hex digits) are derived from (firstUUID, lastUUID,
// summary), so committing the same collapse twice gives the same record; it has type system,
// subtype [transcript.SubtypeCollapseCommit], timestamp now, the session id of the last record that has
// one and no parentUuid. NewCollapseCommit does not modify records and is safe for concurrent
// use.
func NewCollapseCommit(records []transcript.Record, firstUUID, lastUUID, summary string, now time.Time) (transcript.Record, error) {
	if strings.TrimSpace(summary) == "" {
		return transcript.Record{}, fmt.Errorf("agentctx: collapse commit: summary is empty")
	}
	pos := func(u string) (int, error) {
		for i := range records {
			if r := &records[i]; r.UUID == u {
				if !r.IsConversation() {
					return -1, fmt.Errorf("agentctx: collapse commit: %s is not a user or assistant record", u)
				}
				return i, nil
			}
		}
		return -1, fmt.Errorf("agentctx: collapse commit: no record %q", u)
	}
	fi, err := pos(firstUUID)
	if err != nil {
		return transcript.Record{}, err
	}
	li, err := pos(lastUUID)
	if err != nil {
		return transcript.Record{}, err
	}
	if fi > li {
		return transcript.Record{}, fmt.Errorf("agentctx: collapse commit: first record %s comes after last record %s in the transcript", firstUUID, lastUUID)
	}
	u := decisionUUID(transcript.SubtypeCollapseCommit, firstUUID+"\x00"+lastUUID+"\x00"+summary)
	id := strings.ToLower(strings.ReplaceAll(u, "-", ""))[:16]
	return transcript.Record{
		Type:      transcript.TypeSystem,
		Subtype:   transcript.SubtypeCollapseCommit,
		UUID:      u,
		IsMeta:    true,
		SessionID: transcript.LastSessionID(records),
		Timestamp: transcript.Timestamp(now),
		Level:     "info",
		Content:   mustJSON(fmt.Sprintf("Collapsed %s..%s into a summary", firstUUID, lastUUID)),
		Collapse:  &transcript.CollapseCommit{CollapseID: id, FirstUUID: firstUUID, LastUUID: lastUUID, Summary: summary},
	}, nil
}
