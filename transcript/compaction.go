package transcript

import "encoding/json"

// KindCompaction is the "type" of a provider's compaction: the block Anthropic's server-side
// compaction (compact_20260112) puts at the start of an answer, and the encrypted item
// OpenAI's Responses compaction returns (a Codex rollout records it as a response item).
// Both decode as an [UnknownBlock] that keeps the provider's bytes, since the block must go
// back exactly as it came.
const KindCompaction BlockKind = "compaction"

// kindCompactionSummary is the name early Codex versions gave the compaction item.
const kindCompactionSummary BlockKind = "compaction_summary"

// Compaction says what a provider's compaction block or item is, for [CompactionOf].
type Compaction int

// The states of a block as a compaction.
const (
	// NotCompaction: the block is no provider compaction.
	NotCompaction Compaction = iota
	// CompactionPoint: a compaction that took effect. The provider reads the conversation
	// from it on: it is sent back byte for byte, and nothing before it is sent again.
	CompactionPoint
	// CompactionFailed: a compaction block whose content is null (Anthropic's failed
	// compaction), or an item with neither content nor encrypted content. The provider
	// treats it as a no-op.
	CompactionFailed
)

// CompactionOf tells whether b is a provider compaction and whether it took effect. An
// Anthropic block with a string "content" took effect; its content null means the
// summarization failed. An OpenAI item has no "content": it took effect when it holds a
// non-empty "encrypted_content".
func CompactionOf(b Block) Compaction {
	u, ok := b.(*UnknownBlock)
	if !ok || u == nil || u.Type != KindCompaction && u.Type != kindCompactionSummary {
		return NotCompaction
	}
	var f struct {
		Content          json.RawMessage `json:"content"`
		EncryptedContent json.RawMessage `json:"encrypted_content"`
	}
	if json.Unmarshal(u.JSON, &f) != nil {
		return CompactionFailed
	}
	switch {
	case len(f.Content) > 0:
		var s string
		if json.Unmarshal(f.Content, &s) == nil && s != "" {
			return CompactionPoint
		}
	case len(f.EncryptedContent) > 0:
		var s string
		if json.Unmarshal(f.EncryptedContent, &s) == nil && s != "" {
			return CompactionPoint
		}
	}
	return CompactionFailed
}

// ClearedInputTokens is what the provider's context editing cleared from the prompt of the
// call that m answers: the sum of cleared_input_tokens over the answer's
// context_management.applied_edits (Anthropic's clear_tool_uses_20250919 and
// clear_thinking_20251015). The usage of the answer already leaves them out; the messages
// the client sends still hold them. 0 when the answer reports no edit, or m is nil.
func (m *Message) ClearedInputTokens() int {
	if m == nil {
		return 0
	}
	raw, ok := m.Extra["context_management"]
	if !ok {
		return 0
	}
	var cm struct {
		AppliedEdits []struct {
			ClearedInputTokens int `json:"cleared_input_tokens"`
		} `json:"applied_edits"`
	}
	if json.Unmarshal(raw, &cm) != nil {
		return 0
	}
	n := 0
	for _, e := range cm.AppliedEdits {
		n += max(e.ClearedInputTokens, 0)
	}
	return n
}
