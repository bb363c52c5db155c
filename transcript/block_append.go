package transcript

import (
	"bytes"
	"encoding/json"
	"errors"
	"sync"

	"github.com/agentctx/agentctx/internal/jsonobj"
)

// AppendBlock appends b's JSON encoding to dst and returns the extended buffer: the bytes
// [MarshalBlock] returns (and, for a [CacheEdits] block, the bytes a request body holds),
// written straight into dst instead of through the nested MarshalJSON methods whose every
// level encoding/json validates and compacts again. The same key order, the same presence
// rules (a zero field is written only when the line it was read from held it, as null when it
// held null), the same string escapes (encoding/json's, without HTML escaping), raw JSON
// compacted as encoding/json compacts it. A block the fast writer leaves — one carrying
// unknown fields, a nil block, an [UnknownBlock], raw JSON that does not compact — goes
// through MarshalBlock, which gives the same bytes or the error; on an error the returned
// buffer is dst, possibly grown. AppendBlock is safe for concurrent use.
func AppendBlock(dst []byte, b Block) ([]byte, error) {
	start := len(dst)
	a := blockAppender{buf: dst}
	err := a.block(b)
	if a.raw != nil {
		a.raw.Reset()
		rawPool.Put(a.raw)
	}
	if err == nil {
		return a.buf, nil
	}
	enc, err := MarshalBlock(b)
	if err != nil {
		return a.buf[:start], err
	}
	return append(a.buf[:start], enc...), nil
}

// errSlow makes the fast writer hand a block to MarshalBlock.
var errSlow = errors.New("agentctx: block left to the reference encoder")

// blockAppender is the state of one AppendBlock call: the buffer and, once raw JSON was
// compacted, the scratch json.Compact writes into.
type blockAppender struct {
	buf []byte
	raw *bytes.Buffer
}

// rawPool holds the scratch buffers json.Compact writes into, so that a steady turn's blocks
// compact their raw JSON without allocating.
var rawPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// compact appends raw JSON compacted, as encoding/json writes a json.RawMessage.
func (a *blockAppender) compact(r []byte) error {
	if a.raw == nil {
		a.raw = rawPool.Get().(*bytes.Buffer)
	}
	a.raw.Reset()
	if err := json.Compact(a.raw, r); err != nil {
		return err
	}
	a.buf = append(a.buf, a.raw.Bytes()...)
	return nil
}

func (a *blockAppender) str(s string) { a.buf = jsonobj.AppendString(a.buf, s) }

// block writes one block the way MarshalBlock does (and, for cache_edits, the way a request
// writes it); errSlow or an error leaves the buffer to be truncated by the caller.
func (a *blockAppender) block(b Block) error {
	switch b := b.(type) {
	case *Text:
		if b == nil || len(b.Extra) > 0 {
			return errSlow
		}
		o := a.object(b.presence, KindText)
		o.str(1, "text", b.Text)
		if err := o.raw(2, "citations", b.Citations); err != nil {
			return err
		}
		o.cacheControl(3, b.CacheControl)
	case *ToolUse:
		if b == nil || len(b.Extra) > 0 {
			return errSlow
		}
		o := a.object(b.presence, KindToolUse)
		o.str(1, "id", b.ID)
		o.str(2, "name", b.Name)
		if err := o.raw(3, "input", b.Input); err != nil {
			return err
		}
		o.cacheControl(4, b.CacheControl)
	case *ToolResult:
		if b == nil || len(b.Extra) > 0 {
			return errSlow
		}
		o := a.object(b.presence, KindToolResult)
		o.str(1, "tool_use_id", b.ToolUseID)
		if err := o.content(2, b.Content, b.StringContent); err != nil {
			return err
		}
		o.bool(3, "is_error", b.IsError)
		o.cacheControl(4, b.CacheControl)
		o.str(5, "cache_reference", b.CacheReference)
	case *Thinking:
		if b == nil || len(b.Extra) > 0 {
			return errSlow
		}
		o := a.object(b.presence, KindThinking)
		o.str(1, "thinking", b.Thinking)
		o.str(2, "signature", b.Signature)
	case *RedactedThinking:
		if b == nil || len(b.Extra) > 0 {
			return errSlow
		}
		o := a.object(b.presence, KindRedactedThinking)
		o.str(1, "data", b.Data)
	case *Image:
		if b == nil || len(b.Extra) > 0 || len(b.Source.Extra) > 0 {
			return errSlow
		}
		o := a.object(b.presence, KindImage)
		o.source(1, &b.Source)
		o.cacheControl(2, b.CacheControl)
	case *Document:
		if b == nil || len(b.Extra) > 0 || len(b.Source.Extra) > 0 {
			return errSlow
		}
		o := a.object(b.presence, KindDocument)
		o.source(1, &b.Source)
		o.str(2, "title", b.Title)
		o.str(3, "context", b.Context)
		if err := o.raw(4, "citations", b.Citations); err != nil {
			return err
		}
		o.cacheControl(5, b.CacheControl)
	case *ToolReference:
		if b == nil || len(b.Extra) > 0 {
			return errSlow
		}
		o := a.object(b.presence, KindToolReference)
		o.str(1, "tool_name", b.ToolName)
	case *ServerToolUse:
		if b == nil || len(b.Extra) > 0 {
			return errSlow
		}
		o := a.object(b.presence, KindServerToolUse)
		o.str(1, "id", b.ID)
		o.str(2, "name", b.Name)
		if err := o.raw(3, "input", b.Input); err != nil {
			return err
		}
		o.cacheControl(4, b.CacheControl)
	case *ServerToolResult:
		if b == nil || len(b.Extra) > 0 || b.Type == "" {
			return errSlow
		}
		o := a.object(b.presence, b.Type)
		o.str(1, "tool_use_id", b.ToolUseID)
		if err := o.raw(2, "content", b.Content); err != nil {
			return err
		}
		o.cacheControl(3, b.CacheControl)
	case *CacheEdits:
		if b == nil {
			return errSlow
		}
		a.buf = append(a.buf, `{"type":"cache_edits","edits":`...)
		if b.Edits == nil {
			a.buf = append(a.buf, "null"...)
		} else {
			a.buf = append(a.buf, '[')
			for i, ed := range b.Edits {
				if i > 0 {
					a.buf = append(a.buf, ',')
				}
				a.buf = append(a.buf, `{"type":`...)
				a.str(ed.Type)
				a.buf = append(a.buf, `,"cache_reference":`...)
				a.str(ed.CacheReference)
				a.buf = append(a.buf, '}')
			}
			a.buf = append(a.buf, ']')
		}
		a.buf = append(a.buf, '}')
		return nil
	default:
		return errSlow
	}
	a.buf = append(a.buf, '}')
	return nil
}

