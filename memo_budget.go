package agentctx

import (
	"cmp"
	"sync/atomic"
	"unsafe"

	"github.com/agentctx/agentctx/internal/memo"
	"github.com/agentctx/agentctx/transcript"
)

// defaultMemoBytes is the ceiling of a Pipeline's memos when Config.MemoBytes is zero.
const defaultMemoBytes = 2 << 30

// A Pipeline's memos carry a steady turn's work over from the previous turn of the same
// conversation. One Pipeline serving many conversations in turn keeps that work for each of
// them only if every memo has room for all of them: the memos kept per conversation (the
// chain's index, the calibration fit's sums, normalize's settled prefix, the count sequences)
// hold one entry each, and the memos kept by content (counts, cleaned blocks, encoded parts)
// make room for as many turns as the conversations held. Both are bounded by Config.MemoBytes,
// split between the memos in the shares below, which follow what each holds of a steady
// turn's state on a fleet (per session of 40,000 tokens: encoded parts 0.22 MB, prefix 0.17,
// cleaned blocks 0.16, index 0.11, counts 0.09, sequences 0.03), twice that for the memos of
// two generations, whose bound must hold the whole working set while the previous generation
// is still kept: a conversation past the ceiling drops the least recently served one's
// entries, and the memos by content stop growing. At the default ceiling a fleet of 1,000
// such sessions fits.
const (
	shareChains    = 0.09
	shareFits      = 0.02
	sharePrefixes  = 0.14
	shareCounts    = 0.14 // texts, idents and messages
	shareSequences = 0.05
	shareClean     = 0.22
	shareEncode    = 0.34
)

// memoBudget is a Pipeline's memos' bounds, shared by its variants, and the number of
// conversations the memos make room for.
type memoBudget struct {
	limit int64
	// chains, fits and prefixes bound the memos kept per conversation, in bytes; texts,
	// messages and clean the memos by content, in entries a generation; encode the encoded
	// parts, in bytes a generation.
	chains, fits, prefixes int64
	texts, messages, clean int
	encode                 int
	// sequences bounds the count sequences, in bytes.
	sequences int64
	// held is how many conversations the memos kept per conversation hold, and so how many
	// turns the memos by content make room for.
	held atomic.Int64
}

// Entry sizes of the memos by content (see [memo.MapBytes]).
var (
	textEntryBytes  = memo.MapBytes(1, textKey{}, 0)
	msgEntryBytes   = memo.MapBytes(1, msgKey{}, msgEntry{}) + 2*int64(unsafe.Sizeof(""))
	cleanEntryBytes = memo.MapBytes(1, cleanKey{}, (*cleanEntry)(nil)) + int64(unsafe.Sizeof(cleanEntry{}))
)

// newMemoBudget splits limit bytes between the memos.
func newMemoBudget(limit int64) *memoBudget {
	share := func(f float64) int64 { return max(int64(f*float64(limit)), 1) } // 0 would mean no bound
	b := &memoBudget{limit: limit, chains: share(shareChains), fits: share(shareFits), prefixes: share(sharePrefixes)}
	// Two generations of each memo by content; texts, idents and messages have the same
	// bound.
	b.texts = int(share(shareCounts) / 2 / (2*textEntryBytes + msgEntryBytes))
	b.messages = b.texts
	b.clean = int(share(shareClean) / 2 / cleanEntryBytes)
	b.sequences = share(shareSequences)
	b.encode = int(share(shareEncode) / 2)
	b.held.Store(1)
	return b
}

// convLimit is the number of conversations the memos kept per conversation hold for
// Config.Conversations n: n, or when zero as many as their bytes allow.
func convLimit(n int) int { return cmp.Or(n, MaxConversations) }

// conversations returns how many conversations' turns the memos by content make room for.
func (b *memoBudget) conversations() int { return int(max(b.held.Load(), 1)) }

// reserveMemos makes room in the memos by content for a turn of records records holding
// blocks blocks, for each of the conversations the chain's memo holds (the turn's among them:
// its index is back in the memo once its chain is built).
func (p *Pipeline) reserveMemos(records, blocks int) {
	n := int64(max(p.chains.Stats().Entries, 1))
	if p.budget.held.Swap(n) != n {
		p.enc.Scale(int(n), p.budget.encode)
	}
	p.counter.reserve(records, blocks, int(n), p.budget)
}

// Bytes estimates what the entry holds (see [memo.SliceBytes]).
func (e *fitEntry) Bytes() int64 {
	return int64(unsafe.Sizeof(*e)) + memo.SliceBytes(cap(e.uuids), "") + memo.SliceBytes(cap(e.msgs)+cap(e.usages), uintptr(0)) +
		memo.SliceBytes(cap(e.pos)+cap(e.starts), 0) + memo.SliceBytes(cap(e.sums), fitSums{})
}

// Bytes estimates what the prefix holds (see [memo.SliceBytes]).
func (pre *normPrefix) Bytes() int64 {
	b := int64(unsafe.Sizeof(*pre)) + memo.SliceBytes(cap(pre.items), prefixItem{}) + memo.SliceBytes(cap(pre.blocks), cleanSig{}) +
		memo.SliceBytes(cap(pre.all), nblock{}) + memo.SliceBytes(cap(pre.msgs), nmsg{}) +
		memo.SliceBytes(cap(pre.reorders)+cap(pre.acts), Action{}) + memo.SliceBytes(cap(pre.names), nameUse{}) +
		memo.MapBytes(len(pre.msgIDs)+len(pre.toolIDs)+len(pre.srvIDs)+len(pre.named), "", struct{}{}) +
		memo.MapBytes(len(pre.ids)+len(pre.fixedNames), "", "") + memo.MapBytes(len(pre.stubs), "", stub{})
	for i := range pre.blocks {
		b += memo.SliceBytes(len(pre.blocks[i].parts), partSig{})
		if pre.blocks[i].media != nil {
			b += int64(unsafe.Sizeof(mediaSig{}))
		}
	}
	return b
}

