package transcript

import (
	"reflect"
)

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
	case *ToolReference:
		return b == nil
	case *ServerToolUse:
		return b == nil
	case *ServerToolResult:
		return b == nil
	}
	v := reflect.ValueOf(b)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// FieldBits returns which of b's fields the line it was read from held (present), and which of
// those it held as JSON null (null), one bit per field in the order [MarshalBlock] writes them,
// "type" first: beside the field values, what decides b's encoding (a zero field is written
// only when the line held it). A block built in code holds none; nil and the kinds without
// fields (an [UnknownBlock], a [CacheEdits]) give zero. A hash of what a block encodes to must
// include them.
func FieldBits(b Block) (present, null uint64) {
	if f, ok := b.(fielder); ok && !IsNilBlock(b) {
		return f.pres().Bits()
	}
	return 0, 0
}

// FieldBits returns which of the source's fields the line it was read from held, and which of
// those as JSON null, as [FieldBits] does for a block.
func (s *MediaSource) FieldBits() (present, null uint64) { return s.presence.Bits() }
