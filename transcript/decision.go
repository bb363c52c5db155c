package transcript

import (
	"crypto/sha256"
	"encoding/hex"
)

// BudgetDecision freezes the tool-result budget's verdict on the tool results it saw in one
// turn. A result listed as kept is never replaced later; a replaced one is shown as Preview on
// every later turn, byte for byte.
type BudgetDecision struct {
	Results []BudgetResult `json:"results"`
}

// BudgetResult is the budget's verdict on one tool result.
type BudgetResult struct {
	ToolUseID     string `json:"toolUseId"`
	Replaced      bool   `json:"replaced,omitempty"`
	OriginalChars int    `json:"originalChars,omitempty"`
	// Ref names the full content in the ResultStore; Preview is the text the model sees instead.
	Ref     string `json:"ref,omitempty"`
	Preview string `json:"preview,omitempty"`
}

// SnipDecision removes records from the model's view (the transcript keeps them). The chain is
// relinked across the gap.
type SnipDecision struct {
	RemovedUUIDs []string `json:"removedUuids"`
	Reason       string   `json:"reason,omitempty"`
	TokensFreed  int      `json:"tokensFreed,omitempty"`
}

// MicrocompactDecision records tool results whose content was cleared from the view.
type MicrocompactDecision struct {
	Trigger           string   `json:"trigger"` // "time", "cached", or "compact" (a compaction cleared them: see [github.com/agentctx/agentctx.CompactRungClearResults])
	ClearedToolUseIDs []string `json:"clearedToolUseIds"`
	GapMinutes        float64  `json:"gapMinutes,omitempty"`
	TokensSaved       int      `json:"tokensSaved,omitempty"`
	// PinnedUUID (trigger "cached") is the uuid of the user record whose message carries the
	// cache_edits block deleting ClearedToolUseIDs; it is re-sent there on every later turn.
	PinnedUUID string `json:"pinnedUuid,omitempty"`
}

// CollapseCommit replaces the span of conversation records from FirstUUID to LastUUID
// (inclusive, along the chain) by one summary message.
type CollapseCommit struct {
	CollapseID string `json:"collapseId"`
	FirstUUID  string `json:"firstUuid"`
	LastUUID   string `json:"lastUuid"`
	Summary    string `json:"summary"`
}

// CompactFailure records a compaction attempt that failed: the summarizer's error, a reply
// without a usable summary, or prompt-too-long after every retry. The circuit breaker counts
// the failures of the primary summarizer (see [github.com/agentctx/agentctx.CompactConfig]).
type CompactFailure struct {
	Trigger    string `json:"trigger"` // "auto", "manual" or "collapse"
	Summarizer string `json:"summarizer"`
	// Fallback is true for a failure of the fallback summarizer, which the breaker does not
	// count against the primary one.
	Fallback  bool   `json:"fallback,omitempty"`
	Reason    string `json:"reason"`
	Attempts  int    `json:"attempts"`
	PreTokens int    `json:"preTokens"`
	// LeafUUID is the chain's leaf when the attempt was made.
	LeafUUID string `json:"leafUuid"`
}

// PinDecision pins records: the text of each record named by UUIDs survives every compaction
// verbatim, re-placed right after the summary while the record itself is no longer in the view.
// Tokens is what the pinned text counted when pinned.
type PinDecision struct {
	UUIDs  []string `json:"uuids"`
	Reason string   `json:"reason,omitempty"`
	Tokens int      `json:"tokens"`
}

// CacheTTLDecision is the time to live the request's cache markers carry from its record on,
// chosen from the idle gaps of the session (see [github.com/agentctx/agentctx.CacheConfig]'s
// TTL "auto"): TTL is "5m" or "1h". Gaps is the number of gaps between consecutive responses
// of 5 to 60 minutes seen when it was chosen; Rewrites5m what those gaps cost in 5-minute
// rewrites of the cached prefix, Premium1h what 1-hour writes would have cost more, both in
// base-input-token equivalents.
type CacheTTLDecision struct {
	TTL        string  `json:"ttl"`
	Gaps       int     `json:"gaps"`
	Rewrites5m float64 `json:"rewrites5m"`
	Premium1h  float64 `json:"premium1h"`
}

