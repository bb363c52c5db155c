package agentctx

import (
	"encoding/json"
	"math"
	"sync"
)

// minCleanMemo is the least number of cleaned blocks a Pipeline keeps; above it the bound
// follows the largest view cleaned (see [cleanMemo]).
const minCleanMemo = 4096

// cleanMemo keeps the request form of transcript blocks from one turn to the next, so that a
// steady turn cleans only the blocks it has not seen: the UTF-8 scans, JSON checks and block
// copies of [normalizer.clean] are done once per block, not once per turn.
//
// An entry is keyed by the block (its pointer, which the entry keeps alive, so the address
// cannot be reused for another block) and the role of its message. It holds the fields the
// cleaning read, and is used only while the block still has them, compared by identity: a
// caller that reassigns a field of a block gets the block cleaned again. Only blocks whose
// cleaning reported nothing are kept: their request form depends on nothing but the block,
// its role and its record's uuid, never on the rest of the turn (tool ids and names already
// rewritten, the declared tools), and replaying them reports nothing.
//
// The memo keeps two generations (a genMemo): entries go into the current one, which
// becomes the previous one when it holds more than the bound; an entry found in the previous
// generation moves to the current one. The bound is twice the most blocks one turn has looked
// up (at least minCleanMemo), so one conversation's whole view stays in the memo from one turn
// to the next. A cleanMemo is safe for concurrent use; dropping it changes nothing but time.
type cleanMemo struct {
	mu  sync.Mutex
	gen genMemo[cleanKey, *cleanEntry]
	// lastKeys and lastFound are the blocks the last turn looked up, in view order, and their
	// entries: a steady turn's view starts with the same blocks, which are found by comparing
	// the two sequences, without hashing.
	lastKeys  []cleanKey
	lastFound []*cleanEntry
}

// cleanKey names a block as the message of one role holds it.
type cleanKey struct {
	b    Block
	asst bool // the message is an assistant message; else a user message
}

// cleanEntry is a block's cleaning: what [normalizer.clean] returned for it, with the uuid of
// the record it came from and the fields it read.
type cleanEntry struct {
	uuid string
	sig  cleanSig
	nb   nblock
}

// cleanSig holds the fields of a block that its cleaning read, to tell whether the block
// still has them.
type cleanSig struct {
	s     [2]string
	raw   json.RawMessage
	flags [2]bool
	texts []textSig // a tool_result's content, all text blocks
}

// textSig is a text block of a tool_result's content and the fields its cleaning read.
type textSig struct {
	b    *Text
	text string
	cit  json.RawMessage
}

func newCleanMemo() *cleanMemo {
	return &cleanMemo{gen: newGenMemo[cleanKey, *cleanEntry](minCleanMemo)}
}

// lookup sets out[i] to the entry of keys[i], or nil.
func (m *cleanMemo) lookup(keys []cleanKey, out []*cleanEntry) {
	m.mu.Lock()
	defer m.mu.Unlock()
	same := 0 // keys[:same] are the last turn's first blocks
	for same < len(keys) && same < len(m.lastKeys) && keys[same] == m.lastKeys[same] {
		same++
	}
	copy(out, m.lastFound[:same])
	for i := same; i < len(keys); i++ {
		out[i], _ = m.gen.get(keys[i])
	}
}

// store adds the entries a turn made, and keeps the blocks it looked up (looked) with their
// entries (found) for the next turn's lookup. It returns the sequences it kept before, for
// the caller to reuse: the memo no longer reads them.
func (m *cleanMemo) store(keys []cleanKey, entries []*cleanEntry, looked []cleanKey, found []*cleanEntry) ([]cleanKey, []*cleanEntry) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gen.reserve(2*len(looked), math.MaxInt)
	for i, k := range keys {
		m.gen.put(k, entries[i])
	}
	oldKeys, oldFound := m.lastKeys, m.lastFound
	m.lastKeys, m.lastFound = looked, found
	return oldKeys, oldFound
}

