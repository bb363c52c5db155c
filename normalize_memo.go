package agentctx

import (
	"encoding/json"
	"slices"
	"sync"

	"github.com/agentctx/agentctx/internal/wire"

	"github.com/agentctx/agentctx/transcript"

	"github.com/agentctx/agentctx/internal/memo"
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
// cleaning read, and is used only while the block still has them, compared as a settled
// prefix compares them (cleanSig.same): a caller that reassigns a field of a block gets the
// block cleaned again. Only blocks whose cleaning reported nothing and that depend on nothing
// else of the turn (see turnDependent) are kept: their request form depends on nothing but
// the block, its role and its record's uuid, and replaying them reports nothing.
//
// The memo keeps two generations (a [memo.Gen]): entries go into the current one, which
// becomes the previous one when it holds more than the bound; an entry found in the previous
// generation moves to the current one. The bound is twice the most blocks one turn has looked
// up (at least minCleanMemo), so one conversation's whole view stays in the memo from one turn
// to the next. A cleanMemo is safe for concurrent use; dropping it changes nothing but time.
type cleanMemo struct {
	mu  sync.Mutex
	gen memo.Gen[cleanKey, *cleanEntry]
	// lastKeys and lastFound are the blocks the last turn looked up, in view order, and their
	// entries: a steady turn's view starts with the same blocks, which are found by comparing
	// the two sequences, without hashing.
	lastKeys  []cleanKey
	lastFound []*cleanEntry
	// budget bounds the memo and scales it to the conversations held.
	budget *memoBudget
}

// cleanKey names a block as the message of one role holds it.
type cleanKey struct {
	b    transcript.Block
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
	kind  sigKind
	s     [2]string
	raw   json.RawMessage
	flags [2]bool
	media *mediaSig // an image's or a document's
	parts []partSig // a tool_result's content
}

// partSig is a block of a tool_result's content (text, image, document or tool_reference):
// the fields its cleaning read.
type partSig struct {
	text  string // a text's, or a tool_reference's tool name
	cit   json.RawMessage
	media *mediaSig // an image's or a document's; nil for text
	// ref: a tool_reference, whose cleaning also reads whether Input.Tools declares the tool
	// (declared, as the settled prefix notes it: see normPrefix.extend).
	ref, declared bool
}

// mediaSig holds the fields of an image or a document that its cleaning reads: the source
// (without unknown fields, which a memoized block has none of) and a document's title,
// context and citations.
type mediaSig struct {
	doc            bool
	src            transcript.MediaSource
	title, context string
	cit            json.RawMessage
}

// mediaSigOf returns the signature of an image or a document, which memoable accepts.
func mediaSigOf(b transcript.Block) *mediaSig {
	switch b := b.(type) {
	case *transcript.Image:
		return &mediaSig{src: b.Source}
	case *transcript.Document:
		return &mediaSig{doc: true, src: b.Source, title: b.Title, context: b.Context, cit: b.Citations}
	}
	return nil
}

// sameMedia reports whether b is an image or a document of m's kind whose fields m holds, as
// values: equal strings (and byte slices of the same array) compare in constant time.
func (m *mediaSig) sameMedia(b transcript.Block) bool {
	var src *transcript.MediaSource
	switch b := b.(type) {
	case *transcript.Image:
		if m.doc || b == nil || len(b.Extra) > 0 {
			return false
		}
		src = &b.Source
	case *transcript.Document:
		if !m.doc || b == nil || len(b.Extra) > 0 || b.Title != m.title || b.Context != m.context || !equalBytes(b.Citations, m.cit) {
			return false
		}
		src = &b.Source
	default:
		return false
	}
	s := &m.src
	return len(src.Extra) == 0 && src.Type == s.Type && src.MediaType == s.MediaType && src.Data == s.Data &&
		src.URL == s.URL && src.FileID == s.FileID && sameFields(src, s)
}

func newCleanMemo(budget *memoBudget) *cleanMemo {
	return &cleanMemo{gen: memo.NewGen[cleanKey, *cleanEntry](minCleanMemo), budget: budget}
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
		out[i], _ = m.gen.Get(keys[i])
	}
}

// store adds the entries a turn made, and keeps the blocks it looked up (looked) with their
// entries (found) for the next turn's lookup. It returns the sequences it kept before, for
// the caller to reuse: the memo no longer reads them.
func (m *cleanMemo) store(keys []cleanKey, entries []*cleanEntry, looked []cleanKey, found []*cleanEntry) ([]cleanKey, []*cleanEntry) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gen.Reserve(2*len(looked)*m.budget.conversations(), m.budget.clean)
	for i, k := range keys {
		m.gen.Put(k, entries[i])
	}
	oldKeys, oldFound := m.lastKeys, m.lastFound
	m.lastKeys, m.lastFound = looked, found
	return oldKeys, oldFound
}

