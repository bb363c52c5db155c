// Package hostrec makes transcript records of the messages a host keeps in its own SDK's
// types, for the adapters' conversions: one user or assistant record per message, chained by
// parentUuid, with uuids derived from the messages so that the same history always gives the
// same records.
package hostrec

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"time"

	"github.com/agentctx/agentctx/transcript"
	"github.com/google/uuid"
)

// Options say how [Chain] links records.
type Options struct {
	// SessionID is written on every record and seeds their uuids.
	SessionID string
	// Parent is the uuid the first record names as its parent; "" makes it a root.
	Parent string
	// Time is the timestamp of every record that has none; the zero time writes none.
	Time time.Time
	// Cwd is written on every record as the session's working directory.
	Cwd string
}

// namespace seeds the uuids of host messages (a version 5 uuid of its own).
var namespace = uuid.MustParse("5b0f3d52-6a8e-4c71-9d2a-0c3e8f1b7a64")

// Flags are what a record says of its message besides the message itself.
type Flags struct {
	// Time is when the message was written; the zero time writes none.
	Time time.Time
	// Injected is the record's isMeta, CompactSummary its isCompactSummary.
	Injected, CompactSummary bool
	// SourceToolUseID is the tool call whose output the message is (a skill's instructions).
	SourceToolUseID string
}

// Meta is what a record of a host's message knows besides the message an SDK holds. Both
// adapters' MessageMeta have its fields in its order, so that each converts to and from it
// (and a field added to one and not the other fails to compile).
type Meta struct {
	Time                                time.Time
	ID, Model, StopReason, StopSequence string
	Usage                               *transcript.Usage
	Injected, CompactSummary            bool
	StringContent                       bool
	SourceToolUseID                     string
}

// AnswerMeta is the meta of a message of an answer, read at time at.
func AnswerMeta(m *transcript.Message, at time.Time) Meta {
	return Meta{Time: at, ID: m.ID, Model: m.Model, StopReason: m.StopReason, StopSequence: m.StopSequence, Usage: m.Usage}
}

// RecordMeta is the meta of a record's message.
func RecordMeta(r *transcript.Record) Meta {
	mm := AnswerMeta(r.Message, r.Time())
	mm.Injected, mm.CompactSummary, mm.StringContent = r.IsMeta, r.IsCompactSummary, r.Message.StringContent
	mm.SourceToolUseID = r.SourceToolUseID
	return mm
}

// SetAnswer writes the answer's fields of mm (id, model, stop reason and sequence, usage) on m.
func (mm Meta) SetAnswer(m *transcript.Message) {
	m.ID, m.Model, m.StopReason, m.StopSequence, m.Usage = mm.ID, mm.Model, mm.StopReason, mm.StopSequence, mm.Usage
}

// Flags are the flags [Record] writes for a message of meta mm.
func (mm Meta) Flags() Flags {
	return Flags{Time: mm.Time, Injected: mm.Injected, CompactSummary: mm.CompactSummary, SourceToolUseID: mm.SourceToolUseID}
}

// Record returns the record of a message: a user or assistant record by its role, with the
// flags given; where names the message in an error.
func Record(m *transcript.Message, f Flags, where string) (transcript.Record, error) {
	at := f.Time
	r := transcript.Record{Message: m, IsMeta: f.Injected, IsCompactSummary: f.CompactSummary, SourceToolUseID: f.SourceToolUseID}
	switch m.Role {
	case transcript.RoleUser:
		r.Type = transcript.TypeUser
	case transcript.RoleAssistant:
		r.Type = transcript.TypeAssistant
	default:
		return r, fmt.Errorf("%s: role %q is neither user nor assistant", where, m.Role)
	}
	if !at.IsZero() {
		r.Timestamp = transcript.Timestamp(at)
	}
	return r, nil
}

// Chain links records in order, each the parent of the next, and sets their session id. A
// record's uuid is derived from the session id, its parent's uuid and the record's JSON, so a
// history that only grows keeps the uuids of its prefix, and a message changed in place
// changes its uuid and those after it. where names a record in an error, given its index.
func Chain(records []transcript.Record, opts Options, where func(int) string) error {
	parent := opts.Parent
	for i := range records {
		r := &records[i]
		r.ParentUUID, r.SessionID, r.Cwd = parent, opts.SessionID, opts.Cwd
		if r.Timestamp == "" && !opts.Time.IsZero() {
			r.Timestamp = transcript.Timestamp(opts.Time)
		}
		body, err := r.MarshalLine()
		if err != nil {
			return fmt.Errorf("%s: %w", where(i), err)
		}
		r.UUID = uuid.NewSHA1(namespace, body).String()
		parent = r.UUID
	}
	return nil
}

// idNamespace seeds the uuids derived from a host's own message ids.
var idNamespace = uuid.NewSHA1(namespace, []byte("host message id"))

// FromID returns the uuid of the message a host keeps under its own id: derived from the
// session id, the host's id, the message's role and content blocks ([transcript.HashBlock]:
// what decides their encoding, without encoding them) and whether the host injected it, so
// that the same message keeps its uuid whatever comes before or after it, and a message the
// host edited gets another. The message's id, model, stop reason and usage are left out: a
// host that learns the usage after the step and writes it on its row keeps the uuid.
func FromID(session, id string, m *transcript.Message, injected bool) string {
	h := sha256.New()
	var n [8]byte
	for _, s := range []string{session, id, string(m.Role)} {
		binary.LittleEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	h.Write([]byte{flag(injected), flag(m.StringContent)})
	for _, b := range m.Content {
		transcript.HashBlock(h, b)
	}
	return uuid.NewSHA1(idNamespace, h.Sum(nil)).String()
}

func flag(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// JSON is the JSON an SDK sends for v with <, > and & in strings as themselves: the
// SDK escapes them, and a tool call's input, which the transcript keeps as raw JSON, would
// otherwise come back other bytes than the model wrote (the same value, counted as more).
func JSON(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return unescapeHTML(raw), nil
}

// unescapeHTML turns the \u003c, \u003e and \u0026 escapes of JSON strings back into the
// characters; every other escape is left as it is.
func unescapeHTML(raw []byte) []byte {
	if !bytes.Contains(raw, []byte(`\u00`)) {
		return raw
	}
	out := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c != '\\' || i+1 >= len(raw) {
			out = append(out, c)
			continue
		}
		if raw[i+1] == 'u' && i+6 <= len(raw) {
			switch string(raw[i+2 : i+6]) {
			case "003c":
				out, i = append(out, '<'), i+5
				continue
			case "003e":
				out, i = append(out, '>'), i+5
				continue
			case "0026":
				out, i = append(out, '&'), i+5
				continue
			}
		}
		out, i = append(out, c, raw[i+1]), i+1
	}
	return out
}
