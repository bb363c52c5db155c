package transcript

import "slices"

// CutHistory returns the history a compaction's boundary carries (see [History]): what
// records[:end], the records before the boundary's cut in file order, say of leaf's thread,
// so that a later read can stop at the cut. It walks them with a [HistoryWalk], as the
// pipeline walks a transcript: the breaker's failures, the boundaries and the responses
// between them the thrash guard counts, for any ThrashTurns up to 7; it weighs the thread's
// responses for the cache TTL (see [CacheTTLTally]); and it carries the records later turns
// still read: the pins and the records they name, the recovery decisions, the latest cache
// TTL decision of the main thread, the latest response of the main thread and the latest that
// completed, their late usage and the snips naming a pinned record. When records start from
// a read that stopped at a cut itself, that cut's history (or the weighing of a read that
// scanned the lines before its cut) is where the walk and the weighing start; that cut's
// boundary may lie at or past end (when the new cut falls inside the tail that boundary
// kept), so records past end are read to find it, never walked.
func CutHistory(records []Record, end int, leaf *Record) (*History, error) {
	start, from, at := cutStart(records, nil, leaf)
	w := historyWalkFrom(start, HistoryResponses)
	f, weighFrom := ttlFoldAt(records, nil, leaf, start, from, at)
	pre := records[:end]
	for i := from; i < end; i++ {
		if r := &pre[i]; !OtherThread(r, leaf) {
			w.Record(r)
			if i >= weighFrom {
				f.add(i, r)
			}
		}
	}
	d := &History{Version: HistoryVersion, Compactions: w.Compactions, Failures: w.Failures, CacheTTL: f.tally()}
	if len(w.Runs) > 0 {
		d.Runs = w.Runs
	}
	if len(w.Open) > 0 {
		d.Open = w.Open
	}
	for _, i := range carriedRecords(pre) {
		b, err := pre[i].MarshalJSON()
		if err != nil {
			return nil, err
		}
		d.Records = append(d.Records, b)
	}
	return d, d.Seal()
}

// carriedRecords returns the positions in pre, in order, of the records a boundary's history
// carries (see CutHistory).
func carriedRecords(pre []Record) []int {
	pinned := map[string]bool{}
	last, done, ttl := -1, -1, -1
	for i := range pre {
		r := &pre[i]
		if r.Type == TypeSystem && r.Subtype == SubtypePin && r.Pin != nil {
			for _, u := range r.Pin.UUIDs {
				pinned[u] = true
			}
		}
		if r.Type == TypeSystem && r.Subtype == SubtypeCacheTTL && r.CacheTTL != nil && !r.IsSidechain {
			ttl = i
		}
		if ProviderResponse(r) && !r.IsSidechain {
			last = i
			if s := r.Message.StopReason; s != "" && s != "max_tokens" {
				done = i
			}
		}
	}
	responses := map[string]bool{}
	for _, i := range []int{last, done} {
		if i >= 0 {
			responses[pre[i].UUID] = true
		}
	}
	var out []int
	seen := map[string]bool{}
	for i := range pre {
		r := &pre[i]
		keep := i == last || i == done || i == ttl
		if r.Type == TypeSystem {
			switch r.Subtype {
			case SubtypePin, SubtypeRecovery:
				keep = true
			case SubtypeUsage:
				keep = r.LateUsage != nil && responses[r.LateUsage.UUID]
			case SubtypeSnip:
				keep = r.Snip != nil && slices.ContainsFunc(r.Snip.RemovedUUIDs, func(u string) bool { return pinned[u] })
			}
		}
		if u := r.UUID; pinned[u] && !seen[u] {
			seen[u], keep = true, true
		}
		if keep {
			out = append(out, i)
		}
	}
	return out
}

// Refills is the thrash guard's refills h's runs give for thrashTurns: the trailing runs of
// at most thrashTurns responses.
func (h *History) Refills(thrashTurns int) int {
	n := 0
	for i := len(h.Runs) - 1; i >= 0 && h.Runs[i] <= thrashTurns; i-- {
		n++
	}
	return n
}
