package agentctx

import (
	"encoding/json"
	"slices"
	"strings"
	"unicode"

	"github.com/agentctx/agentctx/transcript"
)

// finalTurnStart returns the index of the first message of the final assistant turn: the
// message after the last user message without tool results. It returns n when the request
// ends with such a user message (the final turn has not started).
func finalTurnStart(n int, msg func(int) (transcript.Role, []transcript.Block)) int {
	for i := n - 1; i >= 0; i-- {
		role, content := msg(i)
		if role == transcript.RoleUser && !containsKind(content, transcript.KindToolResult) {
			return i + 1
		}
	}
	return 0
}

func containsKind(bs []transcript.Block, k transcript.BlockKind) bool {
	for _, b := range bs {
		if transcript.KindOf(b) == k {
			return true
		}
	}
	return false
}

func isThinking(b transcript.Block) bool {
	switch b.(type) {
	case *transcript.Thinking, *transcript.RedactedThinking:
		return true
	}
	return false
}

func containsThinking(bs []transcript.Block) bool { return slices.ContainsFunc(bs, isThinking) }

// hasSubstance reports whether bs holds a block other than cache_edits.
func hasSubstance(bs []transcript.Block) bool {
	for _, b := range bs {
		if transcript.KindOf(b) != transcript.KindCacheEdits {
			return true
		}
	}
	return false
}

func isJSONObject(raw json.RawMessage) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal(raw, &m) == nil && m != nil
}

// isBlank reports whether s is empty or only whitespace: the provider rejects such text.
func isBlank(s string) bool { return strings.TrimFunc(s, isSpaceRune) == "" }

func isSpaceRune(r rune) bool { return unicode.IsSpace(r) }

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// validToolID reports whether id matches ^[a-zA-Z0-9_-]+$ (contract 2.10).
func validToolID(id string) bool {
	if id == "" {
		return false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; !isAlnum(c) && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

// validToolName reports whether name matches ^[a-zA-Z0-9_-]{1,128}$.
func validToolName(name string) bool { return len(name) <= 128 && validToolID(name) }

// replayableSignature reports whether a thinking signature can be what the provider issued:
// non-empty base64 of a plausible length. Sanitised placeholders such as
// "[REDACTED_SIGNATURE]" cannot be replayed.
func replayableSignature(sig string) bool {
	if len(sig) < 32 {
		return false
	}
	for i := 0; i < len(sig); i++ {
		if c := sig[i]; !isAlnum(c) && c != '+' && c != '/' && c != '=' && c != '-' && c != '_' {
			return false
		}
	}
	return true
}
