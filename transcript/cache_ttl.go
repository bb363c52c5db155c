package transcript

import (
	"math"
	"sort"
	"sync/atomic"
	"time"
)

// ChooseCacheTTL weighs the prompt cache's two times to live on the session's responses
// (those of leaf's thread, with usage, in file order), at the cache's prices relative to the
// base input price (read, and a write under each TTL): each gap between consecutive responses of 5 to 60 minutes
// costs the 5-minute TTL a rewrite of the previous request's prompt at the write price
// instead of a read; the 1-hour TTL costs its write premium on every token written — each
// response's growth, or its whole prompt after a drop (a compaction) or a gap past the hour.
// It picks "1h" when the rewrites cost more, else "5m".
//
// When the records come from a read that stopped at a compact boundary's cut, the weighing
// starts where the boundary's [History] says it stood at the cut (see [CacheTTLTally]).
func ChooseCacheTTL(records []Record, leaf *Record, read, write5m, write1h float64) CacheTTLDecision {
	f, from := startTTLFold(records, nil, leaf)
	for i := from; i < len(records); i++ {
		if r := &records[i]; !OtherThread(r, leaf) {
			f.add(i, r)
		}
	}
	return f.decision(read, write5m, write1h)
}

// ChooseCacheTTL is [ChooseCacheTTL] through the index: the pass over the responses of leaf's
// thread that a Pipeline's index keeps, extended by the records written since, once a turn
// has asked for it (the first turn that asks passes over the responses the index lists).
// Without an index of records, or without a leaf, it passes over every record.
func (sc *Scan) ChooseCacheTTL(records []Record, leaf *Record, read, write5m, write1h float64) CacheTTLDecision {
	if !sc.Covers(records) || leaf == nil {
		return ChooseCacheTTL(records, leaf, read, write5m, write1h)
	}
	th := thread(leaf)
	if sc.ttl.want != nil {
		sc.ttl.want.Store(true)
	}
	if sc.ttl.upTo == sc.n {
		return sc.ttl.fold[th].decision(read, write5m, write1h)
	}
	f, from := startTTLFold(records, sc, leaf)
	pos := sc.pos[threadKinds[th]]
	for _, i := range pos[sort.SearchInts(pos, from):] {
		f.add(i, &records[i])
	}
	return f.decision(read, write5m, write1h)
}

// ttlFold is ChooseCacheTTL's pass over the responses of one thread, in file order, up to
// where it has come: what the choice needs of them, whatever the prices.
type ttlFold struct {
	// seen holds the message ids of the responses passed; only the index that owns the
	// fold reads it (the copies turns hold share it).
	seen map[string]bool
	// prev, prevSize and last are the time, prompt size and message id of the latest
	// response counted.
	prev     time.Time
	prevSize int
	last     string
	// written is the tokens the 1-hour TTL writes; gaps counts the gaps of 5 to 60 minutes
	// and gapSum adds up the prompt sizes before them.
	written int
	gaps    int
	gapSum  int
	// end is one past the position of the last record passed (or of the boundary whose
	// history the fold started from: see startTTLFold), 0 for none.
	end int
}

// add passes over the record at position i: a response of the fold's thread, counted once
// per message id, when it has usage.
func (f *ttlFold) add(i int, r *Record) {
	f.end = max(f.end, i+1)
	if w, ok := weighed(r); ok {
		f.response(w)
	}
}

// weighedResponse is what the cache TTL's weighing reads of a response: its message id, time
// and prompt size.
type weighedResponse struct {
	id   string
	at   time.Time
	size int
}

// weighed returns what the weighing reads of r, with ok false when r is no response with
// usage.
func weighed(r *Record) (w weighedResponse, ok bool) {
	if !ProviderResponse(r) || r.Message.Usage == nil {
		return w, false
	}
	u := r.Message.Usage
	return weighedResponse{r.Message.ID, r.Time(), u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens}, true
}

// response counts w, once per message id.
func (f *ttlFold) response(w weighedResponse) {
	if id := w.id; id != "" {
		if f.seen[id] {
			return
		}
		if f.seen == nil {
			f.seen = map[string]bool{}
		}
		f.seen[id] = true
	}
	f.count(w)
}

// count counts w, whose message id was not counted before.
func (f *ttlFold) count(w weighedResponse) {
	size, at := w.size, w.at
	gap := time.Duration(0)
	if !f.prev.IsZero() && !at.IsZero() {
		gap = at.Sub(f.prev)
	}
	switch {
	case gap > 5*time.Minute && gap <= time.Hour:
		f.gaps++
		f.gapSum += f.prevSize
		f.written += max(0, size-f.prevSize)
	case gap > time.Hour || size < f.prevSize:
		f.written += size
	default:
		f.written += max(0, size-f.prevSize)
	}
	f.prev, f.prevSize, f.last = at, size, w.id
}

// decision weighs the responses passed at the given prices (see [ChooseCacheTTL]).
func (f *ttlFold) decision(read, write5m, write1h float64) CacheTTLDecision {
	d := CacheTTLDecision{Gaps: f.gaps}
	d.Rewrites5m = float64(f.gapSum) * max(0, write5m-read)
	d.Premium1h = float64(f.written) * max(0, write1h-write5m)
	d.Rewrites5m, d.Premium1h = math.Round(d.Rewrites5m), math.Round(d.Premium1h)
	d.TTL = "5m"
	if d.Rewrites5m > d.Premium1h {
		d.TTL = "1h"
	}
	return d
}

// ttlLedger is the pass over each thread's responses a [Scan] keeps for
// [Scan.ChooseCacheTTL], once a turn has asked for it: it reads a response's message id,
// usage and time once, when the index passes it (records are an append-only log: see
// [github.com/agentctx/agentctx.Input.Records]).
type ttlLedger struct {
	// want is set by the first turn that asks, on the copy it holds; the index then keeps the
	// folds up to date as it extends.
	want *atomic.Bool
	// fold is the pass over each thread's responses (see thread) among the first upTo records.
	fold [2]ttlFold
	upTo int
}

// threadKinds are the kinds of responses of each thread: the main thread's, the sidechain's.
var threadKinds = [2]scanKind{scanMain, scanSide}

// thread returns the thread of r: 0 for the main thread, 1 for the sidechain.
func thread(r *Record) int {
	if r.IsSidechain {
		return 1
	}
	return 0
}

// extend brings the folds up to the n records sc lists, when a turn has asked for them.
func (l *ttlLedger) extend(sc *Scan, records []Record) {
	if l.want == nil {
		l.want = new(atomic.Bool)
	}
	if !l.want.Load() || l.upTo == sc.n {
		return
	}
	for th, k := range threadKinds {
		from := l.upTo
		if from == 0 {
			l.fold[th], from = startTTLFold(records, sc, &Record{IsSidechain: th == 1})
		}
		pos := sc.pos[k]
		for j := sort.SearchInts(pos, from); j < len(pos); j++ {
			l.fold[th].add(pos[j], &records[pos[j]])
		}
	}
	l.upTo = sc.n
}

// truncate drops the records from position n on: the folds start again when they passed one.
func (l *ttlLedger) truncate(n int) {
	if l.upTo <= n {
		return
	}
	if l.fold[0].end > n || l.fold[1].end > n {
		l.fold, l.upTo = [2]ttlFold{}, 0 // new storage: copies keep theirs
		return
	}
	l.upTo = n
}
