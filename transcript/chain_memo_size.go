package transcript

import (
	"unsafe"

	"github.com/agentctx/agentctx/internal/memo"
)

// MemoState reports what one of a Pipeline's memos holds: its name, its entries (for a memo
// kept per conversation, the conversations it holds), the bytes they hold by the memo's own
// estimate (from the lengths of its slices and maps; the caller's strings and blocks, which
// the memos hold by identity, count for nothing), and how many entries it has dropped to stay
// within its bounds.
type MemoState struct {
	Name      string
	Entries   int
	Bytes     int64
	Evictions int64
}

// Stats reports the indexes c holds, as the memo named "chains".
func (c *ChainCache) Stats() MemoState {
	s := c.ix.Stats()
	return MemoState{Name: "chains", Entries: s.Entries, Bytes: s.Bytes, Evictions: s.Evictions}
}

// SetBytes bounds the bytes the indexes c keeps hold together, by their estimate (see
// [MemoState]), before c is used; the index of the conversation served last is kept whatever
// its size. 0: no bound but the number of conversations.
func (c *ChainCache) SetBytes(n int64) { c.ix.SetBytes(n) }

// Bytes estimates what the index holds: its lists, its map, its scan, and what the last chain
// built from it left for the next (see [memo.SliceBytes]).
func (ix *chainIndex) Bytes() int64 {
	b := int64(unsafe.Sizeof(*ix)) + memo.SliceBytes(cap(ix.uuids)+cap(ix.parents), "") + memo.SliceBytes(cap(ix.marks), indexMark{}) +
		memo.MapBytes(len(ix.byUUID), "", 0) + memo.SliceBytes(cap(ix.boundaries)+cap(ix.kids), 0)
	for _, l := range ix.scan.pos {
		b += memo.SliceBytes(cap(l), 0)
	}
	r := &ix.resume
	s := &r.s
	b += memo.SliceBytes(cap(s.on)+cap(s.attached), false) +
		memo.SliceBytes(cap(s.path)+cap(s.breaks)+cap(s.targets)+cap(s.heads)+cap(r.idx), 0) +
		memo.MapBytes(len(s.msgs)+len(s.calls), "", 0) + memo.SliceBytes(cap(s.keys), keptKey{}) +
		memo.SliceBytes(cap(s.callList), chainCall{}) + memo.SliceBytes(cap(s.replays), replayAt{}) +
		memo.SliceBytes(cap(r.headIDs)+cap(r.undo.offLog), "") + memo.MapBytes(len(r.offIDs), "", false) +
		memo.MapBytes(len(r.relink), "", "") + memo.SliceBytes(cap(r.undo.headSet)+cap(r.undo.answers), posValue{})
	return b
}