// stats reports the counter's memos: texts and idents as "counts", messages and sequences as
// "messages".
func (c *Counter) stats() []transcript.MemoState {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, i, m := c.texts.Stats(0), c.idents.Stats(0), c.messages.Stats(0)
	c.messages.All(func(e msgEntry) { m.Bytes += memo.SliceBytes(cap(e.keep), "") })
	var seqBytes int64
	c.seqs.All(func(e *seqEntry) {
		seqBytes += int64(unsafe.Sizeof(*e)) + memo.SliceBytes(cap(e.items), seqItem{})
		for k := range e.items {
			seqBytes += memo.SliceBytes(cap(e.items[k].keep), "")
		}
	})
	s := c.seqs.Stats(0)
	return []transcript.MemoState{
		{Name: "counts", Entries: t.Entries + i.Entries, Bytes: t.Bytes + i.Bytes, Evictions: t.Evictions + i.Evictions},
		{Name: "messages", Entries: m.Entries, Bytes: m.Bytes, Evictions: m.Evictions},
		{Name: "sequences", Entries: s.Entries, Bytes: s.Bytes + seqBytes, Evictions: s.Evictions},
	}
}

// stats reports the cleaned blocks the memo holds.
func (m *cleanMemo) stats() transcript.MemoState {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.gen.Stats(int64(unsafe.Sizeof(cleanEntry{})))
	m.gen.All(func(e *cleanEntry) { s.Bytes += blockBytes(e.nb.b) + memo.SliceBytes(len(e.sig.parts), partSig{}) })
	s.Bytes += memo.SliceBytes(cap(m.lastKeys), cleanKey{}) + memo.SliceBytes(cap(m.lastFound), (*cleanEntry)(nil))
	return transcript.MemoState{Name: "clean", Entries: s.Entries, Bytes: s.Bytes, Evictions: s.Evictions}
}

// blockBytes estimates a block normalize made, without the strings it shares with the
// transcript's block.
func blockBytes(b transcript.Block) int64 {
	switch b := b.(type) {
	case *transcript.Text:
		return int64(unsafe.Sizeof(*b))
	case *transcript.ToolUse:
		return int64(unsafe.Sizeof(*b))
	case *transcript.ToolResult:
		n := int64(unsafe.Sizeof(*b)) + memo.SliceBytes(cap(b.Content), b)
		for _, c := range b.Content {
			n += blockBytes(c)
		}
		return n
	case *transcript.Thinking:
		return int64(unsafe.Sizeof(*b))
	case *transcript.Image:
		return int64(unsafe.Sizeof(*b))
	case *transcript.Document:
		return int64(unsafe.Sizeof(*b))
	}
	return 0
}

// convStats reports a per-conversation memo.
func convStats(name string, s memo.Stats) transcript.MemoState {
	return transcript.MemoState{Name: name, Entries: s.Entries, Bytes: s.Bytes, Evictions: s.Evictions}
}

// MemoStats reports the state a [Pipeline] holds for the conversations it serves: its memos,
// which carry a steady turn's work over from the previous turn (see [Config.MemoBytes]).
// Divided by Conversations, Bytes is a host's cost per session of the library's state, beside
// the records it holds itself.
type MemoStats struct {
	// Conversations is how many conversations the memos kept per conversation hold: the
	// ones served last.
	Conversations int
	// Bytes is what the memos hold together, by their own estimate (the lengths of their
	// slices and maps; the caller's strings and blocks, which they hold by identity, count
	// for nothing), and Limit the ceiling they keep under.
	Bytes, Limit int64
	// Evictions counts the entries the memos dropped to stay within their bounds: a
	// Pipeline that serves more conversations than it holds drops some every turn.
	Evictions int64
	// Memos reports each memo: chains, fits, prefixes and sequences (one entry per
	// conversation), counts, messages, clean and encode (entries by content). A Pipeline
	// that serves turns naming another model or window ([Input.Model]) adds its variants'
	// prefixes and clean memos.
	Memos []transcript.MemoState
}

// MemoStats reports what p's memos hold now.
func (p *Pipeline) MemoStats() MemoStats {
	s := MemoStats{Limit: p.budget.limit}
	s.Memos = append(s.Memos, p.chains.Stats(), convStats("fits", p.gauge.calib.Stats()))
	s.Memos = append(s.Memos, p.counter.stats()...)
	s.Memos = append(s.Memos, p.enc.Stats())
	ps := []*Pipeline{p}
	p.variants.mu.Lock()
	ps = append(ps, p.variants.ps...)
	p.variants.mu.Unlock()
	for _, q := range ps {
		n := q.stages.normalize
		s.Memos = append(s.Memos, convStats("prefixes", n.prefixes.Stats()), n.clean.stats())
	}
	s.Conversations = s.Memos[0].Entries
	for _, m := range s.Memos {
		s.Bytes += m.Bytes
		s.Evictions += m.Evictions
	}
	return s
}
