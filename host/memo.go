package host

import (
	"bytes"
	"sync"
	"time"

	"github.com/agentctx/agentctx/transcript"
)

// Memo carries a conversation's replay from one turn to the next, so that a turn costs the
// messages and decisions added since the last one rather than the whole history: the records
// of the host's messages are derived once, and when the host's messages and the stored
// decisions only grew, the previous turn's records are extended (the Pipeline then sees the
// same slice grown, and extends its chain too). When a message before the new ones was
// edited, deleted or moved, or the store no longer begins with what was read last turn (it
// was changed underneath, or lost), the replay is built again from all the messages,
// reusing the records of the messages that are unchanged. The bytes are those a Conversation
// without a Memo builds.
//
// A message is known by its id, its time and flags, and its [*transcript.Message]: the same
// pointer at once, or else a message equal to it ([transcript.EqualMessage]: every field and
// block compared, no hashing), so that a host that builds new messages from its rows every
// turn keeps the records of those it did not change, and an edit under the same id (a row
// updated) is seen. Comparing a rebuilt message costs about reading its bytes once. A
// message is still not changed in place once passed to a turn (as [agentctx.Input.Records]
// says of records): its record holds it, and the memo compares the next turn's message
// with it.
//
// The zero value is ready. A Memo is safe for concurrent use; it keeps one conversation's
// replay (the last turn's), so give each Conversation its own. Turns of one conversation that
// run at the same time build their replays apart.
type Memo struct {
	mu sync.Mutex
	rp *replay
}

// take returns the memo's replay, leaving none in it until put: a turn running meanwhile
// builds its own.
func (m *Memo) take() *replay {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	rp := m.rp
	m.rp = nil
	return rp
}

// put keeps rp for the next turn.
func (m *Memo) put(rp *replay) {
	if m == nil || rp == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.rp = rp
}

// msgKey is the identity of a host's message: what its record is derived from.
type msgKey struct {
	id       string
	msg      *transcript.Message
	at       time.Time
	injected bool
	source   string
}

// keyOf returns m's identity.
func keyOf(m *Message) msgKey {
	return msgKey{id: m.ID, msg: m.Message, at: m.Time, injected: m.Injected, source: m.SourceToolUseID}
}

// is reports whether m has identity k: the same id, time and flags, and the same
// [*transcript.Message] or one equal to it ([transcript.EqualMessage]), as a message rebuilt
// from its row is.
func (k *msgKey) is(m *Message) bool {
	return k.id == m.ID && k.injected == m.Injected && k.source == m.SourceToolUseID && k.at.Equal(m.Time) &&
		transcript.EqualMessage(k.msg, m.Message)
}

// hostEntry is a host message's identity and record (its parent not set).
type hostEntry struct {
	key msgKey
	rec transcript.Record
}

// storedKey is the identity of a stored record: its uuid, parent, type and subtype, and for a
// record without a uuid (a turn record) its content.
type storedKey struct {
	uuid, parent string
	typ          transcript.RecordType
	subtype      transcript.Subtype
	content      []byte
}

// keyOfStored returns r's identity.
func keyOfStored(r *transcript.Record) storedKey {
	k := storedKey{uuid: r.UUID, parent: r.ParentUUID, typ: r.Type, subtype: r.Subtype}
	if r.UUID == "" {
		k.content = r.Content
	}
	return k
}

// is reports whether r has identity k.
func (k *storedKey) is(r *transcript.Record) bool {
	return k.uuid == r.UUID && k.parent == r.ParentUUID && k.typ == r.Type && k.subtype == r.Subtype &&
		(k.uuid != "" || bytes.Equal(k.content, r.Content))
}
