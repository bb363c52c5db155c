// Package host lets a runtime that keeps its messages in its own store (a database, its own
// types) use agentctx for its decisions only.
//
// The host passes its messages each turn, each under its own stable id ([Message]). A
// [Conversation] derives their records — uuids from the ids and the content, so the same
// messages always give the same records — and keeps what the library decides (replaced tool
// results, snips, clearings, collapses, compactions and their summaries, failures, recovery
// rungs) in a [DecisionStore] of its own: a [FileStore], a [MemoryStore], or
// github.com/agentctx/agentctx/postgres's DecisionStore. Each turn the stored decisions are
// replayed onto the host's messages where they were made, so the host's store stays the only
// log of its messages and no second transcript has to be kept in step with it. A [Memo]
// carries the replay from one turn to the next, so that a steady turn costs what was added
// since the last one rather than the whole history.
//
// The invariants: the same messages and stored decisions give the same request bytes, which
// are the bytes a [github.com/agentctx/agentctx/session.Session] handed the same messages
// builds; a new process resuming on the same store builds the bytes the live one would; a
// decision made on a message the host has since deleted or edited is reported
// ([Result.Dropped]) and never applied to another message; a store that lost its decisions is
// reported ([Result.Lost]) and the conversation is built from the host's messages.
package host
