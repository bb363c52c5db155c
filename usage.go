package agentctx

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/agentctx/agentctx/transcript"
)

// NewUsage returns the record that attaches u, the provider's usage for a response, to the
// assistant record uuid that a runtime wrote before the usage was known (a step hook writes
// the answer, then learns the step's usage). Append it like a decision record: it sits beside
// the chain, changes nothing in the view, and from the next Prepare on the pressure figure
// anchors on u as if the record held it. It refuses a uuid that names no assistant record, a
// record that holds a usage of its own, a usage already attached, and an empty usage.
func NewUsage(records []transcript.Record, uuid string, u transcript.Usage, now time.Time) (transcript.Record, error) {
	if u.Total() <= 0 {
		return transcript.Record{}, errors.New("agentctx: usage: the usage counts no tokens")
	}
	r, ok := recordsByUUID(records)[uuid]
	switch {
	case !ok:
		return transcript.Record{}, fmt.Errorf("agentctx: usage: no record %q", uuid)
	case r.Type != transcript.TypeAssistant || r.Message == nil:
		return transcript.Record{}, fmt.Errorf("agentctx: usage: record %q is not an assistant message", uuid)
	case r.Message.Usage.Total() > 0:
		return transcript.Record{}, fmt.Errorf("agentctx: usage: record %q holds a usage of its own", uuid)
	}
	for i := range records {
		if l := records[i].LateUsage; l != nil && records[i].Subtype == transcript.SubtypeUsage && l.UUID == uuid {
			return transcript.Record{}, fmt.Errorf("agentctx: usage: record %q has a usage attached already (record %s)", uuid, records[i].UUID)
		}
	}
	return transcript.Record{
		Type:      transcript.TypeSystem,
		Subtype:   transcript.SubtypeUsage,
		UUID:      decisionUUID(transcript.SubtypeUsage, uuid),
		IsMeta:    true,
		SessionID: transcript.LastSessionID(records),
		Timestamp: transcript.Timestamp(now),
		Level:     "info",
		Content:   mustJSON(fmt.Sprintf("Usage of response %s: %d tokens in context", r.Message.ID, u.Total())),
		LateUsage: &transcript.LateUsage{UUID: uuid, Usage: &u},
	}, nil
}

// maxLateUsage bounds lateUsage's memo; past it the memo starts again (its records are made
// again, once, on the next turn).
const maxLateUsage = 1 << 14

// lateUsage puts the usage of [transcript.SubtypeUsage] records on the assistant records
// they name, in a chain's records: each such record is replaced by a copy whose message holds
// the usage. The copies are made once and kept, by the message they complete, so that the
// memos that know a record or message by its address see the same copy every turn; a copy
// holds nothing of the caller's slice of records, only what the record itself holds.
type lateUsage struct {
	mu sync.Mutex
	m  map[*transcript.Message]*transcript.Record
}

// apply returns chain with the late usage of records put on the records it names: chain
// itself when there is none, or a copy whose Records list holds the copies.
func (l *lateUsage) apply(records []transcript.Record, chain *transcript.Chain) *transcript.Chain {
	var byUUID map[string]*transcript.Usage
	chain.Scan().Each(records, transcript.ScanUsage, func(_ int, r *transcript.Record) {
		if r.Type != transcript.TypeSystem || r.Subtype != transcript.SubtypeUsage || r.LateUsage == nil || r.LateUsage.Usage.Total() <= 0 {
			return
		}
		if byUUID == nil {
			byUUID = map[string]*transcript.Usage{}
		}
		if _, dup := byUUID[r.LateUsage.UUID]; !dup {
			byUUID[r.LateUsage.UUID] = r.LateUsage.Usage
		}
	})
	if byUUID == nil {
		return chain
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil || len(l.m) > maxLateUsage {
		l.m = map[*transcript.Message]*transcript.Record{}
	}
	var out *transcript.Chain
	for i, r := range chain.Records {
		u, ok := byUUID[r.UUID]
		if !ok || r.Type != transcript.TypeAssistant || r.Message == nil || r.Message.Usage.Total() > 0 {
			continue
		}
		cp, ok := l.m[r.Message]
		if !ok || cp.Message.Usage != u || !sameRecord(cp, r) {
			m := *r.Message
			m.Usage = u
			c := *r
			c.Message = &m
			cp = &c
			l.m[r.Message] = cp
		}
		if out == nil {
			c := *chain
			c.Records = append([]*transcript.Record(nil), chain.Records...)
			out = &c
		}
		out.Records[i] = cp
	}
	if out == nil {
		return chain
	}
	return out
}

// sameRecord reports whether the copy cp was made of a record like r: the fields the chain
// and the stages read besides the message (a record passed again with the same message).
func sameRecord(cp, r *transcript.Record) bool {
	return cp.UUID == r.UUID && cp.ParentUUID == r.ParentUUID && cp.Type == r.Type && cp.IsSidechain == r.IsSidechain &&
		cp.IsMeta == r.IsMeta && cp.IsAPIErrorMessage == r.IsAPIErrorMessage && cp.Timestamp == r.Timestamp && cp.Damage == r.Damage
}
