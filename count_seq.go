package agentctx

import (
	"sync"

	"github.com/agentctx/agentctx/transcript"
)

// A turn counts the same long sequences of messages as the previous turn of its conversation:
// the records of the chain, for the calibration fit, and the messages of the request. Finding
// each message in the message memo costs a lookup in a large table per message, which is most
// of the turn's counting; the sequence memo keeps, per conversation, the keys and counts of
// the sequence as it was last counted, so that a turn compares each message's key with the one
// at the same index, in order, and looks up only the messages that differ.

// Sequence kinds: the same messages are counted as records and as request messages.
const (
	seqRecords byte = iota + 1
	seqRequest
)

// seqKey names a conversation's sequence: its kind and the key of its first message.
type seqKey struct {
	kind  byte
	first msgKey
}

// seqEntry is a sequence as last counted: per message its key, its count and the strings
// its key holds by identity (kept alive by the entry, as msgEntry keeps them).
type seqEntry struct {
	items []seqItem
}

type seqItem struct {
	key msgKey
	msgEntry
}

// maxSeqMemo bounds the sequence memo, in conversations per generation. Each entry holds one
// conversation's sequence, as long as the conversation; a Pipeline serving more conversations
// at once than this falls back to the message memo for the others.
const maxSeqMemo = 64

// seqScratch holds a turn's keys while it compares them with the memo.
var seqScratch = sync.Pool{New: func() any { return new([]msgKey) }}

// sequence sets out[i] to the count of message i's blocks (without the framing) for the n
// messages at returns, memoized by the sequence memo in front of the message memo. out must
// hold n counts.
func (c *Counter) sequence(kind byte, n int, at func(i int) (transcript.Role, []transcript.Block), out []int) {
	if n == 0 {
		return
	}
	sp := seqScratch.Get().(*[]msgKey)
	keys := (*sp)[:0]
	for i := range n {
		role, blocks := at(i)
		keys = append(keys, c.messageKey(role, blocks))
	}
	sk := seqKey{kind: kind, first: keys[0]}

	// Take the counts of the messages whose key is the one at the same index.
	c.mu.Lock()
	e, ok := c.seqs.Get(sk)
	if !ok {
		e = &seqEntry{}
		c.seqs.Put(sk, e)
	}
	missing := 0
	for i, k := range keys {
		if i < len(e.items) && e.items[i].key == k {
			out[i] = e.items[i].bd.Total()
		} else {
			out[i] = -1
			missing++
		}
	}
	c.mu.Unlock()

	// Count the others through the message memo, then record the sequence as counted now.
	// Each item pairs a key with its own count, so an entry another turn of the conversation
	// changed meanwhile stays right, whichever items of the two turns it ends with.
	type counted struct {
		i int
		seqItem
	}
	var fresh []counted
	if missing > 0 {
		fresh = make([]counted, 0, missing)
		for i, k := range keys {
			if out[i] < 0 {
				role, blocks := at(i)
				me := c.keyed(k, role, blocks)
				out[i] = me.bd.Total()
				fresh = append(fresh, counted{i, seqItem{key: k, msgEntry: me}})
			}
		}
	}
	c.mu.Lock()
	if len(e.items) > n {
		clear(e.items[n:]) // what the shorter sequence no longer holds is not kept alive
		e.items = e.items[:n]
	}
	if len(e.items) == 0 && cap(e.items) < n {
		// A sequence counted for the first time is allocated once, at its length, instead of
		// growing by doubling (which leaves as much garbage as it keeps).
		e.items = make([]seqItem, 0, n)
	}
	for _, f := range fresh {
		switch {
		case f.i < len(e.items):
			e.items[f.i] = f.seqItem
		case f.i == len(e.items):
			e.items = append(e.items, f.seqItem)
		}
	}
	c.mu.Unlock()
	clear(keys)
	*sp = keys[:0]
	seqScratch.Put(sp)
}

// countPool holds scratch for the counts of a sequence.
var countPool = sync.Pool{New: func() any { return new([]int) }}

// countScratch returns scratch for n counts (or any n ints); putCountScratch gives it back.
func countScratch(n int) *[]int {
	p := countPool.Get().(*[]int)
	if cap(*p) < n {
		*p = make([]int, n)
	}
	*p = (*p)[:n]
	return p
}

func putCountScratch(p *[]int) { countPool.Put(p) }
