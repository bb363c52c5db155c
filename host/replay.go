package host

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/agentctx/agentctx/transcript"
)

// SubtypeTurn is the subtype of the record this package writes in a [DecisionStore] before
// each turn's records: where they go among the host's messages and which of them they name.
const SubtypeTurn transcript.Subtype = "agentctx_host_turn"

// turnMark is the content of a [SubtypeTurn] record.
type turnMark struct {
	// After is the uuid of the host's last message when the turn ran: the turn's records
	// follow it.
	After string `json:"after,omitempty"`
	// Leaf is the turn's [agentctx.Result.Leaf]: the record the host's next message follows.
	Leaf string `json:"leaf,omitempty"`
	// Names lists the host's messages the records name (by uuid, or by a tool call's id they
	// hold), each as the host's id and the uuid it had.
	Names []named `json:"names,omitempty"`
	// Needs lists the uuids of earlier turns' records these records name.
	Needs []string `json:"needs,omitempty"`
	// Prefix, for a turn that summarized the conversation (a compaction or a collapse), is the
	// digest of the uuids of the host's messages up to After: the summary stands for them all.
	Prefix string `json:"prefix,omitempty"`
}

// named is a host message a turn's records name.
type named struct {
	ID   string `json:"id"`
	UUID string `json:"uuid"`
}

// Dropped is a turn's records that a replay did not apply, because the host no longer has
// the messages they were made on.
type Dropped struct {
	// Records are the turn's records, as the store holds them.
	Records []transcript.Record
	// Reason says which of the host's messages are gone or changed.
	Reason string
}

// replay is the conversation rebuilt from the host's messages and the stored decisions.
type replay struct {
	records []transcript.Record // in the order a session's transcript would hold them
	leaf    string
	last    string            // the uuid of the host's last message
	hosts   map[string]string // uuid → host id, of the host's messages
	tools   map[string][]string
	digest  []string // digest[i]: the prefix digest through the host's message i
	dropped []Dropped
	stored  int // records loaded from the store
}

// batch is one turn's stored records.
type batch struct {
	mark    turnMark
	records []transcript.Record
}

// splitBatches groups stored records by the turn records before them.
func splitBatches(session string, recs []transcript.Record) ([]batch, error) {
	var out []batch
	for i := range recs {
		r := &recs[i]
		if r.Type == transcript.TypeSystem && r.Subtype == SubtypeTurn {
			var m turnMark
			if err := json.Unmarshal(r.Content, &m); err != nil {
				return nil, fmt.Errorf("host: decisions of session %q: record %d: content: %w", session, i, err)
			}
			out = append(out, batch{mark: m})
			continue
		}
		if len(out) == 0 {
			return nil, fmt.Errorf("host: decisions of session %q: record %d (uuid %q) precedes the first %s record", session, i, r.UUID, SubtypeTurn)
		}
		out[len(out)-1].records = append(out[len(out)-1].records, *r)
	}
	return out, nil
}

// build derives the records of the host's messages and places each stored turn's records
// after the message they followed, in store order, as a session's transcript holds them.
// A turn whose messages the host no longer has is dropped and reported.
func build(session, cwd string, msgs []Message, stored []transcript.Record) (*replay, error) {
	batches, err := splitBatches(session, stored)
	if err != nil {
		return nil, err
	}
	rp := &replay{hosts: make(map[string]string, len(msgs)), tools: map[string][]string{}, stored: len(stored)}
	hostRecs := make([]transcript.Record, len(msgs))
	ids := make(map[string]bool, len(msgs))
	h := sha256.New()
	rp.digest = make([]string, len(msgs))
	for i := range msgs {
		if ids[msgs[i].ID] {
			return nil, fmt.Errorf("host: message %d: id %q is used twice", i, msgs[i].ID)
		}
		ids[msgs[i].ID] = true
		if hostRecs[i], err = msgs[i].record(session, cwd, i); err != nil {
			return nil, err
		}
		u := hostRecs[i].UUID
		rp.hosts[u] = msgs[i].ID
		for _, b := range hostRecs[i].Message.Content {
			switch b := b.(type) {
			case *transcript.ToolUse:
				rp.tools[b.ID] = append(rp.tools[b.ID], u)
			case *transcript.ToolResult:
				rp.tools[b.ToolUseID] = append(rp.tools[b.ToolUseID], u)
			}
		}
		h.Write([]byte(u))
		rp.digest[i] = hex.EncodeToString(h.Sum(nil)[:16])
	}
	after := map[string][]int{}
	for bi, b := range batches {
		if _, ok := rp.hosts[b.mark.After]; !ok && len(b.records) > 0 {
			rp.dropped = append(rp.dropped, Dropped{Records: b.records, Reason: gone(b.mark.After, rp.missing(b.mark.Names))})
			continue
		}
		after[b.mark.After] = append(after[b.mark.After], bi)
	}
	rp.records = make([]transcript.Record, 0, len(msgs)+len(stored))
	placed := map[string]bool{}
	for i := range hostRecs {
		r := hostRecs[i]
		r.ParentUUID = rp.leaf
		rp.records = append(rp.records, r)
		rp.leaf, rp.last = r.UUID, r.UUID
		for _, bi := range after[r.UUID] {
			b := &batches[bi]
			if why := rp.check(b, i, placed); why != "" {
				rp.dropped = append(rp.dropped, Dropped{Records: b.records, Reason: why})
				continue
			}
			for _, d := range b.records {
				rp.records = append(rp.records, d)
				if d.UUID != "" {
					placed[d.UUID] = true
				}
			}
			if b.mark.Leaf != "" && (placed[b.mark.Leaf] || rp.hosts[b.mark.Leaf] != "") {
				rp.leaf = b.mark.Leaf
			}
		}
	}
	return rp, nil
}