// object writes the opening of a block object and its "type"; the caller writes the other
// fields through it and the closing brace.
func (a *blockAppender) object(p jsonobj.Presence, kind BlockKind) obj {
	a.buf = append(a.buf, `{"type":`...)
	a.str(string(kind))
	return obj{a: a, p: p}
}

// obj writes the fields of one object by jsonobj.Encode's rules: a zero field is left out
// unless it was present when decoded, and written as null when it was decoded from null.
// Field i is the field's index in the decoder's list, "type" being 0 for blocks.
type obj struct {
	a     *blockAppender
	p     jsonobj.Presence
	first bool // no field written yet (sources have no "type")
}

func (o *obj) key(k string) {
	if !o.first {
		o.a.buf = append(o.a.buf, ',')
	}
	o.first = false
	o.a.buf = append(o.a.buf, '"')
	o.a.buf = append(o.a.buf, k...)
	o.a.buf = append(o.a.buf, '"', ':')
}

// zero writes field i when it is zero: nothing when it was absent, null when it was null,
// else zeroJSON, what encoding/json writes for the zero value.
func (o *obj) zero(i int, k, zeroJSON string) {
	if !o.p.Has(i) {
		return
	}
	o.key(k)
	if o.p.Null(i) {
		o.a.buf = append(o.a.buf, "null"...)
		return
	}
	o.a.buf = append(o.a.buf, zeroJSON...)
}

func (o *obj) str(i int, k, s string) {
	if s == "" {
		o.zero(i, k, `""`)
		return
	}
	o.key(k)
	o.a.str(s)
}

func (o *obj) bool(i int, k string, v bool) {
	if !v {
		o.zero(i, k, "false")
		return
	}
	o.key(k)
	o.a.buf = append(o.a.buf, "true"...)
}

func (o *obj) raw(i int, k string, r json.RawMessage) error {
	if r == nil {
		o.zero(i, k, "null")
		return nil
	}
	o.key(k)
	return o.a.compact(r)
}

func (o *obj) cacheControl(i int, c *CacheControl) {
	if c == nil {
		o.zero(i, "cache_control", "null")
		return
	}
	o.key("cache_control")
	o.a.buf = append(o.a.buf, `{"type":`...)
	o.a.str(c.Type)
	if c.TTL != "" {
		o.a.buf = append(o.a.buf, `,"ttl":`...)
		o.a.str(c.TTL)
	}
	o.a.buf = append(o.a.buf, '}')
}

// source writes a media source (its Extra is empty: the caller checked).
func (o *obj) source(i int, s *MediaSource) {
	if s.Type == "" && s.MediaType == "" && s.Data == "" && s.URL == "" && s.FileID == "" && s.Extra == nil && s.presence == (jsonobj.Presence{}) {
		o.zero(i, "source", "{}")
		return
	}
	o.key("source")
	so := obj{a: o.a, p: s.presence, first: true}
	o.a.buf = append(o.a.buf, '{')
	so.str(0, "type", s.Type)
	so.str(1, "media_type", s.MediaType)
	so.str(2, "data", s.Data)
	so.str(3, "url", s.URL)
	so.str(4, "file_id", s.FileID)
	o.a.buf = append(o.a.buf, '}')
}

// content writes a tool result's "content" as contentField does: a bare string when it was
// one, else the array of its blocks, compacted as encoding/json compacts a nested value.
func (o *obj) content(i int, bs []Block, str bool) error {
	if len(bs) == 0 && !str {
		o.zero(i, "content", "[]")
		return nil
	}
	o.key("content")
	if str && len(bs) == 1 {
		if t, ok := bs[0].(*Text); ok {
			o.a.str(t.Text)
			return nil
		}
	}
	if str && len(bs) == 0 {
		o.a.buf = append(o.a.buf, `""`...)
		return nil
	}
	o.a.buf = append(o.a.buf, '[')
	for j, b := range bs {
		if j > 0 {
			o.a.buf = append(o.a.buf, ',')
		}
		if u, ok := b.(*UnknownBlock); ok {
			if err := o.a.compact(u.JSON); err != nil {
				return err
			}
			continue
		}
		if _, ok := b.(*CacheEdits); ok {
			return errSlow // MarshalBlock does not encode it: the reference encoder reports it
		}
		if err := o.a.block(b); err != nil {
			return err
		}
	}
	o.a.buf = append(o.a.buf, ']')
	return nil
}
