package agentctx

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentctx/agentctx/transcript"
)

// SnipConfig configures the snip stage. The zero value is the default: snip records are
// applied, and messages are tagged and the model reminded to snip only when the snip tool
// ([SnipTool]) is in [Input.Tools].
//
// The snip stage removes from the model's view the records named by snip records
// ([transcript.SubtypeSnip], [transcript.Record.Snip]); the transcript keeps them. A runtime's snip tool writes those
// records with [NewSnip]. The removal is closed under tool pairing: removing a record that
// holds a tool_use also removes the records holding its results, and removing a result also
// removes the record(s) holding its tool_use (and, with them, their other results); server tool
// calls stay with their results the same way, and an assistant response reduced to thinking
// blocks loses those too. Two kinds of records are protected and never removed: records
// carrying a tool_reference inside a tool_result (the tools they load would vanish), and the
// latest user input (the records after the last assistant record, which the request must end
// with), also when it was the latest input at the time the snip record was written, or came
// after it with no answer between (a result of a call in flight): such a snip stays refused
// once an answer comes, so that it never changes a prefix already sent. A snip whose closure reaches a protected record is
// refused as a whole and reported.
//
// When the model can snip (TagMessages, or the snip tool in Input.Tools), Prepare also
// reminds it to: once the view has grown by ReminderTokens since the last snip or reminder,
// it writes a reminder record ([transcript.SubtypeReminder]) whose text, a short meta user
// message, follows the latest input on this turn and every later one. The reminder goes
// after the last message, so it never changes a prefix already sent; a snip starts the
// count again.
type SnipConfig struct {
	// TagMessages adds a stable "[id:xxxxxxxx]" tag to API-bound user messages so that a model
	// can name messages to a snip tool. Off by default; on when Input.Tools holds
	// [SnipToolName], which also tags the user messages holding only tool results (after the
	// results), so that the model can snip a call's output, its tool_use going with it. See
	// [transcript.ResolveTag].
	TagMessages bool
	// ReminderTokens is how far the view grows, in counted tokens of the messages after the
	// last snip or reminder, before the model is reminded to snip (the context_efficiency
	// reminder). Zero: a tenth of the context window, at least 2,000 and at most 40,000
	// tokens. Negative: never. Reminders are made only when the model can snip: with
	// TagMessages or the snip tool in Input.Tools.
	ReminderTokens int
}

func (c SnipConfig) validate() error { return nil }

// reminderStep returns ReminderTokens, or its default at window; 0: no reminders.
func (c SnipConfig) reminderStep(window int) int {
	switch {
	case c.ReminderTokens < 0:
		return 0
	case c.ReminderTokens > 0:
		return c.ReminderTokens
	}
	return min(max(window/10, minReminderTokens), maxReminderTokens)
}

// The bounds of the default [SnipConfig.ReminderTokens].
const (
	minReminderTokens = 2000
	maxReminderTokens = 40000
)

// snipStage is the snip stage (see [SnipConfig]): it removes the messages the transcript's snip records name,
// and tags user messages with their ids when asked to.
type snipStage struct {
	cfg     SnipConfig
	counter *Counter
	window  int
}

func (*snipStage) name() string { return "snip" }

// run applies every snip record of the transcript to the view, then tags user messages.
func (st *snipStage) run(t *turn) error {
	rep := t.report.stage("snip")
	last := -1 // the position of the last snip record that removed a record of the view
	if req := snipRequests(t.in.Records, t.chain.Scan()); len(req) > 0 {
		units := make([]snipUnit, len(t.items))
		for i := range t.items {
			units[i] = unitOfItem(&t.items[i])
		}
		plan := planSnip(units, req)
		for _, s := range plan.skipped {
			rep.add(Action{Kind: ActionSkipped, UUID: s.uuid, Detail: s.detail})
		}
		if len(plan.removed) > 0 {
			keep := t.items[:0:0]
			for i := range t.items {
				why, gone := plan.removed[i]
				if !gone {
					keep = append(keep, t.items[i])
					continue
				}
				it := &t.items[i]
				if r, ok := req[it.uuid]; ok {
					last = max(last, r.pos)
				}
				if why.expanded != "" {
					rep.add(Action{Kind: ActionExpanded, UUID: it.uuid, ToolUseID: why.toolUseID, Record: why.by, Detail: why.expanded})
				}
				rep.add(Action{Kind: ActionSnipped, UUID: it.uuid, Record: why.by, Detail: why.detail, Tokens: -st.counter.Blocks(it.blocks)})
			}
			t.items = keep
		}
	}
	offered := snipOffered(t.in)
	if st.cfg.TagMessages || offered {
		st.tagMessages(t, rep, offered)
	}
	st.remind(t, rep, last, st.cfg.TagMessages || offered)
	return nil
}

