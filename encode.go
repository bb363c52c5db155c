package agentctx

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/agentctx/agentctx/internal/jsonobj"
)

// The request encoder writes a request body append-style, each value straight into one
// buffer, instead of through the nested MarshalJSON methods whose every level encoding/json
// validates and compacts again. Its bytes are exactly those of the reference encoder
// (marshalSlow, the blocks' MarshalBlock): the same key order, the same presence rules, the
// same string escapes (encoding/json's, without HTML escaping) and raw JSON compacted as
// encoding/json compacts it. A block it does not write itself — one carrying unknown fields,
// a nil block, a kind the request cannot hold — and a block whose raw JSON does not compact
// go through the reference encoder, which gives the same bytes or the same error.

// errSlow makes the fast encoder hand a block to the reference encoder.
var errSlow = errors.New("agentctx: block left to the reference encoder")

// encoder is the state of one request encoding.
type encoder struct {
	buf  []byte
	raw  bytes.Buffer // scratch for json.Compact
	memo *encodeMemo  // nil: encode everything
	h    memoHasher
	// sizeOnly: a part the memo holds is counted in skipped instead of copied into buf, and
	// buf is counted in skipped and emptied between messages once it holds flushBytes (see
	// flush), so a measure never holds the body whole.
	sizeOnly bool
	skipped  int
	// w, when set, receives the encoding in pieces: buf is written to it and emptied
	// between messages once it holds flushBytes (see flush), so the body is never whole.
	w       io.Writer
	written int64
	// noStore: parts the memo holds are copied, parts it does not hold are encoded and not
	// stored.
	noStore bool
	// keys and parts: the messages' keys and memoized parts, when resolve found them first.
	keys  []encodeKey
	parts [][]byte
}

// flushBytes is how much of the encoding an encoder writing to an io.Writer gathers before
// writing it.
const flushBytes = 64 << 10

// encodeTo writes r's encoding to w in pieces, copying the parts memo holds (nil: none) and
// storing none.
func encodeTo(w io.Writer, r *Request, memo *encodeMemo) (int64, error) {
	e := &encoder{memo: memo, w: w, noStore: true, buf: make([]byte, 0, 2*flushBytes)}
	if memo != nil {
		e.h.init(memo)
	}
	if err := e.request(r); err != nil {
		return e.written, err
	}
	err := e.flush(0)
	return e.written, err
}

// flush writes buf to the encoder's writer and empties it when it holds threshold bytes or
// more (and is not empty); a size-only encoder counts it instead; otherwise it does nothing.
func (e *encoder) flush(threshold int) error {
	if len(e.buf) < threshold || len(e.buf) == 0 {
		return nil
	}
	if e.sizeOnly {
		e.skipped += len(e.buf)
		e.buf = e.buf[:0]
		return nil
	}
	if e.w == nil {
		return nil
	}
	n, err := e.w.Write(e.buf)
	e.written += int64(n)
	e.buf = e.buf[:0]
	return err
}

// encodeRequest encodes r with memo (nil: no memo). With a memo, the messages' parts are
// looked up first, all at once, and the buffer is sized from the parts found.
func encodeRequest(r *Request, memo *encodeMemo) ([]byte, error) {
	e := &encoder{memo: memo}
	if memo == nil {
		e.buf = make([]byte, 0, sizeEstimate(r))
	} else {
		e.h.init(memo)
		s := getPartScratch(len(r.Messages))
		defer putPartScratch(s)
		e.keys, e.parts = s.keys, s.parts
		e.buf = make([]byte, 0, e.resolve(r))
	}
	if err := e.request(r); err != nil {
		return nil, err
	}
	if memo != nil {
		memo.observe(len(e.buf))
	}
	return e.buf, nil
}

// resolve finds the parts of r's messages the memo holds: e.keys[i] is message i's key (n is
// 0 when the message is not memoized) and e.parts[i] its encoding, or nil. It returns about
// the size of r's encoding: the parts found, and an estimate of the rest.
func (e *encoder) resolve(r *Request) int {
	for i := range r.Messages {
		e.h.reset(memoMessage)
		if e.h.message(&r.Messages[i]) {
			e.keys[i] = e.h.key()
		}
	}
	e.memo.getAll(e.keys, e.parts)
	n := headEstimate(r)
	for i := range r.Messages {
		if b := e.parts[i]; b != nil {
			n += len(b) + 1
		} else {
			n += messageEstimate(&r.Messages[i])
		}
	}
	return n + n/64
}

// partScratch holds the keys and parts encodeRequest resolves, reused across requests
// through partScratchPool.
type partScratch struct {
	keys  []encodeKey
	parts [][]byte
}

