package host

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
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

// replay is the conversation rebuilt from the host's messages and the stored decisions,
// with what extending it by the next turn's messages and decisions needs (see [Memo]).
type replay struct {
	session, cwd string
	records      []transcript.Record // in the order a session's transcript would hold them
	leaf         string
	last         string            // the uuid of the host's last message
	hosts        map[string]string // uuid → host id, of the host's messages
	tools        map[string][]string
	digest       []string // digest[i]: the prefix digest through the host's message i
	sum          hash.Hash
	gone         []Dropped // turns that follow a message the host no longer has, in store order
	failed       []Dropped // turns whose check failed, in the order they were placed
	placed       map[string]bool
	stored       int // records loaded from the store
	// keys[i] is the identity of the host's message i; byID its key and record by host id.
	keys []msgKey
	byID map[string]*hostEntry
	// storedKeys are the identities of the stored records read.
	storedKeys []storedKey
	// watch holds the uuids of host messages a dropped turn followed or named: a message
	// with one of them makes the turn applicable again, so the replay is built anew.
	watch map[string]bool
}

// batch is one turn's stored records.
type batch struct {
	mark    turnMark
	records []transcript.Record
}

// splitBatches groups stored records by the turn records before them; first is the index of
// recs[0] among the session's records, for errors.
func splitBatches(session string, recs []transcript.Record, first int) ([]batch, error) {
	var out []batch
	for i := range recs {
		r := &recs[i]
		if r.Type == transcript.TypeSystem && r.Subtype == SubtypeTurn {
			var m turnMark
			if err := json.Unmarshal(r.Content, &m); err != nil {
				return nil, fmt.Errorf("host: decisions of session %q: record %d: content: %w", session, first+i, err)
			}
			out = append(out, batch{mark: m})
			continue
		}
		if len(out) == 0 {
			return nil, fmt.Errorf("host: decisions of session %q: record %d (uuid %q) precedes the first %s record", session, first+i, r.UUID, SubtypeTurn)
		}
		out[len(out)-1].records = append(out[len(out)-1].records, *r)
	}
	return out, nil
}

// newReplay returns the replay of no messages and no decisions.
func newReplay(session, cwd string, msgs, stored int) *replay {
	return &replay{
		session: session, cwd: cwd,
		records: make([]transcript.Record, 0, msgs+stored),
		hosts:   make(map[string]string, msgs), tools: map[string][]string{},
		digest: make([]string, 0, msgs), sum: sha256.New(),
		placed: map[string]bool{}, keys: make([]msgKey, 0, msgs),
		byID: make(map[string]*hostEntry, msgs), watch: map[string]bool{},
	}
}

// build derives the records of the host's messages and places each stored turn's records
// after the message they followed, in store order, as a session's transcript holds them.
// A turn whose messages the host no longer has is dropped and reported. prev, when not nil,
// is the replay of an earlier turn: extended in place when msgs and stored only add to what
// it was built from, otherwise its records of messages that are unchanged are reused.
func build(session, cwd string, msgs []Message, stored []transcript.Record, prev *replay) (*replay, error) {
	if prev != nil && (prev.session != session || prev.cwd != cwd) {
		prev = nil
	}
	if prev != nil {
		ok, err := prev.grow(msgs, stored, nil)
		if err != nil || ok {
			return prev, err
		}
	}
	rp := newReplay(session, cwd, len(msgs), len(stored))
	var reuse map[string]*hostEntry
	if prev != nil {
		reuse = prev.byID
	}
	_, err := rp.grow(msgs, stored, reuse)
	return rp, err
}