// NewSnip returns a snip record that removes the records named by ids from the model's view,
// for a runtime's snip tool to append to the transcript. Each id is a record uuid or a tag as
// [SnipConfig.TagMessages] shows it ("[id:1a2b3c4d]", "id:1a2b3c4d" or "1a2b3c4d"; see
// [transcript.ResolveTag]); ids naming no user or assistant record of records make NewSnip fail with an
// error that lists them all. reason is kept in the record for the audit trail.
//
// The record's uuid is derived from the sorted set of removed uuids, so snipping the same
// records twice gives the same record; it has type system, subtype [transcript.SubtypeSnip], timestamp
// now, the session id of the last record that has one and no parentUuid. Tool pairing closure
// and protection are applied when the view is built (see [SnipConfig]), not here: the record
// names exactly what was asked. NewSnip does not modify records and is safe for concurrent use.
func NewSnip(records []transcript.Record, ids []string, reason string, now time.Time) (transcript.Record, error) {
	if len(ids) == 0 {
		return transcript.Record{}, fmt.Errorf("agentctx: snip names no records")
	}
	exact := recordsByUUID(records)
	var uuids, bad []string
	for _, id := range ids {
		u, why := resolveSnipID(records, exact, id)
		if why != "" {
			bad = append(bad, fmt.Sprintf("%q (%s)", id, why))
			continue
		}
		uuids = append(uuids, u)
	}
	if len(bad) > 0 {
		return transcript.Record{}, fmt.Errorf("agentctx: snip: ids that name no message: %s", strings.Join(bad, ", "))
	}
	slices.Sort(uuids)
	uuids = slices.Compact(uuids)
	content := fmt.Sprintf("Snipped %d message(s) from the model's view", len(uuids))
	if reason != "" {
		content += ": " + reason
	}
	return transcript.Record{
		Type:      transcript.TypeSystem,
		Subtype:   transcript.SubtypeSnip,
		UUID:      decisionUUID(transcript.SubtypeSnip, strings.Join(uuids, "\n")),
		IsMeta:    true,
		SessionID: transcript.LastSessionID(records),
		Timestamp: transcript.Timestamp(now),
		Level:     "info",
		Content:   mustJSON(content),
		Snip:      &transcript.SnipDecision{RemovedUUIDs: uuids, Reason: reason},
	}, nil
}

// SnippedUUIDs returns the uuids of the records that snip records remove from the model's
// view, the tool-pairing closure included and refused snips excluded: the records a UI may
// grey out. It is computed over the whole conversation history (across compact boundaries);
// [transcript.BuildChain] still returns every record, and only [Pipeline.Prepare] filters. The map is
// new; records are not modified. SnippedUUIDs is safe for concurrent use.
func SnippedUUIDs(records []transcript.Record) map[string]bool {
	out := map[string]bool{}
	req := snipRequests(records, nil)
	if len(req) == 0 {
		return out
	}
	chain, err := transcript.BuildChain(records, transcript.ChainOptions{ThroughBoundaries: true})
	if err != nil {
		return out
	}
	units := snipUnits(records, chain.Messages())
	for i := range planSnip(units, req).removed {
		out[units[i].uuid] = true
	}
	return out
}

// snipUnits returns the snip plan's units of msgs, messages of records.
func snipUnits(records []transcript.Record, msgs []*transcript.Record) []snipUnit {
	units := make([]snipUnit, len(msgs))
	pos := make(map[string]int, len(records))
	for i := range records {
		pos[records[i].UUID] = i
	}
	for i, r := range msgs {
		units[i] = snipUnit{uuid: r.UUID, role: transcript.RoleUser, pos: pos[r.UUID], blocks: r.Message.Content, orig: r.Message.Content}
		if r.Type == transcript.TypeAssistant {
			units[i].role, units[i].msgID = transcript.RoleAssistant, r.Message.ID
		}
	}
	return units
}

