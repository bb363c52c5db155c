package transcript

import (
	"errors"
	"time"
)

// CacheTTLTally is where the cache TTL's weighing (see [ChooseCacheTTL]) of a thread's
// responses stands at a compact boundary's cut: a boundary's [History] carries it, so that a
// read that stopped at the cut weighs the responses after it as a whole read does.
type CacheTTLTally struct {
	// At, Size and ID are the time, the prompt size and the message id of the latest response
	// counted.
	At   time.Time `json:"at,omitzero"`
	Size int       `json:"size,omitempty"`
	ID   string    `json:"id,omitempty"`
	// Written is the tokens the 1-hour TTL writes.
	Written int `json:"written,omitempty"`
	// Gaps counts the gaps of 5 to 60 minutes between two responses; GapTokens adds up the
	// prompt sizes before them.
	Gaps      int `json:"gaps,omitempty"`
	GapTokens int `json:"gapTokens,omitempty"`
}

// check reports what is wrong with t, if anything: a count out of range.
func (t *CacheTTLTally) check() error {
	if t == nil {
		return nil
	}
	if t.Size < 0 || t.Written < 0 || t.Gaps < 0 || t.GapTokens < 0 || t.Gaps == 0 && t.GapTokens != 0 {
		return errors.New("its cache TTL tally is out of range")
	}
	return nil
}

// tally returns where f stands, or nil when it counted nothing.
func (f *ttlFold) tally() *CacheTTLTally {
	t := CacheTTLTally{Size: f.prevSize, ID: f.last, Written: f.written, Gaps: f.gaps, GapTokens: f.gapSum}
	if !f.prev.IsZero() {
		t.At = f.prev.UTC()
	}
	if t == (CacheTTLTally{}) {
		return nil
	}
	return &t
}

// startTTLFold returns the weighing of leaf's thread in records and the position in records it
// goes on from. When a read stopped at the cut of the thread's first boundary in records, it
// starts where that boundary's [History] says the weighing stood at the cut, after the records
// the history carries (see [StartHistoryWalk]). When a read from the active tail scanned the
// lines before its cut instead (the boundary had no history it could use), it starts where
// the scan's weighing of those lines stood, at the first record read from the cut on. Either
// way its end is past the boundary, so that the fold starts again when the boundary is
// dropped. sc, when it covers records, lists their boundaries.
func startTTLFold(records []Record, sc *Scan, leaf *Record) (ttlFold, int) {
	start, from, at := cutStart(records, sc, leaf)
	return ttlFoldAt(records, sc, leaf, start, from, at)
}

// ttlFoldAt is startTTLFold from what cutStart returned for the same records: a caller that
// needs both passes over the boundaries once for the cut.
func ttlFoldAt(records []Record, sc *Scan, leaf *Record, start *History, from, at int) (ttlFold, int) {
	if start != nil {
		return ttlFoldFrom(start.CacheTTL, at), from
	}
	at, from = -1, 0
	var t *CacheTTLTally
	sc.Each(records, ScanBoundary, func(i int, r *Record) {
		if s := r.scanned; at < 0 && s != nil && i >= s.at {
			at, from, t = i, i-s.at, s.tally[thread(leaf)]
		}
	})
	return ttlFoldFrom(t, at), from
}

// scannedCut is the cache TTL's weighing of the lines before a tail read's cut, when the read
// scanned them (see [Tail]): the read sets it on the boundary's record.
type scannedCut struct {
	// tally is where the weighing of each thread (see thread) stood at the cut.
	tally [2]*CacheTTLTally
	// at is the boundary's position among the records read from the cut on.
	at int
}

// ttlFoldFrom returns the weighing from t, where it stood at the cut a read stopped at (nil:
// nothing counted), on the boundary at position at (-1: none).
func ttlFoldFrom(t *CacheTTLTally, at int) ttlFold {
	if t == nil {
		return ttlFold{end: at + 1}
	}
	f := ttlFold{prev: t.At, prevSize: t.Size, last: t.ID, written: t.Written, gaps: t.Gaps, gapSum: t.GapTokens, end: at + 1}
	if t.ID != "" {
		f.seen = map[string]bool{t.ID: true}
	}
	return f
}