var partScratchPool sync.Pool

// getPartScratch returns scratch for the parts of n messages, zeroed.
func getPartScratch(n int) *partScratch {
	s, _ := partScratchPool.Get().(*partScratch)
	if s == nil || cap(s.keys) < n {
		return &partScratch{keys: make([]encodeKey, n), parts: make([][]byte, n)}
	}
	s.keys, s.parts = s.keys[:n], s.parts[:n]
	return s
}

// putPartScratch empties s, so that it holds no memoized bytes, and returns it to the pool.
func putPartScratch(s *partScratch) {
	clear(s.keys)
	clear(s.parts)
	partScratchPool.Put(s)
}

// encodedSize returns the length of r's encoding with memo (nil: none), without copying the
// parts the memo holds: only the parts it does not hold are encoded (and memoized), into a
// buffer emptied between messages.
func encodedSize(r *Request, memo *encodeMemo) (int, error) {
	e := &encoder{memo: memo, sizeOnly: true}
	if memo != nil {
		e.h.init(memo)
	}
	if err := e.request(r); err != nil {
		return 0, err
	}
	n := len(e.buf) + e.skipped
	if memo != nil {
		memo.observe(n)
	}
	return n, nil
}

// sizeEstimate is about the encoded size of r: its strings and raw JSON, and the keys and
// punctuation around them, without escapes. It sizes the buffer of an encoding, which then
// rarely grows.
func sizeEstimate(r *Request) int {
	n := headEstimate(r)
	for i := range r.Messages {
		n += messageEstimate(&r.Messages[i])
	}
	return n + n/64
}

// headEstimate is sizeEstimate's figure for all of r but its messages.
func headEstimate(r *Request) int {
	n := 64 + len(r.Model)
	for _, t := range r.System {
		if t != nil {
			n += 48 + len(t.Text) + len(t.Citations)
		}
	}
	for _, t := range r.Tools {
		n += 1 + len(t.Definition)
	}
	return n
}

// messageEstimate is sizeEstimate's figure for one message.
func messageEstimate(m *RequestMessage) int {
	n := 32
	for _, b := range m.Content {
		n += blockEstimate(b)
	}
	return n
}

func blockEstimate(b Block) int {
	const keys = 48 // "type", the keys of a block, a cache marker
	switch b := b.(type) {
	case *Text:
		if b == nil {
			return keys
		}
		return keys + len(b.Text) + len(b.Citations)
	case *ToolUse:
		if b == nil {
			return keys
		}
		return keys + len(b.ID) + len(b.Name) + len(b.Input)
	case *ToolResult:
		if b == nil {
			return keys
		}
		n := keys + len(b.ToolUseID) + len(b.CacheReference)
		for _, c := range b.Content {
			n += blockEstimate(c)
		}
		return n
	case *Thinking:
		if b == nil {
			return keys
		}
		return keys + len(b.Thinking) + len(b.Signature)
	case *RedactedThinking:
		if b == nil {
			return keys
		}
		return keys + len(b.Data)
	case *Image:
		if b == nil {
			return keys
		}
		return keys + len(b.Source.Data) + len(b.Source.URL)
	case *Document:
		if b == nil {
			return keys
		}
		return keys + len(b.Source.Data) + len(b.Source.URL) + len(b.Title) + len(b.Context)
	case *UnknownBlock:
		if b == nil {
			return keys
		}
		return len(b.JSON)
	}
	return keys
}