// ReminderDecision is a reminder the library put in the model's view (see
// [github.com/agentctx/agentctx.SnipConfig]): Text, a meta user message, follows the record
// named by AfterUUID on every later turn while that record is in the view, byte for byte.
type ReminderDecision struct {
	// Kind is one of the Reminder* constants.
	Kind string `json:"kind"`
	// AfterUUID is the record the reminder follows: the chain's leaf when it was made.
	AfterUUID string `json:"afterUuid"`
	// Text is what the model sees.
	Text string `json:"text"`
	// GrowthTokens is the growth of the view since the last snip or reminder that led to it.
	GrowthTokens int `json:"growthTokens,omitempty"`
}

// The kinds of [ReminderDecision].
const (
	// ReminderContextEfficiency nudges the model to snip the messages it no longer needs.
	ReminderContextEfficiency = "context_efficiency"
)

// Rehydration describes a record a compaction wrote after its summary to re-inject working
// material: Kind is one of the Rehydrate* constants; Path names a file, Name a skill (or a
// re-injected announcement's kind and name).
type Rehydration struct {
	Kind string `json:"kind"`
	Path string `json:"path,omitempty"`
	Name string `json:"name,omitempty"`
}

// The kinds of [Rehydration].
const (
	RehydrateFile  = "file"  // a recently read file, re-read after the compaction
	RehydrateSkill = "skill" // the content of an invoked skill
	RehydrateTodos = "todos" // the last todo list
	RehydratePlan  = "plan"  // the last plan
	RehydrateHook  = "hook"  // context a session-start hook returned after the compaction
	// RehydratePause ends what the library re-injects after an answer that paused after
	// the provider's compaction (pause_after_compaction, stop_reason "compaction"): it
	// records the pause as handled and asks the model to go on.
	RehydratePause = "provider_pause"
	// RehydrateAnnouncement is an announcement (see [Announcement]) made before the
	// compaction; the record carries the announcement's kind and name as well.
	RehydrateAnnouncement = "announcement"
)

// SessionMemoryExtraction is a session-memory extraction: a summary of the conversation up
// to the record named by Through, written in the background so that a compaction can use it
// instead of asking a model then. The record sits beside the chain (no parentUuid).
type SessionMemoryExtraction struct {
	// Summary is the extracted summary.
	Summary string `json:"summary"`
	// Through is the uuid of the last record the summary covers.
	Through string `json:"through"`
	// Tokens is the conversation's size when it was extracted, in tokens: the growth since
	// is measured from it.
	Tokens int `json:"tokens"`
	// By names what wrote it.
	By string `json:"by,omitempty"`
}

// Announcement marks a meta user record the runtime wrote to tell the model of something it
// must keep knowing: Kind is one of the Announce* constants, Name tells apart the things of
// one kind (a task's id, a server's name; "" when there is one of the kind). A later
// announcement of the same kind and name supersedes an earlier one.
type Announcement struct {
	Kind string `json:"kind"`
	Name string `json:"name,omitempty"`
}

// The kinds of [Announcement].
const (
	AnnounceTools  = "tools"       // tools added or removed since the session started
	AnnounceMCP    = "mcp_servers" // MCP servers and their instructions, as changed
	AnnounceAgents = "agents"      // the agents the model can start, as changed
	AnnounceTask   = "task"        // the state of an asynchronous task
)