// snipRequest is one uuid named by a snip record.
type snipRequest struct {
	by     string // uuid of the (first) snip record naming it
	reason string
	pos    int // the snip record's position in the transcript
}

// snipRequests collects the uuids named by the snip records of records, in file order; a uuid
// named twice keeps its first snip record. sc, when it covers records, lists the snip records
// (nil: every record is read).
func snipRequests(records []transcript.Record, sc *transcript.Scan) map[string]snipRequest {
	req := map[string]snipRequest{}
	sc.Each(records, transcript.ScanSnip, func(pos int, r *transcript.Record) {
		if r.Type != transcript.TypeSystem || r.Subtype != transcript.SubtypeSnip || r.Snip == nil {
			return
		}
		for _, u := range r.Snip.RemovedUUIDs {
			if _, ok := req[u]; !ok {
				req[u] = snipRequest{by: r.UUID, reason: r.Snip.Reason, pos: pos}
			}
		}
	})
	return req
}

// snipUnit is what the snip plan needs of one view entry.
type snipUnit struct {
	uuid   string
	role   transcript.Role
	msgID  string
	pos    int                // the record's position in the transcript; -1: none
	blocks []transcript.Block // the view's blocks
	orig   []transcript.Block // the record's own blocks (protection is judged on them)
}

func unitOfItem(it *item) snipUnit {
	u := snipUnit{uuid: it.uuid, role: it.role, msgID: it.msgID, pos: it.pos, blocks: it.blocks, orig: it.blocks}
	if it.rec != nil && it.rec.Message != nil {
		u.orig = it.rec.Message.Content
	}
	return u
}

// snipWhy says why a unit is removed.
type snipWhy struct {
	by        string // uuid of the snip record
	detail    string // for the ActionSnipped line
	expanded  string // non-empty when the unit was added by the closure
	toolUseID string
}

type snipSkip struct{ uuid, detail string }

type snipPlan struct {
	removed map[int]snipWhy // unit index → why
	skipped []snipSkip
}