func (e *encoder) request(r *Request) error {
	e.buf = append(e.buf, `{"model":`...)
	e.str(r.Model)
	e.buf = append(e.buf, `,"max_tokens":`...)
	e.buf = strconv.AppendInt(e.buf, int64(r.MaxTokens), 10)
	if len(r.System) > 0 {
		e.buf = append(e.buf, `,"system":`...)
		if err := e.memoized(memoSystem, func(h *memoHasher) bool { return h.system(r.System) }, func() error { return e.system(r.System) }); err != nil {
			return err
		}
	}
	e.buf = append(e.buf, `,"messages":[`...)
	for i := range r.Messages {
		if i > 0 {
			e.buf = append(e.buf, ',')
		}
		m := &r.Messages[i]
		hash, encode := func(h *memoHasher) bool { return h.message(m) }, func() error { return e.message(i, m) }
		var err error
		if e.parts != nil {
			err = e.resolved(e.keys[i], e.parts[i], hash, encode)
		} else {
			err = e.memoized(memoMessage, hash, encode)
		}
		if err != nil {
			return err
		}
		if err := e.flush(flushBytes); err != nil {
			return err
		}
	}
	e.buf = append(e.buf, ']')
	if len(r.Tools) > 0 {
		e.buf = append(e.buf, `,"tools":`...)
		if err := e.memoized(memoTools, func(h *memoHasher) bool { return h.tools(r.Tools) }, func() error { return e.tools(r.Tools) }); err != nil {
			return err
		}
	}
	if tc := r.ToolChoice; tc != nil {
		e.buf = append(e.buf, `,"tool_choice":{"type":`...)
		e.str(tc.Type)
		if tc.Name != "" {
			e.buf = append(e.buf, `,"name":`...)
			e.str(tc.Name)
		}
		e.buf = append(e.buf, '}')
	}
	if th := r.Thinking; th != nil {
		e.buf = append(e.buf, `,"thinking":{"type":`...)
		e.str(th.Type)
		if th.BudgetTokens != 0 {
			e.buf = append(e.buf, `,"budget_tokens":`...)
			e.buf = strconv.AppendInt(e.buf, int64(th.BudgetTokens), 10)
		}
		e.buf = append(e.buf, '}')
	}
	e.buf = append(e.buf, '}')
	return nil
}

// memoized writes one part of the request (a message, the system prompt, the tools): from
// the memo when it holds the part's bytes, else by encode, storing what encode wrote. hash
// feeds the part's content to the hasher and returns false when the part is not memoized.
func (e *encoder) memoized(kind byte, hash func(*memoHasher) bool, encode func() error) error {
	if e.memo == nil {
		return encode()
	}
	e.h.reset(kind)
	if !hash(&e.h) {
		return encode()
	}
	k := e.h.key()
	if b, ok := e.memo.get(k); ok {
		if e.sizeOnly {
			e.skipped += len(b)
		} else {
			e.buf = append(e.buf, b...)
		}
		return nil
	}
	return e.store(kind, k, hash, encode)
}

// resolved writes one message whose key k and memoized bytes b (nil: not in the memo) resolve
// found, as memoized would.
func (e *encoder) resolved(k encodeKey, b []byte, hash func(*memoHasher) bool, encode func() error) error {
	switch {
	case b != nil:
		e.buf = append(e.buf, b...)
		return nil
	case k.n == 0:
		return encode() // not memoized
	}
	return e.store(memoMessage, k, hash, encode)
}

// store writes a part the memo does not hold by encode, and stores its bytes under k, the
// key hash gives.
func (e *encoder) store(kind byte, k encodeKey, hash func(*memoHasher) bool, encode func() error) error {
	start := len(e.buf)
	if err := encode(); err != nil {
		return err
	}
	if e.noStore {
		return nil
	}
	// Hash once more, keeping the strings the key holds by identity.
	p := encodedPart{b: bytes.Clone(e.buf[start:])}
	e.h.reset(kind)
	e.h.keep = &p.keep
	hash(&e.h)
	e.h.keep = nil
	e.memo.put(k, p)
	return nil
}

func (e *encoder) system(sys []*Text) error {
	e.buf = append(e.buf, '[')
	for i, b := range sys {
		if i > 0 {
			e.buf = append(e.buf, ',')
		}
		if err := e.topBlock(b, func() string { return "system[" + strconv.Itoa(i) + "]" }, MarshalBlock); err != nil {
			return err
		}
	}
	e.buf = append(e.buf, ']')
	return nil
}

func (e *encoder) message(i int, m *RequestMessage) error {
	e.buf = append(e.buf, `{"role":`...)
	e.str(string(m.Role))
	e.buf = append(e.buf, `,"content":[`...)
	for j, b := range m.Content {
		if j > 0 {
			e.buf = append(e.buf, ',')
		}
		path := func() string { return "messages[" + strconv.Itoa(i) + "].content[" + strconv.Itoa(j) + "]" }
		if err := e.topBlock(b, path, marshalRequestBlock); err != nil {
			return err
		}
	}
	e.buf = append(e.buf, `]}`...)
	return nil
}

func (e *encoder) tools(ts []Tool) error {
	e.buf = append(e.buf, '[')
	for i, t := range ts {
		if i > 0 {
			e.buf = append(e.buf, ',')
		}
		if t.CacheControl == nil {
			if err := e.compact(t.Definition); err == nil {
				continue
			}
		}
		enc, err := t.marshal()
		if err != nil {
			return jsonobj.Wrap("tools["+strconv.Itoa(i)+"]", err)
		}
		e.buf = append(e.buf, enc...)
	}
	e.buf = append(e.buf, ']')
	return nil
}

