package provider

import (
	"bytes"
	"encoding/json"
	"io"
	"slices"
	"strconv"
	"sync"

	"github.com/agentctx/agentctx/transcript"

	"github.com/agentctx/agentctx/internal/jsonobj"
)

// The request encoder writes a request body append-style, each value straight into one
// buffer, instead of through the nested MarshalJSON methods whose every level encoding/json
// validates and compacts again. Its bytes are exactly those of the reference encoder
// (marshalSlow, the blocks' MarshalBlock): the same key order, the same presence rules, the
// same string escapes (encoding/json's, without HTML escaping) and raw JSON compacted as
// encoding/json compacts it. Blocks are written by [transcript.AppendBlock]; a block it does not write itself — one carrying unknown fields,
// a nil block, a kind the request cannot hold — and a block whose raw JSON does not compact
// go through the reference encoder, which gives the same bytes or the same error.

// encoder is the state of one request encoding.
type encoder struct {
	buf  []byte
	raw  bytes.Buffer // scratch for json.Compact
	memo *EncodeMemo  // nil: encode everything
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
func encodeTo(w io.Writer, r *Request, memo *EncodeMemo) (int64, error) {
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

// encodeRequest encodes r with memo (nil: no memo) into a new buffer.
func encodeRequest(r *Request, memo *EncodeMemo) ([]byte, error) {
	return appendRequest(nil, r, memo)
}

// appendRequest appends r's encoding with memo (nil: no memo) to dst. With a memo, the
// messages' parts are looked up first, all at once, and the buffer is grown by the size of
// the parts found and an estimate of the rest. On an error it returns dst as it was.
func appendRequest(dst []byte, r *Request, memo *EncodeMemo) ([]byte, error) {
	e := &encoder{memo: memo}
	if memo == nil {
		e.buf = slices.Grow(dst, sizeEstimate(r))
	} else {
		e.h.init(memo)
		s := getPartScratch(len(r.Messages))
		defer putPartScratch(s)
		e.keys, e.parts = s.keys, s.parts
		e.buf = slices.Grow(dst, e.resolve(r))
	}
	if err := e.request(r); err != nil {
		return dst, err
	}
	if memo != nil {
		memo.observe(len(e.buf) - len(dst))
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
		// Room for the next requests' messages, so that a growing conversation reuses it.
		c := n + n/8 + 64
		return &partScratch{keys: make([]encodeKey, n, c), parts: make([][]byte, n, c)}
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
func encodedSize(r *Request, memo *EncodeMemo) (int, error) {
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
func messageEstimate(m *Message) int {
	n := 32
	for _, b := range m.Content {
		n += blockEstimate(b)
	}
	return n
}

func blockEstimate(b transcript.Block) int {
	const keys = 48 // "type", the keys of a block, a cache marker
	switch b := b.(type) {
	case *transcript.Text:
		if b == nil {
			return keys
		}
		return keys + len(b.Text) + len(b.Citations)
	case *transcript.ToolUse:
		if b == nil {
			return keys
		}
		return keys + len(b.ID) + len(b.Name) + len(b.Input)
	case *transcript.ToolResult:
		if b == nil {
			return keys
		}
		n := keys + len(b.ToolUseID) + len(b.CacheReference)
		for _, c := range b.Content {
			n += blockEstimate(c)
		}
		return n
	case *transcript.Thinking:
		if b == nil {
			return keys
		}
		return keys + len(b.Thinking) + len(b.Signature)
	case *transcript.RedactedThinking:
		if b == nil {
			return keys
		}
		return keys + len(b.Data)
	case *transcript.Image:
		if b == nil {
			return keys
		}
		return keys + len(b.Source.Data) + len(b.Source.URL)
	case *transcript.Document:
		if b == nil {
			return keys
		}
		return keys + len(b.Source.Data) + len(b.Source.URL) + len(b.Title) + len(b.Context)
	case *transcript.UnknownBlock:
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
	if cm := r.ContextManagement; len(cm) > 0 {
		e.buf = append(e.buf, `,"context_management":`...)
		e.buf = append(e.buf, cm...)
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
	e.h.Keep = &p.keep
	hash(&e.h)
	e.h.Keep = nil
	e.memo.put(k, p)
	return nil
}

func (e *encoder) system(sys []*transcript.Text) error {
	e.buf = append(e.buf, '[')
	for i, b := range sys {
		if i > 0 {
			e.buf = append(e.buf, ',')
		}
		if err := e.topBlock(b, func() string { return "system[" + strconv.Itoa(i) + "]" }, transcript.MarshalBlock); err != nil {
			return err
		}
	}
	e.buf = append(e.buf, ']')
	return nil
}

func (e *encoder) message(i int, m *Message) error {
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
func (e *encoder) topBlock(b transcript.Block, path func() string, slow func(transcript.Block) ([]byte, error)) error {
	start := len(e.buf)
	if u, ok := b.(*transcript.UnknownBlock); ok {
		// Verbatim at the top level, as the reference encoder writes it.
		e.buf = append(e.buf, u.JSON...)
		return nil
	}
	out, err := transcript.AppendBlock(e.buf, b)
	if err == nil {
		e.buf = out
		return nil
	}
	e.buf = out[:start]
	enc, err := slow(b)
	if err != nil {
		return jsonobj.Wrap(path(), err)
	}
	e.buf = append(e.buf, enc...)
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

func (e *encoder) str(s string) { e.buf = jsonobj.AppendString(e.buf, s) }
