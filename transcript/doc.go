// Package transcript is the record model of an agent session and its durable form: the
// records of a Claude Code session file, how they are read and appended, and the
// conversation they hold. agentctx's Pipeline builds every request from these records, and
// everything it decides is written back as one of them.
//
// # Records
//
// A session is an append-only JSONL file of [Record] values in Claude Code's session format
// (~/.claude/projects/*/*.jsonl): user and assistant messages ([Message], whose content is a
// list of [Block] variants such as [Text], [ToolUse], [ToolResult], [Thinking], [Image]),
// system records, and the decision records the library writes ([Subtype] names them; their
// payloads are [BudgetDecision], [SnipDecision], [MicrocompactDecision], [CollapseCommit],
// [CompactMetadata] and the boundary's [History], [CompactFailure], [PinDecision], [RecoveryDecision], [ReminderDecision]; and the facts it records beside the chain, [SessionMemoryExtraction] and [LateUsage]). Unknown record
// types, fields and content blocks ([UnknownBlock]) survive a read/write round trip byte for
// byte. The uuids of the records the library makes derive from their content
// ([ContentUUID]), so the same decision made twice is the same record.
//
// # Reading and appending
//
// [Read] and [ReadFile] read a whole session, [Decoder] streams one; an OpenAI Codex CLI
// rollout is read into the same records ([DetectFormat]). Damage costs only what is damaged:
// a field that cannot be read is dropped from its record, which is kept; a line that is no
// record is skipped; each is named by file, line and field ([Record.Damage], [LineError]),
// and a torn last line left by a crash is reported, never rewritten. An [Appender] adds
// records under a file lock (durably with [AppendOptions].Sync) and never changes a byte
// already written; a [Store] such as [DirStore] keeps the sessions of a fleet, with
// positioned appends that refuse a conflict.
//
// # The conversation
//
// [BuildChain] rebuilds the conversation from the parentUuid graph: it walks from the leaf to
// the latest compact boundary and re-attaches what a plain parent walk loses, the split
// records of one assistant response and the results of its parallel tool calls; it bridges a
// link broken by an unreadable line or a parent the file does not hold, keeps a record
// written twice once, and applies the tail a compaction kept. A [ChainCache] builds the next turn's chain by extending the previous
// one, and the chain's [Scan] lists the decision records, damage and responses of the whole
// file, so that a steady turn costs the records written since, not the file.
//
// The codec of blocks ([MarshalBlock], [AppendBlock], [HashBlock], [FieldBits]) is here too,
// so that every package that writes or hashes a block agrees on its bytes.
package transcript
