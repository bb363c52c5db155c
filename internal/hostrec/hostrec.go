// Package hostrec makes transcript records of the messages a host keeps in its own SDK's
// types, for the adapters' conversions: one user or assistant record per message, chained by
// parentUuid, with uuids derived from the messages so that the same history always gives the
// same records.
package hostrec

import (
	"crypto/sha256"
	"encoding/binary"
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

// Record returns the record of a message: a user or assistant record by its role, with the
// flags and time given; where names the message in an error.
func Record(m *transcript.Message, at time.Time, injected, summary bool, where string) (transcript.Record, error) {
	r := transcript.Record{Message: m, IsMeta: injected, IsCompactSummary: summary}
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