// sigKind is the kind of block a cleanSig was taken from.
type sigKind uint8

const (
	sigText sigKind = iota + 1
	sigToolUse
	sigToolResult
	sigThinking
	sigRedactedThinking
	sigMedia // an image or a document
)

// turnDependent reports whether cleaning b depends on more of the turn than the block: it
// rewrites a tool id or name the provider would reject (reported only where the turn first
// meets the id or name, so reporting nothing does not make its cleaning a function of the
// block alone), or it holds a tool_reference (sent as one only to a tool Input.Tools
// declares). The clean memo does not keep such a block.
func turnDependent(b transcript.Block) bool {
	switch b := b.(type) {
	case *transcript.ToolUse:
		return !wire.ValidToolID(b.ID) || !wire.ValidToolName(b.Name)
	case *transcript.ToolResult:
		return !wire.ValidToolID(b.ToolUseID) || slices.ContainsFunc(b.Content, func(cb transcript.Block) bool { return cb.Kind() == transcript.KindToolReference })
	}
	return false
}

// memoable reports whether signature keeps b: not the kinds that are rare in a transcript
// (server tools, unknown blocks), a tool_result holding anything but text, images, documents
// and tool_references, a block with unknown fields (but text, tool_use, tool_result and
// tool_reference, whose cleaning drops them), or a nil block.
func memoable(b transcript.Block) bool {
	switch b := b.(type) {
	case *transcript.Text:
		return b != nil
	case *transcript.ToolUse:
		return b != nil
	case *transcript.ToolResult:
		if b == nil {
			return false
		}
		for _, cb := range b.Content {
			switch cb.(type) {
			case *transcript.Text, *transcript.ToolReference:
				if transcript.IsNilBlock(cb) {
					return false
				}
			default:
				if !memoableMedia(cb) {
					return false
				}
			}
		}
		return true
	case *transcript.Thinking:
		return b != nil && len(b.Extra) == 0
	case *transcript.RedactedThinking:
		return b != nil && len(b.Extra) == 0
	}
	return memoableMedia(b)
}

// memoableMedia reports whether b is an image or a document without unknown fields.
func memoableMedia(b transcript.Block) bool {
	switch b := b.(type) {
	case *transcript.Image:
		return b != nil && len(b.Extra) == 0 && len(b.Source.Extra) == 0
	case *transcript.Document:
		return b != nil && len(b.Extra) == 0 && len(b.Source.Extra) == 0
	}
	return false
}

// signature returns the fields of b that clean reads, and false for a block the memo does
// not keep (see memoable).
func signature(b transcript.Block) (cleanSig, bool) {
	var s cleanSig
	if !memoable(b) {
		return s, false
	}
	switch b := b.(type) {
	case *transcript.Text:
		s.kind, s.s[0], s.raw = sigText, b.Text, b.Citations
	case *transcript.ToolUse:
		s.kind, s.s[0], s.s[1], s.raw = sigToolUse, b.ID, b.Name, b.Input
	case *transcript.ToolResult:
		s.kind, s.s[0], s.s[1], s.flags = sigToolResult, b.ToolUseID, b.CacheReference, [2]bool{b.StringContent, b.IsError}
		s.parts = make([]partSig, len(b.Content))
		for i, cb := range b.Content {
			switch cb := cb.(type) {
			case *transcript.Text:
				s.parts[i] = partSig{text: cb.Text, cit: cb.Citations}
			case *transcript.ToolReference:
				s.parts[i] = partSig{text: cb.ToolName, ref: true}
			default:
				s.parts[i] = partSig{media: mediaSigOf(cb)}
			}
		}
	case *transcript.Thinking:
		s.kind, s.s[0], s.s[1] = sigThinking, b.Thinking, b.Signature
	case *transcript.RedactedThinking:
		s.kind, s.s[0] = sigRedactedThinking, b.Data
	case *transcript.Image, *transcript.Document:
		s.kind, s.media = sigMedia, mediaSigOf(b)
	}
	return s, true
}

