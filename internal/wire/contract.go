package wire

import (
	"encoding/json"
	"slices"
	"strings"
	"unicode"

	"github.com/agentctx/agentctx/transcript"
)

// FinalTurnStart returns the index of the first message of the final assistant turn: the
// message after the last user message without tool results. It returns n when the request
// ends with such a user message (the final turn has not started).
func FinalTurnStart(n int, msg func(int) (transcript.Role, []transcript.Block)) int {
	for i := n - 1; i >= 0; i-- {
		role, content := msg(i)
		if role == transcript.RoleUser && !ContainsKind(content, transcript.KindToolResult) {
			return i + 1
		}
	}
	return 0
}

// ContainsKind reports whether bs holds a block of kind k.
func ContainsKind(bs []transcript.Block, k transcript.BlockKind) bool {
	for _, b := range bs {
		if transcript.KindOf(b) == k {
			return true
		}
	}
	return false
}

// IsThinking reports whether b is a thinking or redacted thinking block.
func IsThinking(b transcript.Block) bool {
	switch b.(type) {
	case *transcript.Thinking, *transcript.RedactedThinking:
		return true
	}
	return false
}

// IsReasoningItem reports whether b is an OpenAI Responses reasoning item as the transcript
// holds it: a thinking block with an "encrypted_content" field and no signature.
func IsReasoningItem(b transcript.Block) bool {
	t, ok := b.(*transcript.Thinking)
	if !ok || t == nil || t.Signature != "" {
		return false
	}
	_, ok = t.Extra["encrypted_content"]
	return ok
}

// ContainsThinking reports whether bs holds a thinking or redacted thinking block.
func ContainsThinking(bs []transcript.Block) bool { return slices.ContainsFunc(bs, IsThinking) }

// HasSubstance reports whether bs holds a block other than cache_edits.
func HasSubstance(bs []transcript.Block) bool {
	for _, b := range bs {
		if transcript.KindOf(b) != transcript.KindCacheEdits {
			return true
		}
	}
	return false
}

// IsJSONObject reports whether raw is a JSON object (not null, not another value).
func IsJSONObject(raw json.RawMessage) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal(raw, &m) == nil && m != nil
}

// IsBlank reports whether s is empty or only whitespace: the provider rejects such text.
func IsBlank(s string) bool { return strings.TrimFunc(s, IsSpaceRune) == "" }

// IsSpaceRune reports whether r is Unicode white space.
func IsSpaceRune(r rune) bool { return unicode.IsSpace(r) }

// IsAlnum reports whether c is an ASCII letter or digit.
func IsAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// ValidToolID reports whether id matches ^[a-zA-Z0-9_-]+$ (contract 2.10).
func ValidToolID(id string) bool {
	if id == "" {
		return false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; !IsAlnum(c) && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

// ValidToolName reports whether name matches ^[a-zA-Z0-9_-]{1,128}$.
func ValidToolName(name string) bool { return len(name) <= 128 && ValidToolID(name) }

// ReplayableSignature reports whether a thinking signature can be what the provider issued:
// non-empty base64 of a plausible length. Sanitised placeholders such as
// "[REDACTED_SIGNATURE]" cannot be replayed.
func ReplayableSignature(sig string) bool {
	if len(sig) < 32 {
		return false
	}
	for i := 0; i < len(sig); i++ {
		if c := sig[i]; !IsAlnum(c) && c != '+' && c != '/' && c != '=' && c != '-' && c != '_' {
			return false
		}
	}
	return true
}