// topBlock writes a block of a message or of the system prompt; slow is the reference
// encoder of that position, which writes what the fast encoder leaves and names errors.
func (e *encoder) topBlock(b Block, path func() string, slow func(Block) ([]byte, error)) error {
	start := len(e.buf)
	if u, ok := b.(*UnknownBlock); ok {
		// Verbatim at the top level, as the reference encoder writes it.
		e.buf = append(e.buf, u.JSON...)
		return nil
	}
	if e.block(b) == nil {
		return nil
	}
	e.buf = e.buf[:start]
	enc, err := slow(b)
	if err != nil {
		return jsonobj.Wrap(path(), err)
	}
	e.buf = append(e.buf, enc...)
	return nil
}

// block writes one block the way MarshalBlock does (and marshalRequestBlock for cache_edits);
// errSlow or an error leaves the buffer to be truncated by the caller.
func (e *encoder) block(b Block) error {
	switch b := b.(type) {
	case *Text:
		if b == nil || len(b.Extra) > 0 {
			return errSlow
		}
		o := e.object(b.presence, KindText)
		o.str(1, "text", b.Text)
		if err := o.raw(2, "citations", b.Citations); err != nil {
			return err
		}
		o.cacheControl(3, b.CacheControl)
	case *ToolUse:
		if b == nil || len(b.Extra) > 0 {
			return errSlow
		}
		o := e.object(b.presence, KindToolUse)
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
		o := e.object(b.presence, KindToolResult)
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
		o := e.object(b.presence, KindThinking)
		o.str(1, "thinking", b.Thinking)
		o.str(2, "signature", b.Signature)
	case *RedactedThinking:
		if b == nil || len(b.Extra) > 0 {
			return errSlow
		}
		o := e.object(b.presence, KindRedactedThinking)
		o.str(1, "data", b.Data)
	case *Image:
		if b == nil || len(b.Extra) > 0 || len(b.Source.Extra) > 0 {
			return errSlow
		}
		o := e.object(b.presence, KindImage)
		o.source(1, &b.Source)
		o.cacheControl(2, b.CacheControl)
	case *Document:
		if b == nil || len(b.Extra) > 0 || len(b.Source.Extra) > 0 {
			return errSlow
		}
		o := e.object(b.presence, KindDocument)
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
		o := e.object(b.presence, KindToolReference)
		o.str(1, "tool_name", b.ToolName)
	case *ServerToolUse:
		if b == nil || len(b.Extra) > 0 {
			return errSlow
		}
		o := e.object(b.presence, KindServerToolUse)
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
		o := e.object(b.presence, b.Type)
		o.str(1, "tool_use_id", b.ToolUseID)
		if err := o.raw(2, "content", b.Content); err != nil {
			return err
		}
		o.cacheControl(3, b.CacheControl)
	case *CacheEdits:
		if b == nil {
			return errSlow
		}
		e.buf = append(e.buf, `{"type":"cache_edits","edits":`...)
		if b.Edits == nil {
			e.buf = append(e.buf, "null"...)
		} else {
			e.buf = append(e.buf, '[')
			for i, ed := range b.Edits {
				if i > 0 {
					e.buf = append(e.buf, ',')
				}
				e.buf = append(e.buf, `{"type":`...)
				e.str(ed.Type)
				e.buf = append(e.buf, `,"cache_reference":`...)
				e.str(ed.CacheReference)
				e.buf = append(e.buf, '}')
			}
			e.buf = append(e.buf, ']')
		}
		e.buf = append(e.buf, '}')
		return nil
	default:
		return errSlow
	}
	e.buf = append(e.buf, '}')
	return nil
}

// object writes the opening of a block object and its "type"; the caller writes the other
// fields through it and the closing brace.
func (e *encoder) object(p jsonobj.Presence, kind BlockKind) obj {
	e.buf = append(e.buf, `{"type":`...)
	e.str(string(kind))
	return obj{e: e, p: p}
}

// obj writes the fields of one object by jsonobj.Encode's rules: a zero field is left out
// unless it was present when decoded, and written as null when it was decoded from null.
// Field i is the field's index in the decoder's list, "type" being 0 for blocks.
type obj struct {
	e     *encoder
	p     jsonobj.Presence
	first bool // no field written yet (sources have no "type")
}

func (o *obj) key(k string) {
	if !o.first {
		o.e.buf = append(o.e.buf, ',')
	}
	o.first = false
	o.e.buf = append(o.e.buf, '"')
	o.e.buf = append(o.e.buf, k...)
	o.e.buf = append(o.e.buf, '"', ':')
}