// same reports whether b, any block, is of the kind s was taken from and holds equal values
// in every field its cleaning reads, and whether declared (Input.Tools) declares each tool it
// references as it did: clean makes the same block of it. Equal strings and byte slices of
// the same array compare in constant time.
func (s *cleanSig) same(b transcript.Block, declared map[string]bool) bool {
	switch b := b.(type) {
	case *transcript.Text:
		return s.kind == sigText && b != nil && b.Text == s.s[0] && equalBytes(b.Citations, s.raw)
	case *transcript.ToolUse:
		return s.kind == sigToolUse && b != nil && b.ID == s.s[0] && b.Name == s.s[1] && equalBytes(b.Input, s.raw)
	case *transcript.ToolResult:
		if s.kind != sigToolResult || b == nil || b.ToolUseID != s.s[0] || b.CacheReference != s.s[1] ||
			[2]bool{b.StringContent, b.IsError} != s.flags || len(b.Content) != len(s.parts) {
			return false
		}
		for i, cb := range b.Content {
			p := &s.parts[i]
			switch {
			case p.ref:
				if r, ok := cb.(*transcript.ToolReference); !ok || r == nil || r.ToolName != p.text || declared[p.text] != p.declared {
					return false
				}
			case p.media != nil:
				if !p.media.sameMedia(cb) {
					return false
				}
			default:
				if t, ok := cb.(*transcript.Text); !ok || t == nil || t.Text != p.text || !equalBytes(t.Citations, p.cit) {
					return false
				}
			}
		}
		return true
	case *transcript.Thinking:
		return s.kind == sigThinking && b != nil && b.Thinking == s.s[0] && b.Signature == s.s[1] && len(b.Extra) == 0
	case *transcript.RedactedThinking:
		return s.kind == sigRedactedThinking && b != nil && b.Data == s.s[0] && len(b.Extra) == 0
	case *transcript.Image, *transcript.Document:
		return s.kind == sigMedia && s.media.sameMedia(b)
	}
	return false
}

// equalBytes reports whether a and b hold the same bytes, and are both nil or both not.
func equalBytes(a, b []byte) bool {
	return len(a) == len(b) && (a == nil) == (b == nil) && string(a) == string(b)
}

// normScratch holds the maps and slices one normalize call works in, reused by the next call
// (through normScratchPool) so that a steady turn does not allocate them again. Nothing of it
// outlives the call: the request gets new slices.
type normScratch struct {
	msgIDs        map[string]struct{} // responseOrder: the msgIDs met
	seen, srvSeen map[string]bool     // dedupToolUses: tool_use and server_tool_use ids
	last          []bool              // responseOrder: the item is its msgID's last
	order         []*item
	cuts          []int // responseOrder
	why           []skipCode
	keys          []cleanKey
	found         []*cleanEntry
	all           []nblock
	msgs          []nmsg // collect: the messages, until emit copies them into the request
	starts, acts  []int  // collect
	// snap is collect's messages as it made them, and comb the messages of the whole view,
	// until emit copies them into the request (see passes).
	snap, comb     []nmsg
	extIDs, extSrv map[string]bool // extent: the tool_use and server_tool_use ids it met
}

var normScratchPool = sync.Pool{New: func() any {
	return &normScratch{msgIDs: map[string]struct{}{}, seen: map[string]bool{}, srvSeen: map[string]bool{},
		extIDs: map[string]bool{}, extSrv: map[string]bool{}}
}}

// release empties sc, so that it keeps no block or record alive, and puts it back in the pool.
func (sc *normScratch) release() {
	clear(sc.msgIDs)
	clear(sc.seen)
	clear(sc.srvSeen)
	clear(sc.extIDs)
	clear(sc.extSrv)
	clear(sc.order)
	clear(sc.why)
	clear(sc.keys)
	clear(sc.found)
	clear(sc.all)
	clear(sc.msgs[:cap(sc.msgs)]) // the stages after collect may have used more of it
	clear(sc.snap)
	clear(sc.comb[:cap(sc.comb)])
	sc.order, sc.why, sc.keys, sc.found, sc.all, sc.msgs = sc.order[:0], sc.why[:0], sc.keys[:0], sc.found[:0], sc.all[:0], sc.msgs[:0]
	sc.cuts, sc.starts, sc.acts, sc.snap, sc.comb = sc.cuts[:0], sc.starts[:0], sc.acts[:0], sc.snap[:0], sc.comb[:0]
	normScratchPool.Put(sc)
}

// grow returns s with length n, reusing its array when it is large enough.
func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// sameFields reports whether a and b were read from lines holding the same fields.
func sameFields(a, b *transcript.MediaSource) bool {
	ap, an := a.FieldBits()
	bp, bn := b.FieldBits()
	return ap == bp && an == bn
}
