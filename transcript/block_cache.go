package transcript

// markable is implemented by the block kinds that can carry a cache_control marker: text,
// image, document, tool_use, tool_result, server_tool_use and the server tool results.
type markable interface {
	fielder
	marker() **CacheControl
}

func (b *Text) marker() **CacheControl             { return &b.CacheControl }
func (b *Image) marker() **CacheControl            { return &b.CacheControl }
func (b *Document) marker() **CacheControl         { return &b.CacheControl }
func (b *ToolUse) marker() **CacheControl          { return &b.CacheControl }
func (b *ToolResult) marker() **CacheControl       { return &b.CacheControl }
func (b *ServerToolUse) marker() **CacheControl    { return &b.CacheControl }
func (b *ServerToolResult) marker() **CacheControl { return &b.CacheControl }

// CacheControlOf returns b's cache_control marker: nil when it has none or is of a kind that
// carries none (thinking, redacted_thinking, tool_reference, cache_edits, unknown blocks). A
// marker inside a tool result's content is its content blocks', not the result's.
func CacheControlOf(b Block) *CacheControl {
	if m, ok := b.(markable); ok {
		return *m.marker()
	}
	return nil
}

// WithCacheControl returns a copy of b carrying the marker cc, b itself unchanged; a nil cc
// removes the marker, and the copy then encodes with no "cache_control" key, as a block
// decoded without one does. A block of a kind that carries no marker is returned as it is.
// The copy shares everything else with b (a tool result's content, raw JSON, unknown fields),
// which, like b, must not be modified in place.
func WithCacheControl(b Block, cc *CacheControl) Block {
	var out markable
	switch b := b.(type) {
	case *Text:
		out = shallowCopy(b)
	case *Image:
		out = shallowCopy(b)
	case *Document:
		out = shallowCopy(b)
	case *ToolUse:
		out = shallowCopy(b)
	case *ToolResult:
		out = shallowCopy(b)
	case *ServerToolUse:
		out = shallowCopy(b)
	case *ServerToolResult:
		out = shallowCopy(b)
	default:
		return b
	}
	*out.marker() = cc
	if cc == nil {
		forgetField(out, "cache_control")
	}
	return out
}

// shallowCopy returns a pointer to a copy of *b.
func shallowCopy[T any](b *T) *T {
	c := *b
	return &c
}

// forgetField marks b's field key absent, so that its zero value is not encoded (as null).
func forgetField(b fielder, key string) {
	for i, f := range b.fields() {
		if f.Key == key {
			*b.pres() = b.pres().Forget(i + 1) // MarshalBlock puts "type" at index 0
			return
		}
	}
}

// WithoutCacheReference returns a copy of b without its cache_reference, leaving no
// "cache_reference" key in its encoding.
func (b *ToolResult) WithoutCacheReference() *ToolResult {
	c := shallowCopy(b)
	c.CacheReference = ""
	forgetField(c, "cache_reference")
	return c
}
