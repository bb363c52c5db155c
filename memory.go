package agentctx

import (
	"context"
	"fmt"
	"strings"

	"github.com/agentctx/agentctx/transcript"
)

// summarizerSessionMemory names session-memory summaries in compaction records.
const summarizerSessionMemory = transcript.SummarizerSessionMemory

// SessionMemory supplies the summary a runtime keeps up to date in the background (Claude
// Code's session memory): when a compaction needs a summary and there are no extra
// instructions, a fresh session-memory summary is used as is, with no model call, and the
// messages after the record it covers are kept verbatim (within the [TailConfig] budgets,
// growing back from there to reach its minimums). A summary is fresh when the record it covers
// up to is in this turn's view. When it is not, or the compacted request would still be over
// the threshold, the Summarizer writes the summary instead.
type SessionMemory interface {
	SessionMemory(ctx context.Context, req MemoryRequest) (Memory, error)
}

// SessionMemoryFunc adapts a function to a [SessionMemory].
type SessionMemoryFunc func(ctx context.Context, req MemoryRequest) (Memory, error)

// SessionMemory calls f(ctx, req).
func (f SessionMemoryFunc) SessionMemory(ctx context.Context, req MemoryRequest) (Memory, error) {
	return f(ctx, req)
}

// MemoryRequest asks a [SessionMemory] for its summary of a conversation.
type MemoryRequest struct {
	// SessionID is the conversation's session id; Leaf the uuid of its chain's leaf.
	SessionID, Leaf string
	// Records are the turn's [Input.Records], for a SessionMemory that keeps its summaries
	// in the transcript (as [transcript.SubtypeSessionMemory] records). Read them only.
	Records []transcript.Record
}

// Memory is a session-memory summary.
type Memory struct {
	// Summary is the summary text; empty when there is none yet.
	Summary string
	// Through is the uuid of the last record the summary covers.
	Through string
}

// memorySummary returns the session memory's summary of t's view when it is fresh, with the
// cut the kept tail must not go past (the messages after Through are not in it), or nil.
func (co *compactor) memorySummary(ctx context.Context, t *turn, custom string) (*summary, string) {
	mem := co.cfg.Memory
	if mem == nil || strings.TrimSpace(custom) != "" {
		return nil, ""
	}
	m, err := mem.SessionMemory(ctx, MemoryRequest{SessionID: t.sessionID, Leaf: t.chain.Leaf.UUID, Records: t.in.Records})
	switch {
	case err != nil:
		return nil, fmt.Sprintf("session memory failed, the summarizer writes the summary: %v", err)
	case strings.TrimSpace(m.Summary) == "":
		return nil, "session memory has no summary yet"
	}
	for i := range t.items {
		if t.items[i].uuid == m.Through && !t.items[i].installed(t.boundaryPos) {
			return &summary{text: strings.TrimSpace(m.Summary), by: summarizerSessionMemory, through: i + 1}, ""
		}
	}
	return nil, fmt.Sprintf("session memory is stale: the record it covers up to, %q, is not in this turn's view", m.Through)
}