// zero writes field i when it is zero: nothing when it was absent, null when it was null,
// else zeroJSON, what encoding/json writes for the zero value.
func (o *obj) zero(i int, k, zeroJSON string) {
	if !o.p.Has(i) {
		return
	}
	o.key(k)
	if o.p.Null(i) {
		o.e.buf = append(o.e.buf, "null"...)
		return
	}
	o.e.buf = append(o.e.buf, zeroJSON...)
}

func (o *obj) str(i int, k, s string) {
	if s == "" {
		o.zero(i, k, `""`)
		return
	}
	o.key(k)
	o.e.str(s)
}

func (o *obj) bool(i int, k string, v bool) {
	if !v {
		o.zero(i, k, "false")
		return
	}
	o.key(k)
	o.e.buf = append(o.e.buf, "true"...)
}

func (o *obj) raw(i int, k string, r json.RawMessage) error {
	if r == nil {
		o.zero(i, k, "null")
		return nil
	}
	o.key(k)
	return o.e.compact(r)
}

func (o *obj) cacheControl(i int, c *CacheControl) {
	if c == nil {
		o.zero(i, "cache_control", "null")
		return
	}
	o.key("cache_control")
	o.e.buf = append(o.e.buf, `{"type":`...)
	o.e.str(c.Type)
	if c.TTL != "" {
		o.e.buf = append(o.e.buf, `,"ttl":`...)
		o.e.str(c.TTL)
	}
	o.e.buf = append(o.e.buf, '}')
}

// source writes a media source (its Extra is empty: the caller checked).
func (o *obj) source(i int, s *MediaSource) {
	if s.Type == "" && s.MediaType == "" && s.Data == "" && s.URL == "" && s.FileID == "" && s.Extra == nil && s.presence == (jsonobj.Presence{}) {
		o.zero(i, "source", "{}")
		return
	}
	o.key("source")
	so := obj{e: o.e, p: s.presence, first: true}
	o.e.buf = append(o.e.buf, '{')
	so.str(0, "type", s.Type)
	so.str(1, "media_type", s.MediaType)
	so.str(2, "data", s.Data)
	so.str(3, "url", s.URL)
	so.str(4, "file_id", s.FileID)
	o.e.buf = append(o.e.buf, '}')
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
			o.e.str(t.Text)
			return nil
		}
	}
	if str && len(bs) == 0 {
		o.e.buf = append(o.e.buf, `""`...)
		return nil
	}
	o.e.buf = append(o.e.buf, '[')
	for j, b := range bs {
		if j > 0 {
			o.e.buf = append(o.e.buf, ',')
		}
		if u, ok := b.(*UnknownBlock); ok {
			if err := o.e.compact(u.JSON); err != nil {
				return err
			}
			continue
		}
		if _, ok := b.(*CacheEdits); ok {
			return errSlow // MarshalBlock does not encode it: the reference encoder reports it
		}
		if err := o.e.block(b); err != nil {
			return err
		}
	}
	o.e.buf = append(o.e.buf, ']')
	return nil
}

// compact appends raw JSON compacted, as encoding/json writes a json.RawMessage.
func (e *encoder) compact(r []byte) error {
	e.raw.Reset()
	if err := json.Compact(&e.raw, r); err != nil {
		return err
	}
	e.buf = append(e.buf, e.raw.Bytes()...)
	return nil
}

func (e *encoder) str(s string) { e.buf = appendString(e.buf, s) }

// jsonSafe holds the ASCII bytes a JSON string carries as they are: everything from space up
// except the quote and the backslash (no HTML escaping, as jsonobj.Marshal).
var jsonSafe = func() (t [utf8.RuneSelf]bool) {
	for c := ' '; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string with encoding/json's escapes (HTML escaping off):
// the quote and backslash escaped, control characters as \b \f \n \r \t or \u00XX, each
// invalid UTF-8 byte as \ufffd, and U+2028 and U+2029 as \u2028 and \u2029.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if jsonSafe[c] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// quotedLen is len(appendString(nil, s)), found without writing: the body-size bound measures
// strings with it.
func quotedLen(s string) int {
	n := len(s) + 2
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if !jsonSafe[c] {
				switch c {
				case '"', '\\', '\b', '\f', '\n', '\r', '\t':
					n++ // a two-byte escape
				default:
					n += 5 // \u00XX
				}
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			n += 5 // one byte becomes \ufffd
		case r == '\u2028' || r == '\u2029':
			n += 3 // three bytes become \u202X
		}
		i += size
	}
	return n
}
