package agentctx

import (
	"unsafe"

	"github.com/agentctx/agentctx/transcript"

	"github.com/agentctx/agentctx/internal/memo"
)

// fitMemo keeps, for the conversations a Pipeline served last, the calibration fit's running
// sums over their response pairs (see [gauge.fitRatio]). A steady turn's chain is the
// previous turn's and the records written since, so every pair but the newest is the one the
// previous turn summed: the turn sums only the pairs whose records it does not hold as they
// were. It changes only time.
type fitMemo struct {
	memo.Conv[fitEntry]
}

// fitEntry is one conversation's fit as last summed: the records it read (the chain records
// after the boundary that take part in the fit, from the first response start to the last),
// each known by its uuid, its message and its usage as they were and its file position; the
// response starts among them, and the sums after each pair.
//
// The entry holds the strings and values it compares by address, so no address it knows can be
// reused for something else while it stands: a caller that hands in other records (decoded
// again, another transcript copied into the same slice, a rewind) gives other uuids or other
// messages. What a message holds is taken as the caller's contract has it (see
// [Input.Records]): not changed once Prepare has seen it. The entry holds none of the caller's
// slice.
type fitEntry struct {
	uuids  []string
	msgs   []*transcript.Message
	usages []*transcript.Usage
	pos    []int
	starts []int     // indices into the records of the response starts
	sums   []fitSums // sums[j]: over pairs 1 … j (sums[0] is zero), parallel to starts
}

// fitSums are the fit's running sums: reported and counted growth over the usable pairs.
type fitSums struct {
	reported, counted float64
	pairs             int
}

// same reports whether the entry's record k is r, as it was, at file position pos.
func (e *fitEntry) same(k int, r *transcript.Record, pos int) bool {
	u := e.uuids[k]
	return e.msgs[k] == r.Message && e.usages[k] == r.Message.Usage && e.pos[k] == pos &&
		len(r.UUID) == len(u) && unsafe.StringData(r.UUID) == unsafe.StringData(u)
}

// add appends r, at file position pos, to the records the entry read.
func (e *fitEntry) add(r *transcript.Record, pos int) {
	e.uuids, e.msgs, e.usages, e.pos = append(e.uuids, r.UUID), append(e.msgs, r.Message), append(e.usages, r.Message.Usage), append(e.pos, pos)
}

// len is how many records the entry read.
func (e *fitEntry) len() int { return len(e.uuids) }

// take removes and returns the kept entry whose first record is first, or the least recently
// used one for its storage when the memo is full, or a new one. m may be nil: the entry is
// then new and not kept.
func (m *fitMemo) take(first *transcript.Record) *fitEntry {
	if m == nil {
		return &fitEntry{}
	}
	e, reused := m.Conv.Take(func(e *fitEntry) bool { return e.len() > 0 && e.msgs[0] == first.Message })
	switch {
	case e == nil:
		return &fitEntry{}
	case reused:
		e.truncate(0)
	}
	return e
}

// keep puts e back as the most recently used entry. m may be nil.
func (m *fitMemo) keep(e *fitEntry) {
	if m != nil {
		m.Conv.Keep(e)
	}
}

// truncate keeps the first n records and the starts and sums among them.
func (e *fitEntry) truncate(n int) {
	clear(e.uuids[n:])
	clear(e.msgs[n:])
	clear(e.usages[n:])
	e.uuids, e.msgs, e.usages, e.pos = e.uuids[:n], e.msgs[:n], e.usages[:n], e.pos[:n]
	k := len(e.starts)
	for k > 0 && e.starts[k-1] >= n {
		k--
	}
	e.starts, e.sums = e.starts[:k], e.sums[:k]
}