// grow extends rp by the host's messages past those it holds and the stored records past
// those it has read. It returns false, having changed nothing, when they do not extend
// what rp was built from: a message before them was edited, deleted or moved, the store no
// longer begins with the records read, or a new turn follows an earlier message than the
// last. reuse holds records of host messages to take instead of deriving them again.
func (rp *replay) grow(msgs []Message, stored []transcript.Record, reuse map[string]*hostEntry) (bool, error) {
	n0, s0 := len(rp.keys), len(rp.storedKeys)
	fresh := n0 == 0 && s0 == 0
	if len(msgs) < n0 || len(stored) < s0 {
		return false, nil
	}
	for i := range n0 {
		if !rp.keys[i].is(&msgs[i]) {
			return false, nil
		}
	}
	for i := range s0 {
		if !rp.storedKeys[i].is(&stored[i]) {
			return false, nil
		}
	}
	batches, err := splitBatches(rp.session, stored[s0:], s0)
	if err != nil {
		if fresh {
			return false, err
		}
		return false, nil
	}
	// The new messages' records, derived (or reused) before anything changes.
	news := make([]hostEntry, len(msgs)-n0)
	var ids, newUUIDs map[string]bool
	if len(news) > 0 {
		ids, newUUIDs = make(map[string]bool, len(news)), make(map[string]bool, len(news))
	}
	for j := range news {
		i := n0 + j
		m := &msgs[i]
		if ids[m.ID] || rp.byID[m.ID] != nil {
			return false, fmt.Errorf("host: message %d: id %q is used twice", i, m.ID)
		}
		if e := reuse[m.ID]; e != nil && e.key.is(m) {
			news[j] = *e
		} else {
			news[j].key = keyOf(m)
			if news[j].rec, err = m.record(rp.session, rp.cwd, i); err != nil {
				return false, err
			}
		}
		if rp.watch[news[j].rec.UUID] {
			return false, nil
		}
		ids[m.ID], newUUIDs[news[j].rec.UUID] = true, true
	}
	var atLast []int
	after := map[string][]int{}
	var unknown []int
	for bi := range batches {
		a := batches[bi].mark.After
		if newUUIDs[a] {
			after[a] = append(after[a], bi)
			continue
		}
		if _, ok := rp.hosts[a]; ok {
			if a != rp.last {
				return false, nil
			}
			atLast = append(atLast, bi)
			continue
		}
		unknown = append(unknown, bi)
	}

	for j := range news {
		e := &news[j]
		u := e.rec.UUID
		rp.hosts[u] = msgs[n0+j].ID
		for _, b := range e.rec.Message.Content {
			switch b := b.(type) {
			case *transcript.ToolUse:
				rp.tools[b.ID] = append(rp.tools[b.ID], u)
			case *transcript.ToolResult:
				rp.tools[b.ToolUseID] = append(rp.tools[b.ToolUseID], u)
			}
		}
		rp.sum.Write([]byte(u))
		rp.digest = append(rp.digest, hex.EncodeToString(rp.sum.Sum(nil)[:16]))
		rp.keys = append(rp.keys, e.key)
		rp.byID[msgs[n0+j].ID] = e
	}
	for i := s0; i < len(stored); i++ {
		rp.storedKeys = append(rp.storedKeys, keyOfStored(&stored[i]))
	}
	rp.stored = len(stored)
	for _, bi := range unknown {
		b := &batches[bi]
		rp.watch[b.mark.After] = true
		if len(b.records) > 0 {
			rp.gone = append(rp.gone, Dropped{Records: b.records, Reason: gone(b.mark.After, rp.missing(b.mark.Names))})
			rp.watchNames(b)
		}
	}
	for _, bi := range atLast {
		rp.place(&batches[bi], n0-1)
	}
	for j := range news {
		r := news[j].rec
		r.ParentUUID = rp.leaf
		rp.records = append(rp.records, r)
		rp.leaf, rp.last = r.UUID, r.UUID
		for _, bi := range after[r.UUID] {
			rp.place(&batches[bi], n0+j)
		}
	}
	return true, nil
}

// place applies batch b after the host's message i, or drops it.
func (rp *replay) place(b *batch, i int) {
	if why := rp.check(b, i); why != "" {
		rp.failed = append(rp.failed, Dropped{Records: b.records, Reason: why})
		rp.watchNames(b)
		return
	}
	for _, d := range b.records {
		rp.records = append(rp.records, d)
		if d.UUID != "" {
			rp.placed[d.UUID] = true
		}
	}
	if b.mark.Leaf != "" && (rp.placed[b.mark.Leaf] || rp.hosts[b.mark.Leaf] != "") {
		rp.leaf = b.mark.Leaf
	}
}

// watchNames watches the messages a dropped batch follows and names.
func (rp *replay) watchNames(b *batch) {
	rp.watch[b.mark.After] = true
	for _, n := range b.mark.Names {
		rp.watch[n.UUID] = true
	}
}

// dropped lists the turns not applied: those that follow a message the host no longer has,
// then those whose check failed.
func (rp *replay) dropped() []Dropped {
	if len(rp.gone)+len(rp.failed) == 0 {
		return nil
	}
	return slices.Concat(rp.gone, rp.failed)
}

// check returns why batch b, placed after the host's message i, cannot be applied, or "".
func (rp *replay) check(b *batch, i int) string {
	if missing := rp.missing(b.mark.Names); len(missing) > 0 {
		return gone("", missing)
	}
	for _, u := range b.mark.Needs {
		if !rp.placed[u] {
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
			if _, host := rp.hosts[s]; rp.placed[s] && !host && !seenNeed[s] {
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