// planSnip decides which units the requests remove: each requested unit with its
// tool-pairing component, unless the component holds a protected unit.
func planSnip(units []snipUnit, req map[string]snipRequest) snipPlan {
	plan := snipPlan{removed: map[int]snipWhy{}}
	byKey := map[string][]int{}
	keys := make([][]string, len(units))
	for i := range units {
		keys[i] = pairKeys(units[i].blocks, units[i].role)
		for _, k := range keys[i] {
			byKey[k] = append(byKey[k], i)
		}
	}
	// The latest user input: the units after the last assistant unit.
	tail := len(units)
	for tail > 0 && units[tail-1].role != transcript.RoleAssistant {
		tail--
	}
	protected := func(i int) string {
		if i >= tail {
			return "is the latest user input"
		}
		if hasToolReference(units[i].orig) {
			return "carries a tool_reference"
		}
		return ""
	}
	// latestAt reports whether unit i was, or was still to come in, the latest user input
	// when the snip record at position s was written: a user record after the last assistant
	// record of the view before s (a result that came after the snip among them). Such a snip
	// is refused for good, not only while the record is the latest: a snip that took effect
	// once a later answer came would change a prefix already sent, with no decision of that
	// turn to say so.
	var answers []int // the positions of the view's assistant records, in order
	for _, v := range units {
		if v.role == transcript.RoleAssistant && v.pos >= 0 {
			answers = append(answers, v.pos)
		}
	}
	slices.Sort(answers)
	latestAt := func(i, s int) bool {
		u := units[i]
		if u.role != transcript.RoleUser || u.pos < 0 {
			return false
		}
		// The last answer before s must come before u: none lies between them.
		k, _ := slices.BinarySearch(answers, s)
		return k == 0 || answers[k-1] < u.pos
	}

	seen := make([]bool, len(units))
	for start := range units {
		r, ok := req[units[start].uuid]
		if !ok || seen[start] {
			continue
		}
		// Breadth-first over the pairing graph; from/via explain how a unit joined.
		comp := []int{start}
		from := map[int]int{start: -1}
		via := map[int]string{}
		seen[start] = true
		for q := 0; q < len(comp); q++ {
			u := comp[q]
			for _, k := range keys[u] {
				for _, v := range byKey[k] {
					if !seen[v] {
						seen[v] = true
						from[v], via[v] = u, k
						comp = append(comp, v)
					}
				}
			}
		}
		slices.Sort(comp)
		block, why := -1, ""
		for _, i := range comp {
			if why = protected(i); why != "" {
				block = i
				break
			}
		}
		for _, i := range comp {
			rr, ok := req[units[i].uuid]
			if block >= 0 || !ok {
				continue
			}
			for _, j := range comp {
				if latestAt(j, rr.pos) {
					block, why = j, "was the latest user input when snip "+rr.by+" was written"
					break
				}
			}
		}
		if block >= 0 {
			for _, i := range comp {
				if rr, ok := req[units[i].uuid]; ok {
					d := fmt.Sprintf("snip %s refused: the record %s", rr.by, why)
					if block != i {
						d = fmt.Sprintf("snip %s refused: the record is tool-paired with %s, which %s", rr.by, units[block].uuid, why)
					}
					plan.skipped = append(plan.skipped, snipSkip{uuid: units[i].uuid, detail: d})
				}
			}
			continue
		}
		for _, i := range comp {
			if rr, ok := req[units[i].uuid]; ok {
				plan.removed[i] = snipWhy{by: rr.by, detail: snipDetail(rr)}
				continue
			}
			id := via[i][2:]
			plan.removed[i] = snipWhy{
				by:        r.by,
				detail:    snipDetail(r),
				expanded:  fmt.Sprintf("removed with %s: tool_use %s and its result stay together", units[from[i]].uuid, id),
				toolUseID: id,
			}
		}
	}
	// An assistant response reduced to thinking blocks goes too (a message cannot end with
	// thinking, and thinking without the turn it preceded means nothing).
	var touched []string // message ids, in view order
	whyOf := map[string]snipWhy{}
	byMsg := map[string][]int{}
	for i, u := range units {
		if u.role != transcript.RoleAssistant || u.msgID == "" {
			continue
		}
		byMsg[u.msgID] = append(byMsg[u.msgID], i)
		if why, gone := plan.removed[i]; gone {
			if _, ok := whyOf[u.msgID]; !ok {
				touched = append(touched, u.msgID)
				whyOf[u.msgID] = why
			}
		}
	}
	for _, id := range touched {
		var rest []int
		onlyThinking := true
		for _, i := range byMsg[id] {
			if _, gone := plan.removed[i]; gone {
				continue
			}
			rest = append(rest, i)
			for _, b := range units[i].blocks {
				if k := transcript.KindOf(b); k != transcript.KindThinking && k != transcript.KindRedactedThinking {
					onlyThinking = false
				}
			}
		}
		if !onlyThinking || len(rest) == 0 {
			continue
		}
		for _, i := range rest {
			plan.removed[i] = snipWhy{by: whyOf[id].by, detail: whyOf[id].detail, expanded: "removed with the rest of response " + id + ": only thinking was left"}
		}
	}
	return plan
}

func snipDetail(r snipRequest) string {
	d := "snip " + r.by
	if r.reason != "" {
		d += ": " + r.reason
	}
	return d
}

// pairKeys returns the keys that tie a view entry to its tool-pairing partners: "t:"+id for a
// tool_use (assistant) or tool_result (user), "s:"+id for a server tool call or its result.
func pairKeys(blocks []transcript.Block, role transcript.Role) []string {
	var keys []string
	for _, b := range blocks {
		switch b := b.(type) {
		case *transcript.ToolUse:
			if role == transcript.RoleAssistant {
				keys = append(keys, "t:"+b.ID)
			}
		case *transcript.ToolResult:
			if role == transcript.RoleUser {
				keys = append(keys, "t:"+b.ToolUseID)
			}
		case *transcript.ServerToolUse:
			keys = append(keys, "s:"+b.ID)
		case *transcript.ServerToolResult:
			keys = append(keys, "s:"+b.ToolUseID)
		}
	}
	return keys
}

// hasToolReference reports whether blocks carry a tool_reference inside a tool_result.
func hasToolReference(blocks []transcript.Block) bool {
	for _, b := range blocks {
		if tr, ok := b.(*transcript.ToolResult); ok {
			for _, c := range tr.Content {
				if transcript.KindOf(c) == transcript.KindToolReference {
					return true
				}
			}
		}
	}
	return false
}