// RecoveryDecision is a rung of the recovery ladder (see [github.com/agentctx/agentctx.Pipeline.Recover]), on a
// [SubtypeRecovery] decision record or, for [RungContinue], on the user record of the
// continuation turn. The records alone say which rungs a conversation already climbed, so
// that a restart or a fork finds the same ladder.
type RecoveryDecision struct {
	// Rung is one of the Rung* constants.
	Rung string `json:"rung"`
	// LeafUUID is the chain's leaf when the provider refused the request.
	LeafUUID string `json:"leafUuid"`
	// Tokens, Limit and Window are the provider's figures of a prompt too long (zero when it
	// gave none); Counted is the counted size of the request it refused.
	Tokens  int `json:"tokens,omitempty"`
	Limit   int `json:"limit,omitempty"`
	Window  int `json:"window,omitempty"`
	Counted int `json:"counted,omitempty"`
	// Bytes is the size of the body the provider refused as too large: the session's body
	// limit is one byte less from then on.
	Bytes int `json:"bytes,omitempty"`
	// Media lists the media blocks replaced by a text marker from then on.
	Media []StrippedMedia `json:"media,omitempty"`
	// MaxTokens is the raised output cap (RungOutputCap).
	MaxTokens int `json:"maxTokens,omitempty"`
	// MessageID and Withheld name the response cut at max_tokens and its records, which the
	// view leaves out from then on (RungOutputCap: the response is asked for again).
	MessageID string   `json:"messageId,omitempty"`
	Withheld  []string `json:"withheld,omitempty"`
	// Continuation counts the continuation turns of a run of cut responses, from 1
	// (RungContinue).
	Continuation int `json:"continuation,omitempty"`
	// Reason is the provider's explanation, or why the rung ran.
	Reason string `json:"reason"`
}

// StrippedMedia is one media block the provider refused, identified by the hash of its
// source ([MediaHash]) wherever it stands in the conversation.
type StrippedMedia struct {
	Hash string `json:"hash"`
	// Kind is "image" or "document".
	Kind string `json:"kind"`
	// Path is where the block stood in the refused request ("messages.3.content.1"), or the
	// rule that picked it when the provider named no path.
	Path string `json:"path,omitempty"`
}

// Compaction triggers, as Claude Code writes them in compactMetadata.trigger. TriggerCollapse
// is the library's own: a [CompactFailure] of the collapse producer, which folds a span of the
// view into a collapse commit (see [github.com/agentctx/agentctx.CollapseConfig]); compaction's
// circuit breaker does not count it.
const (
	TriggerAuto     = "auto"
	TriggerManual   = "manual"
	TriggerCollapse = "collapse"
)

// The rungs of the recovery ladder, as [RecoveryDecision.Rung] and [github.com/agentctx/agentctx.RecoveryReport.Rung] name
// them.
const (
	// RungPromptTooLong: the provider's count of a prompt it refused is recorded, and one
	// reactive compaction runs.
	RungPromptTooLong = "prompt_too_long"
	// RungOutputRoom: the provider refused a prompt that fits its window with max_tokens on
	// top of it; its count of the prompt is recorded and the request is sent again with
	// max_tokens lowered to the room the prompt leaves, without compacting.
	RungOutputRoom = "output_room"
	// RungRequestTooLarge: the size of a body the provider refused is recorded (the
	// session's body limit drops below it), and one reactive compaction runs.
	RungRequestTooLarge = "request_too_large"
	// RungMediaRejected: the media blocks the provider refused are replaced by a text marker
	// in every later request.
	RungMediaRejected = "media_rejected"
	// RungOutputCap: the output cap is raised and the response cut at max_tokens is asked for
	// again; the raise covers that request and its continuations, and ends with the first
	// response that stops otherwise.
	RungOutputCap = "output_cap"
	// RungContinue: a user turn asks the model to continue where its cut response stopped.
	RungContinue = "continue"
)

// MediaHash identifies a media block by its source (type, data, URL, file id — not the media
// type, which normalize may correct): a hex SHA-256.
func MediaHash(s MediaSource) string {
	h := sha256.New()
	for _, part := range []string{s.Type, s.Data, s.URL, s.FileID} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// LateUsage is the provider's usage for a response that was recorded before the usage was
// known: a runtime that writes the assistant message first and learns the step's usage after
// appends it as a record of its own, so the transcript stays append-only. The record sits
// beside the chain (no parentUuid); the pressure figure reads the usage as if the response's
// record held it (a usage the record holds itself wins).
type LateUsage struct {
	// UUID is the assistant record the usage belongs to: the last record of the response.
	UUID string `json:"uuid"`
	// Usage is the response's usage as the provider reported it.
	Usage *Usage `json:"usage"`
}
