package agentctx

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
	Trigger           string   `json:"trigger"` // "time", "cached", or "compact" (a compaction cleared them: see [CompactRungClearResults])
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
// the failures of the primary summarizer (see [CompactConfig]).
type CompactFailure struct {
	Trigger    string `json:"trigger"` // "auto" or "manual"
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

// Rehydration describes a record a compaction wrote after its summary to re-inject working
// material: Kind is one of the Rehydrate* constants; Path names a file, Name a skill.
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
)
