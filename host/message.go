package host

import (
	"fmt"
	"time"

	"github.com/agentctx/agentctx/internal/hostrec"
	"github.com/agentctx/agentctx/transcript"
)

// Message is one message of a host's conversation, as the host keeps it.
type Message struct {
	// ID is the host's own id of the message, stable for as long as the message is kept
	// (a row's primary key). IDs are unique within a conversation.
	ID string
	// Message is the message: a user message (prompts, tool results) or an assistant answer.
	// Its usage, when the host knows it, anchors the pipeline's token count; a host that
	// learns the usage after the step sets it on the answer's message for the next turn.
	Message *transcript.Message
	// Time is when the message was written; the zero time writes none (old tool results are
	// then never cleared for idleness).
	Time time.Time
	// Injected marks a user message the host wrote itself (a reminder, a hook's output), which
	// a compaction's summary does not quote.
	Injected bool
	// SourceToolUseID, on an injected user message that is a tool call's output (a skill's
	// instructions after its Skill call), names the call: a compaction re-injects the skill.
	// Like the time, it is not part of the record's uuid.
	SourceToolUseID string
}

// record returns the record of m, its uuid derived from the session id, the host's id and
// the message's content ([hostrec.FromID]); i names the message in an error.
func (m *Message) record(session, cwd string, i int) (transcript.Record, error) {
	where := fmt.Sprintf("host: message %d (id %q)", i, m.ID)
	switch {
	case m.ID == "":
		return transcript.Record{}, fmt.Errorf("%s: no id", where)
	case m.Message == nil:
		return transcript.Record{}, fmt.Errorf("%s: no message", where)
	}
	r, err := hostrec.Record(m.Message, hostrec.Flags{Time: m.Time, Injected: m.Injected, SourceToolUseID: m.SourceToolUseID}, where)
	if err != nil {
		return r, err
	}
	r.UUID = hostrec.FromID(session, m.ID, m.Message, m.Injected)
	r.SessionID, r.Cwd = session, cwd
	return r, nil
}