// check returns why batch b, placed after the host's message i, cannot be applied, or "".
func (rp *replay) check(b *batch, i int, placed map[string]bool) string {
	if missing := rp.missing(b.mark.Names); len(missing) > 0 {
		return gone("", missing)
	}
	for _, u := range b.mark.Needs {
		if !placed[u] {
			return fmt.Sprintf("they name record %s of an earlier turn that was not applied", u)
		}
	}
	if b.mark.Prefix != "" && b.mark.Prefix != rp.digest[i] {
		return fmt.Sprintf("they summarize the conversation up to message %q, and the host's messages before it changed", rp.hosts[b.mark.After])
	}
	return ""
}

// missing returns the names of messages the host no longer has.
func (rp *replay) missing(names []named) []named {
	var out []named
	for _, n := range names {
		if _, ok := rp.hosts[n.UUID]; !ok {
			out = append(out, n)
		}
	}
	return out
}

// gone says that the host's messages named are gone or changed.
func gone(after string, names []named) string {
	var ids []string
	for _, n := range names {
		ids = append(ids, fmt.Sprintf("%q", n.ID))
	}
	if after != "" && len(ids) == 0 {
		return fmt.Sprintf("they follow a message (uuid %s) the host no longer has, deleted or edited", after)
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	if len(ids) == 1 {
		return fmt.Sprintf("the host no longer has message %s as it was (deleted or edited)", ids[0])
	}
	return fmt.Sprintf("the host no longer has messages %s as they were (deleted or edited)", strings.Join(ids, ", "))
}

// mark returns the turn record for recs, the records a turn made after the replay rp, whose
// result's leaf is leaf.
func (rp *replay) mark(session string, recs []transcript.Record, leaf string) (transcript.Record, error) {
	m := turnMark{After: rp.last, Leaf: leaf}
	own := map[string]bool{}
	summarizes := false
	for i := range recs {
		own[recs[i].UUID] = true
		if recs[i].IsCompactBoundary() || recs[i].Subtype == transcript.SubtypeCollapseCommit {
			summarizes = true
		}
	}
	decided := map[string]bool{}
	for i := range rp.records {
		if _, ok := rp.hosts[rp.records[i].UUID]; !ok && rp.records[i].UUID != "" {
			decided[rp.records[i].UUID] = true
		}
	}
	seenName, seenNeed := map[string]bool{}, map[string]bool{}
	for i := range recs {
		line, err := recs[i].MarshalLine()
		if err != nil {
			return transcript.Record{}, fmt.Errorf("host: session %q: record %d of the turn: %w", session, i, err)
		}
		var v any
		if err := json.Unmarshal(line, &v); err != nil {
			return transcript.Record{}, fmt.Errorf("host: session %q: record %d of the turn: %w", session, i, err)
		}
		walkStrings(v, func(s string) {
			if own[s] {
				return
			}
			if id, ok := rp.hosts[s]; ok && !seenName[s] {
				seenName[s] = true
				m.Names = append(m.Names, named{ID: id, UUID: s})
			}
			for _, u := range rp.tools[s] {
				if !seenName[u] {
					seenName[u] = true
					m.Names = append(m.Names, named{ID: rp.hosts[u], UUID: u})
				}
			}
			if decided[s] && !seenNeed[s] {
				seenNeed[s] = true
				m.Needs = append(m.Needs, s)
			}
		})
	}
	slices.SortFunc(m.Names, func(a, b named) int { return strings.Compare(a.UUID, b.UUID) })
	slices.Sort(m.Needs)
	if summarizes && len(rp.digest) > 0 {
		m.Prefix = rp.digest[len(rp.digest)-1]
	}
	content, err := json.Marshal(m)
	if err != nil {
		return transcript.Record{}, err
	}
	return transcript.Record{Type: transcript.TypeSystem, Subtype: SubtypeTurn, SessionID: session, IsMeta: true, Content: content}, nil
}

// walkStrings calls f on every string in v, a decoded JSON value, keys aside.
func walkStrings(v any, f func(string)) {
	switch v := v.(type) {
	case string:
		f(v)
	case []any:
		for _, e := range v {
			walkStrings(e, f)
		}
	case map[string]any:
		for _, e := range v {
			walkStrings(e, f)
		}
	}
}
