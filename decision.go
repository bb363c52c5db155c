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
	Trigger           string   `json:"trigger"` // "time" or "cached"
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
