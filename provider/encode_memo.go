package provider

import (
	"hash/maphash"
	"sync"

	"github.com/agentctx/agentctx/internal/wire"

	"github.com/agentctx/agentctx/internal/memo"
	"github.com/agentctx/agentctx/transcript"
)

// Encode memo bounds, in bytes of memoized encodings. The bound follows the largest request
// the memo has encoded (twice its size, so that one conversation's whole request stays in the
// memo from one turn to the next), between these two.
const (
	minEncodeMemo = 8 << 20
	maxEncodeMemo = 2 * wire.MaxBodyBytes
)

// Memo kinds: the parts of a request memoized on their own.
const (
	memoMessage byte = iota + 1
	memoSystem
	memoTools
)

// encodeKey identifies the content of one part of a request: a 64-bit hash of everything its
// encoding depends on, plus the number of words hashed. Strings go in by identity (the address
// of their bytes and their length), raw JSON by a hash of its bytes (hash/maphash, with the
// Pipeline's seed; a caller could rewrite them in place); the words are folded as msgKey's
// are. The memo entry keeps the strings its key
// holds (encodedPart.keep): while it is in the memo, no other bytes can be at their
// addresses, and Go strings are immutable, so a key built from the same addresses names the
// same texts. A false hit needs a 64-bit collision between two parts of the same hashed length.
type encodeKey struct {
	hash uint64
	n    int
}

// encodedPart is a memoized encoding and the strings its key holds by identity.
type encodedPart struct {
	b    []byte
	keep []string
}

// EncodeMemo holds the encoded bytes of request parts (each message, the system prompt, the
// tools) by content, so that a steady turn encodes only its new parts and copies the rest.
// It keeps two generations: parts are stored in the current one; when it holds more than the
// bound, it becomes the previous generation and a new one starts; a part found in the
// previous generation moves to the current one. A turn's request is thus found whole as long
// as it is at most the bound, and the memo holds at most twice the bound (plus one part).
//
// An EncodeMemo is safe for concurrent use. Dropping it changes nothing but time.
type EncodeMemo struct {
	seed maphash.Seed

	mu        sync.Mutex
	cur, prev map[encodeKey]encodedPart
	curBytes  int
	bound     int // current bound, in bytes
	floor     int // least bound
	largest   int // largest request encoded, in bytes
	// convs is how many conversations' requests a generation makes room for, and most the
	// most bytes it may hold (see [EncodeMemo.Scale]).
	convs, most int
	// moved counts the parts of prev found and put in cur, and evictions the parts of the
	// generations dropped that had not moved.
	moved     int
	evictions int64
}

// NewEncodeMemo returns an empty memo.
func NewEncodeMemo() *EncodeMemo {
	return &EncodeMemo{seed: maphash.MakeSeed(), cur: map[encodeKey]encodedPart{}, bound: minEncodeMemo, floor: minEncodeMemo, convs: 1, most: maxEncodeMemo}
}

// Scale makes room in each generation for the requests of conversations conversations (each
// taken as large as the largest request encoded), up to most bytes: a Pipeline serving many
// conversations in turn keeps each one's request from one of its turns to the next. 0 for
// either keeps what it was (1 conversation, 64 MB at first).
func (m *EncodeMemo) Scale(conversations, most int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if conversations > 0 {
		m.convs = conversations
	}
	if most > 0 {
		m.most = most
	}
	m.setBound()
}

// setBound sets the bound from the largest request and the scale. m.mu is held.
func (m *EncodeMemo) setBound() {
	m.bound = max(min(2*m.largest*m.convs, m.most), min(m.floor, m.most))
}

// Stats reports the encodings m holds, as the memo named "encode": the parts in both
// generations and their bytes.
func (m *EncodeMemo) Stats() transcript.MemoState {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := len(m.cur) + len(m.prev)
	b := memo.MapBytes(n, encodeKey{}, encodedPart{})
	for _, g := range []map[encodeKey]encodedPart{m.cur, m.prev} {
		for _, p := range g {
			b += int64(cap(p.b)) + memo.SliceBytes(cap(p.keep), "")
		}
	}
	return transcript.MemoState{Name: "encode", Entries: n, Evictions: m.evictions, Bytes: b}
}