// signature returns the fields of b that clean reads, and false for a block the memo does
// not keep: kinds that are rare in a transcript (media, server tools, unknown blocks), a
// tool_result holding anything but text, and thinking with unknown fields.
func signature(b Block) (cleanSig, bool) {
	var s cleanSig
	switch b := b.(type) {
	case *Text:
		if b == nil {
			return s, false
		}
		s.s[0], s.raw = b.Text, b.Citations
	case *ToolUse:
		if b == nil {
			return s, false
		}
		s.s[0], s.s[1], s.raw = b.ID, b.Name, b.Input
	case *ToolResult:
		if b == nil {
			return s, false
		}
		s.s[0], s.s[1], s.flags = b.ToolUseID, b.CacheReference, [2]bool{b.StringContent, b.IsError}
		s.texts = make([]textSig, len(b.Content))
		for i, cb := range b.Content {
			t, ok := cb.(*Text)
			if !ok || t == nil {
				return s, false
			}
			s.texts[i] = textSig{b: t, text: t.Text, cit: t.Citations}
		}
	case *Thinking:
		if b == nil || len(b.Extra) > 0 {
			return s, false
		}
		s.s[0], s.s[1] = b.Thinking, b.Signature
	case *RedactedThinking:
		if b == nil || len(b.Extra) > 0 {
			return s, false
		}
		s.s[0] = b.Data
	default:
		return s, false
	}
	return s, true
}

// matches reports whether b, the block s was taken from, still has the fields s holds.
// Strings and byte slices of the same array compare in constant time.
func (s *cleanSig) matches(b Block) bool {
	switch b := b.(type) {
	case *Text:
		return b.Text == s.s[0] && sameBytes(b.Citations, s.raw)
	case *ToolUse:
		return b.ID == s.s[0] && b.Name == s.s[1] && sameBytes(b.Input, s.raw)
	case *ToolResult:
		if b.ToolUseID != s.s[0] || b.CacheReference != s.s[1] || [2]bool{b.StringContent, b.IsError} != s.flags ||
			len(b.Content) != len(s.texts) {
			return false
		}
		for i, cb := range b.Content {
			t := &s.texts[i]
			if cb != Block(t.b) || t.b.Text != t.text || !sameBytes(t.b.Citations, t.cit) {
				return false
			}
		}
		return true
	case *Thinking:
		return b.Thinking == s.s[0] && b.Signature == s.s[1] && len(b.Extra) == 0
	case *RedactedThinking:
		return b.Data == s.s[0] && len(b.Extra) == 0
	}
	return false
}

// sameBytes reports whether a and b are the same bytes of the same array, or both empty and
// both nil or both not.
func sameBytes(a, b []byte) bool {
	return len(a) == len(b) && (a == nil) == (b == nil) && (len(a) == 0 || &a[0] == &b[0])
}

// normScratch holds the maps and slices one normalize call works in, reused by the next call
// (through normScratchPool) so that a steady turn does not allocate them again. Nothing of it
// outlives the call: the request gets new slices.
type normScratch struct {
	msgIDs        map[string]struct{} // responseOrder: the msgIDs met
	seen, srvSeen map[string]bool     // dedupToolUses: tool_use and server_tool_use ids
	last          []bool              // responseOrder: the item is its msgID's last
	order         []*item
	why           []string
	keys          []cleanKey
	found         []*cleanEntry
	all           []nblock
	msgs          []nmsg // collect: the messages, until emit copies them into the request
}

var normScratchPool = sync.Pool{New: func() any {
	return &normScratch{msgIDs: map[string]struct{}{}, seen: map[string]bool{}, srvSeen: map[string]bool{}}
}}

// release empties sc, so that it keeps no block or record alive, and puts it back in the pool.
func (sc *normScratch) release() {
	clear(sc.msgIDs)
	clear(sc.seen)
	clear(sc.srvSeen)
	clear(sc.order)
	clear(sc.why)
	clear(sc.keys)
	clear(sc.found)
	clear(sc.all)
	clear(sc.msgs[:cap(sc.msgs)]) // the stages after collect may have used more of it
	sc.order, sc.why, sc.keys, sc.found, sc.all, sc.msgs = sc.order[:0], sc.why[:0], sc.keys[:0], sc.found[:0], sc.all[:0], sc.msgs[:0]
	normScratchPool.Put(sc)
}

// grow returns s with length n, reusing its array when it is large enough.
func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}
