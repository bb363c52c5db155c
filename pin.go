package agentctx

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentctx/agentctx/transcript"
)

// Pin returns a pin record ([transcript.SubtypePin]) for the runtime to append: the text of the records
// named by uuids — user constraints, key decisions — then survives every compaction verbatim.
// While a pinned record is in the model's view it stays where it is; once a compaction has
// summarized it, its text is re-placed right after the summary, as one meta user message
// listing every pinned record no longer in the view, in transcript order.
//
// Each uuid must name a user or assistant record of records that holds text. The pinned text
// of all pin records of records plus these must stay within [CompactConfig.PinnedMaxTokens]
// (counted tokens); over it, Pin fails with an error giving the figures and pins nothing. The
// record's uuid derives from the sorted uuids, so pinning the same records twice gives the same
// record; it has timestamp now, the session id of the last record that has one and no
// parentUuid. Pin does not modify records and is safe for concurrent use.
func (p *Pipeline) Pin(records []transcript.Record, uuids []string, reason string, now time.Time) (transcript.Record, error) {
	if len(uuids) == 0 {
		return transcript.Record{}, fmt.Errorf("agentctx: pin names no records")
	}
	byUUID := recordsByUUID(records)
	var bad []string
	for _, u := range uuids {
		r, ok := byUUID[u]
		switch {
		case !ok:
			bad = append(bad, fmt.Sprintf("%q (no such record)", u))
		case !r.IsConversation():
			bad = append(bad, fmt.Sprintf("%q (not a user or assistant record)", u))
		case pinText(r) == "":
			bad = append(bad, fmt.Sprintf("%q (holds no text)", u))
		}
	}
	if len(bad) > 0 {
		return transcript.Record{}, fmt.Errorf("agentctx: pin: %s", strings.Join(bad, ", "))
	}
	uuids = slices.Clone(uuids)
	slices.Sort(uuids)
	uuids = slices.Compact(uuids)
	all, _ := transcript.Pinned(records)
	tokens, total := 0, 0
	for _, u := range uuids {
		tokens += p.counter.Text(pinText(byUUID[u]))
	}
	seen := map[string]bool{}
	for _, u := range slices.Concat(all, uuids) {
		if r, ok := byUUID[u]; ok && !seen[u] {
			seen[u] = true
			total += p.counter.Text(pinText(r))
		}
	}
	if limit := p.cfg.Compact.pinnedMax(p.window); total > limit {
		return transcript.Record{}, fmt.Errorf("agentctx: pin: pinned content would hold %d tokens, over the budget of %d (Compact.PinnedMaxTokens); these records add %d", total, limit, tokens)
	}
	content := fmt.Sprintf("Pinned %d message(s) so that they survive compaction", len(uuids))
	if reason != "" {
		content += ": " + reason
	}
	return transcript.Record{
		Type:      transcript.TypeSystem,
		Subtype:   transcript.SubtypePin,
		UUID:      decisionUUID(transcript.SubtypePin, strings.Join(uuids, "\n")),
		IsMeta:    true,
		SessionID: transcript.LastSessionID(records),
		Timestamp: transcript.Timestamp(now),
		Level:     "info",
		Content:   mustJSON(content),
		Pin:       &transcript.PinDecision{UUIDs: uuids, Reason: reason, Tokens: tokens},
	}, nil
}

// recordsByUUID indexes records by uuid, first occurrence winning.
func recordsByUUID(records []transcript.Record) map[string]*transcript.Record {
	m := make(map[string]*transcript.Record, len(records))
	for i := range records {
		if u := records[i].UUID; u != "" {
			if _, dup := m[u]; !dup {
				m[u] = &records[i]
			}
		}
	}
	return m
}

// pinText is the text of a record that pinning keeps: its text blocks.
func pinText(r *transcript.Record) string {
	if r.Message == nil {
		return ""
	}
	return strings.TrimSpace(transcript.TextOf(r.Message.Content))
}

// The wording of re-placed pinned content.
const (
	pinnedHead = "<system-reminder>\nThe runtime pinned these messages so that they stay word for word however the conversation is compacted:\n"
	pinnedItem = "\n--- %s message, %s ---\n%s\n"
)

// injectPinned re-places, right after the compact summary, the text of the pinned records the
// view no longer holds (they are before the latest compact boundary, or before the provider
// compaction the view starts at: see [pinnedAt]).
func (co *compactor) injectPinned(t *turn) {
	if t.chain.Boundary == nil && t.point == nil {
		return
	}
	pins, pos := t.chain.Scan().Pinned(t.in.Records)
	if len(pins) == 0 {
		return
	}
	inView, at := make([]bool, len(pins)), make(map[string]int, len(pins))
	for k, u := range pins {
		at[u] = k
	}
	for i := range t.items {
		if k, ok := at[t.items[i].uuid]; ok {
			inView[k] = true
		}
	}
	var missing []int // the positions of the pinned records the view lacks
	for k := range pins {
		if pos[k] < 0 || inView[k] {
			continue
		}
		// Pin records come from the transcript: one may name a record that holds no message,
		// or one of another thread; those pin nothing.
		if r := &t.in.Records[pos[k]]; r.IsConversation() && !transcript.OtherThread(r, t.chain.Leaf) && pinText(r) != "" {
			missing = append(missing, pos[k])
		}
	}
	if len(missing) == 0 {
		return
	}
	slices.Sort(missing)
	var b strings.Builder
	b.WriteString(pinnedHead)
	uuids := make([]string, len(missing))
	for k, i := range missing {
		r := &t.in.Records[i]
		uuids[k] = r.UUID
		when := r.Timestamp
		if when == "" {
			when = "time unknown"
		}
		fmt.Fprintf(&b, pinnedItem, r.Message.Role, when, pinText(r))
	}
	b.WriteString("</system-reminder>")
	it := item{uuid: transcript.ContentUUID("pinned", strings.Join(uuids, "\n")), pos: -1, role: transcript.RoleUser, meta: true,
		blocks: []transcript.Block{&transcript.Text{Text: b.String()}}, owned: true, origin: "pinned"}
	t.items = slices.Insert(t.items, pinnedAt(t), it)
}

// pinnedAt returns where re-placed pinned content goes in the view: right after the compact
// summary; or, when the view starts at a provider compaction, after the user messages that
// follow the answer holding it (the results of that answer's tool calls and the
// re-injected material of a paused compaction come first, and the compaction block must
// open the request), before the note asking the model to go on; else first.
func pinnedAt(t *turn) int {
	if t.point != nil {
		at := 1
		for at < len(t.items) && t.items[at].role == transcript.RoleUser {
			at++
		}
		at = min(at, len(t.items))
		if r := t.items[at-1].rec; r != nil && r.Rehydration != nil && r.Rehydration.Kind == transcript.RehydratePause {
			at-- // before the note that asks the model to go on after a paused compaction
		}
		return at
	}
	for i := range t.items {
		if r := t.items[i].rec; r != nil && r.IsCompactSummary {
			return i + 1
		}
	}
	return 0
}
