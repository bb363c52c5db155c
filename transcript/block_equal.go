package transcript

import (
	"bytes"
	"encoding/json"
	"slices"
)

// EqualMessage reports whether a and b hold the same message: the same id, type, role, model,
// stop reason and sequence, usage, unknown fields and presence bits (the fields they were
// decoded with), and content blocks that are equal one by one ([EqualBlock]). Equal messages
// encode the same way. It compares the fields in place, allocating nothing, so it costs
// about a comparison of the messages' bytes; the same pointer is equal at once.
func EqualMessage(a, b *Message) bool {
	if a == b {
		return true
	}
	if a == nil || b == nil {
		return false
	}
	return a.ID == b.ID && a.Type == b.Type && a.Role == b.Role && a.Model == b.Model &&
		a.StringContent == b.StringContent && a.StopReason == b.StopReason && a.StopSequence == b.StopSequence &&
		a.presence == b.presence && equalUsage(a.Usage, b.Usage) && equalExtra(a.Extra, b.Extra) &&
		equalBlocks(a.Content, b.Content)
}

// EqualBlock reports whether a and b are the same block: of one type, with equal fields,
// presence bits, unknown fields and (for a tool result) content blocks. It is true exactly
// when [HashBlock] writes the same bytes for both, except that a nil and an empty list of
// content blocks differ here, so equal blocks encode the same way. A nil block equals only a
// nil block, a nil pointer only a nil pointer of its type.
func EqualBlock(a, b Block) bool {
	if a == b { // every block type is a pointer: the same block, or nil pointers of one type
		return true
	}
	if IsNilBlock(a) || IsNilBlock(b) {
		return false
	}
	switch x := a.(type) {
	case *Text:
		y, ok := b.(*Text)
		return ok && x.Text == y.Text && equalRaw(x.Citations, y.Citations) && equalCache(x.CacheControl, y.CacheControl) &&
			x.presence == y.presence && equalExtra(x.Extra, y.Extra)
	case *Image:
		y, ok := b.(*Image)
		return ok && equalSource(&x.Source, &y.Source) && equalCache(x.CacheControl, y.CacheControl) &&
			x.presence == y.presence && equalExtra(x.Extra, y.Extra)
	case *Document:
		y, ok := b.(*Document)
		return ok && x.Title == y.Title && x.Context == y.Context && equalRaw(x.Citations, y.Citations) &&
			equalCache(x.CacheControl, y.CacheControl) && x.presence == y.presence &&
			equalSource(&x.Source, &y.Source) && equalExtra(x.Extra, y.Extra)
	case *ToolUse:
		y, ok := b.(*ToolUse)
		return ok && x.ID == y.ID && x.Name == y.Name && equalRaw(x.Input, y.Input) &&
			equalCache(x.CacheControl, y.CacheControl) && x.presence == y.presence && equalExtra(x.Extra, y.Extra)
	case *ToolResult:
		y, ok := b.(*ToolResult)
		return ok && x.ToolUseID == y.ToolUseID && x.StringContent == y.StringContent && x.IsError == y.IsError &&
			x.CacheReference == y.CacheReference && equalCache(x.CacheControl, y.CacheControl) &&
			x.presence == y.presence && equalExtra(x.Extra, y.Extra) && equalBlocks(x.Content, y.Content)
	case *Thinking:
		y, ok := b.(*Thinking)
		return ok && x.Thinking == y.Thinking && x.Signature == y.Signature && x.presence == y.presence &&
			equalExtra(x.Extra, y.Extra)
	case *RedactedThinking:
		y, ok := b.(*RedactedThinking)
		return ok && x.Data == y.Data && x.presence == y.presence && equalExtra(x.Extra, y.Extra)
	case *ToolReference:
		y, ok := b.(*ToolReference)
		return ok && x.ToolName == y.ToolName && x.presence == y.presence && equalExtra(x.Extra, y.Extra)
	case *ServerToolUse:
		y, ok := b.(*ServerToolUse)
		return ok && x.ID == y.ID && x.Name == y.Name && equalRaw(x.Input, y.Input) &&
			equalCache(x.CacheControl, y.CacheControl) && x.presence == y.presence && equalExtra(x.Extra, y.Extra)
	case *ServerToolResult:
		y, ok := b.(*ServerToolResult)
		return ok && x.Type == y.Type && x.ToolUseID == y.ToolUseID && equalRaw(x.Content, y.Content) &&
			equalCache(x.CacheControl, y.CacheControl) && x.presence == y.presence && equalExtra(x.Extra, y.Extra)
	case *CacheEdits:
		y, ok := b.(*CacheEdits)
		return ok && (x.Edits == nil) == (y.Edits == nil) && slices.Equal(x.Edits, y.Edits)
	case *UnknownBlock:
		y, ok := b.(*UnknownBlock)
		return ok && x.Type == y.Type && equalRaw(x.JSON, y.JSON)
	}
	return false
}

// equalBlocks reports whether a and b are both nil, or hold equal blocks in order.
func equalBlocks(a, b []Block) bool {
	return (a == nil) == (b == nil) && slices.EqualFunc(a, b, EqualBlock)
}

// equalSource reports whether two media sources are the same.
func equalSource(a, b *MediaSource) bool {
	return a.Type == b.Type && a.MediaType == b.MediaType && a.URL == b.URL && a.FileID == b.FileID &&
		a.presence == b.presence && a.Data == b.Data && equalExtra(a.Extra, b.Extra)
}

// equalUsage reports whether two usages are both nil or the same.
func equalUsage(a, b *Usage) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.InputTokens == b.InputTokens && a.CacheCreationInputTokens == b.CacheCreationInputTokens &&
		a.CacheReadInputTokens == b.CacheReadInputTokens && a.OutputTokens == b.OutputTokens &&
		a.presence == b.presence && equalExtra(a.Extra, b.Extra)
}

// equalCache reports whether two cache markers are both nil or the same.
func equalCache(a, b *CacheControl) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// equalRaw reports whether two raw JSON values are the same bytes, nil only equal to nil (a
// nil value is a zero field, an empty one does not encode).
func equalRaw(a, b json.RawMessage) bool {
	return (a == nil) == (b == nil) && bytes.Equal(a, b)
}

// equalExtra reports whether two sets of unknown fields hold the same keys and values (nil
// and empty are the same: neither writes a field).
func equalExtra(a, b map[string]json.RawMessage) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		w, ok := b[k]
		if !ok || !equalRaw(v, w) {
			return false
		}
	}
	return true
}