func (m *EncodeMemo) get(k encodeKey) ([]byte, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if p, ok := m.cur[k]; ok {
		return p.b, true
	}
	p, ok := m.prev[k]
	if ok {
		m.add(k, p)
		m.moved++
	}
	return p.b, ok
}

// getAll sets out[i] to the bytes of keys[i] (nil when the memo does not hold them), under
// one lock for all: a turn's request looks its messages up at once. A key with no words
// hashed (n 0) names no part.
func (m *EncodeMemo) getAll(keys []encodeKey, out [][]byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, k := range keys {
		if k.n == 0 {
			continue
		}
		if p, ok := m.cur[k]; ok {
			out[i] = p.b
		} else if p, ok := m.prev[k]; ok {
			m.add(k, p)
			m.moved++
			out[i] = p.b
		}
	}
}

func (m *EncodeMemo) put(k encodeKey, p encodedPart) {
	m.mu.Lock()
	m.add(k, p)
	m.mu.Unlock()
}

// add stores p in the current generation, starting a new one when it is full. m.mu is held.
func (m *EncodeMemo) add(k encodeKey, p encodedPart) {
	if m.curBytes+len(p.b) > m.bound && len(m.cur) > 0 {
		m.evictions += int64(max(len(m.prev)-m.moved, 0))
		m.prev, m.cur, m.curBytes, m.moved = m.cur, make(map[encodeKey]encodedPart, len(m.cur)), 0, 0
	}
	m.cur[k] = p
	m.curBytes += len(p.b)
}

// observe records the size of an encoded request: the bound follows the largest.
func (m *EncodeMemo) observe(n int) {
	m.mu.Lock()
	if n > m.largest {
		m.largest = n
		m.setBound()
	}
	m.mu.Unlock()
}

// memoHasher folds the content of a request part by identity (see [memo.Fold]): each field
// its encoding depends on. Each method returns false for content the memo does not key
// (unknown fields, nil blocks): such a part is encoded every time. When Keep is set, the
// strings it folds are appended to it.
type memoHasher struct{ memo.Fold }

func (h *memoHasher) init(m *EncodeMemo) { h.Fold = memo.NewFold(m.seed) }

func (h *memoHasher) reset(kind byte) {
	h.Reset()
	h.byte(kind)
}

func (h *memoHasher) key() encodeKey {
	hash, n := h.Key()
	return encodeKey{hash: hash, n: n}
}

func (h *memoHasher) byte(b byte) { h.Word(uint64(b)) }

func (h *memoHasher) presence(present, null uint64) {
	h.Word(present)
	h.Word(null)
}

func (h *memoHasher) cacheControl(c *transcript.CacheControl) {
	if c == nil {
		h.byte(0)
		return
	}
	h.byte(1)
	h.Str(c.Type)
	h.Str(c.TTL)
}

func (h *memoHasher) system(sys []*transcript.Text) bool {
	h.Word(uint64(len(sys)))
	for _, b := range sys {
		if b == nil || !h.block(b) {
			return false
		}
	}
	return true
}

func (h *memoHasher) message(m *Message) bool {
	h.Str(string(m.Role))
	h.Word(uint64(len(m.Content)))
	for _, b := range m.Content {
		if !h.block(b) {
			return false
		}
	}
	return true
}

func (h *memoHasher) tools(ts []Tool) bool {
	h.Word(uint64(len(ts)))
	for _, t := range ts {
		h.Str(t.Name)
		h.Raw(t.Definition)
		h.cacheControl(t.CacheControl)
	}
	return true
}

