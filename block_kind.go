package agentctx

import "reflect"

// KindOf returns b's kind, or "" for a nil block (typed or not), where b.Kind() would
// panic or lie.
func KindOf(b Block) BlockKind {
	if IsNilBlock(b) {
		return ""
	}
	return b.Kind()
}

// IsNilBlock reports whether b is nil or a nil pointer. The block kinds of a transcript are
// told by a type switch; reflection is left for other types.
func IsNilBlock(b Block) bool {
	switch b := b.(type) {
	case nil:
		return true
	case *Text:
		return b == nil
	case *ToolUse:
		return b == nil
	case *ToolResult:
		return b == nil
	case *Thinking:
		return b == nil
	case *RedactedThinking:
		return b == nil
	case *Image:
		return b == nil
	case *Document:
		return b == nil
	}
	v := reflect.ValueOf(b)
	return v.Kind() == reflect.Pointer && v.IsNil()
}