// block hashes everything the encoding of b depends on.
func (h *memoHasher) block(b transcript.Block) bool {
	switch b := b.(type) {
	case *transcript.Text:
		if b == nil || len(b.Extra) > 0 {
			return false
		}
		h.byte(1)
		h.presence(transcript.FieldBits(b))
		h.Str(b.Text)
		h.Raw(b.Citations)
		h.cacheControl(b.CacheControl)
	case *transcript.ToolUse:
		if b == nil || len(b.Extra) > 0 {
			return false
		}
		h.byte(2)
		h.presence(transcript.FieldBits(b))
		h.Str(b.ID)
		h.Str(b.Name)
		h.Raw(b.Input)
		h.cacheControl(b.CacheControl)
	case *transcript.ToolResult:
		if b == nil || len(b.Extra) > 0 {
			return false
		}
		h.byte(3)
		h.presence(transcript.FieldBits(b))
		h.Str(b.ToolUseID)
		h.Flag(b.StringContent)
		h.Flag(b.IsError)
		h.cacheControl(b.CacheControl)
		h.Str(b.CacheReference)
		h.Word(uint64(len(b.Content)))
		for _, c := range b.Content {
			if !h.block(c) {
				return false
			}
		}
	case *transcript.Thinking:
		if b == nil || len(b.Extra) > 0 {
			return false
		}
		h.byte(4)
		h.presence(transcript.FieldBits(b))
		h.Str(b.Thinking)
		h.Str(b.Signature)
	case *transcript.RedactedThinking:
		if b == nil || len(b.Extra) > 0 {
			return false
		}
		h.byte(5)
		h.presence(transcript.FieldBits(b))
		h.Str(b.Data)
	case *transcript.Image:
		if b == nil || len(b.Extra) > 0 {
			return false
		}
		h.byte(6) // the kind first, as for every block, so no two kinds feed the same stream
		if !h.source(&b.Source) {
			return false
		}
		h.presence(transcript.FieldBits(b))
		h.cacheControl(b.CacheControl)
	case *transcript.Document:
		if b == nil || len(b.Extra) > 0 {
			return false
		}
		h.byte(7) // the kind first, as for every block, so no two kinds feed the same stream
		if !h.source(&b.Source) {
			return false
		}
		h.presence(transcript.FieldBits(b))
		h.Str(b.Title)
		h.Str(b.Context)
		h.Raw(b.Citations)
		h.cacheControl(b.CacheControl)
	case *transcript.ToolReference:
		if b == nil || len(b.Extra) > 0 {
			return false
		}
		h.byte(8)
		h.presence(transcript.FieldBits(b))
		h.Str(b.ToolName)
	case *transcript.ServerToolUse:
		if b == nil || len(b.Extra) > 0 {
			return false
		}
		h.byte(9)
		h.presence(transcript.FieldBits(b))
		h.Str(b.ID)
		h.Str(b.Name)
		h.Raw(b.Input)
		h.cacheControl(b.CacheControl)
	case *transcript.ServerToolResult:
		if b == nil || len(b.Extra) > 0 {
			return false
		}
		h.byte(10)
		h.presence(transcript.FieldBits(b))
		h.Str(string(b.Type))
		h.Str(b.ToolUseID)
		h.Raw(b.Content)
		h.cacheControl(b.CacheControl)
	case *transcript.CacheEdits:
		if b == nil {
			return false
		}
		h.byte(11)
		h.Flag(b.Edits == nil)
		h.Word(uint64(len(b.Edits)))
		for _, ed := range b.Edits {
			h.Str(ed.Type)
			h.Str(ed.CacheReference)
		}
	case *transcript.UnknownBlock:
		if b == nil {
			return false
		}
		h.byte(12)
		h.Str(string(b.Type))
		h.Raw(b.JSON)
	default:
		return false
	}
	return true
}

// source hashes a media source; false when it has unknown fields.
func (h *memoHasher) source(s *transcript.MediaSource) bool {
	if len(s.Extra) > 0 {
		return false
	}
	h.Flag(s.Extra == nil)
	h.presence(s.FieldBits())
	h.Str(s.Type)
	h.Str(s.MediaType)
	h.Str(s.Data)
	h.Str(s.URL)
	h.Str(s.FileID)
	return true
}
