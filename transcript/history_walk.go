package transcript

import (
	"slices"
	"sort"
)

// SummarizerSessionMemory is the [CompactMetadata.Summarizer] of a compaction whose summary is
// a session-memory extraction.
const SummarizerSessionMemory = "session_memory"

// Counts reports whether the circuit breaker counts a failed attempt: one of the primary
// summarizer that was called. A summary request the library could not size to fit the window
// (no call made) is the library's failure, not the summarizer's.
func (f *CompactFailure) Counts() bool { return !f.Fallback && f.Attempts > 0 }

// CompactionFailure returns the failed compaction attempt r records, or nil: r is a compaction
// failure record of an auto or manual compaction (a collapse's failure is no compaction's).
func (r *Record) CompactionFailure() *CompactFailure {
	if r.Type != TypeSystem || r.Subtype != SubtypeCompactFailure || r.CompactFailure == nil || r.CompactFailure.Trigger == TriggerCollapse {
		return nil
	}
	return r.CompactFailure
}

// HistoryWalk reads the compaction history of one thread record by record, in file order: the
// circuit breaker's failures, the compact boundaries and the thrash guard's runs of responses
// between them. It is the one reading of these rules: [CutHistory] walks the records before a
// cut with it to write a boundary's [History], and the pipeline walks a transcript with it for
// the breaker and the thrash guard of a turn, taking the responses from a [Scan] (see
// [HistoryWalk.Scan]) where it has one. Start one with [StartHistoryWalk].
type HistoryWalk struct {
	// Compactions counts the boundaries walked, and those before the start's cut.
	Compactions int
	// Failures counts the failed attempts of the primary summarizer since its last success or
	// the last manual compaction or attempt.
	Failures int
	// Runs are the counts of distinct responses of the trailing stretches between two auto
	// compactions, oldest first, each below the walk's limit: the thrash guard's refills for
	// a ThrashTurns of limit-1.
	Runs []int
	// Open are the message ids of the responses since the last boundary, at most limit, in
	// the order walked.
	Open []string
	// limit is how many distinct responses of a stretch the walk counts: a stretch of limit
	// or more is no refill.
	limit int
	// seen is true after the thread's first boundary, before the start's cut included.
	seen bool
}

// StartHistoryWalk returns a walk of leaf's thread in records that counts up to limit distinct
// responses between two boundaries, and the position in records it starts from. When a read
// stopped at the cut of the thread's first boundary in records ([Record.CutHistory]), the
// walk starts from that boundary's History, which stands for the records before the cut, and
// after the records it carries, which the read put first and which count for nothing here.
// sc, when it covers records, lists their boundaries (nil: every record is looked at).
func StartHistoryWalk(records []Record, sc *Scan, leaf *Record, limit int) (HistoryWalk, int) {
	start, from, _ := cutStart(records, sc, leaf)
	return historyWalkFrom(start, limit), from
}

// historyWalkFrom returns a walk that counts up to limit distinct responses between two
// boundaries, from start, the history of the cut a read stopped at (nil: none).
func historyWalkFrom(start *History, limit int) HistoryWalk {
	w := HistoryWalk{limit: limit, Open: make([]string, 0, min(limit, HistoryResponses))}
	if start == nil {
		return w
	}
	w.Compactions, w.Failures, w.seen = start.Compactions, start.Failures, start.Compactions > 0
	w.Runs = slices.Clone(start.Runs[len(start.Runs)-start.Refills(limit-1):])
	w.Open = append(w.Open, start.Open[:min(len(start.Open), limit)]...)
	return w
}

// cutStart returns the History of the compact boundary of leaf's thread in records that a
// read stopped at ([Record.CutHistory]), the number of records it carries at the start of
// records, and the boundary's position; nil, 0 and -1 otherwise. It is the boundary marked as
// the cut, not the thread's first in records: another may lie between the kept head and the
// cut (one on a branch the conversation was rewound past). sc, when it covers records, lists
// their boundaries.
func cutStart(records []Record, sc *Scan, leaf *Record) (start *History, from, at int) {
	at = -1
	sc.Each(records, ScanBoundary, func(i int, r *Record) {
		if at < 0 && r.Cut && r.IsCompactBoundary() && !OtherThread(r, leaf) {
			at, start = i, r.CutHistory()
		}
	})
	if start == nil {
		return nil, 0, -1
	}
	return start, min(len(start.Records), len(records)), at
}

// Record walks r: a provider's response counts in the stretch since the last boundary, a
// compact boundary ends it, a failed compaction attempt counts for the breaker; other records
// change nothing. The caller skips the records of other threads.
func (w *HistoryWalk) Record(r *Record) {
	switch {
	case ProviderResponse(r):
		w.response(r)
	case r.IsCompactBoundary():
		w.boundary(r.CompactMetadata)
	case r.CompactionFailure() != nil:
		w.failure(r.CompactFailure)
	}
}

// response counts r's message id in the open stretch, up to the walk's limit.
func (w *HistoryWalk) response(r *Record) {
	if id := r.Message.ID; id != "" && len(w.Open) < w.limit && !slices.Contains(w.Open, id) {
		w.Open = append(w.Open, id)
	}
}

// boundary ends the open stretch at a compact boundary with metadata m. A manual boundary and
// the thread's first start the thrash guard's runs over; an auto one after a stretch of fewer
// than limit responses is a refill, after a longer one starts them over. The breaker's
// failures start over when a person compacted, or when the primary summarizer wrote the
// summary: neither the fallback nor a session-memory extraction did (a boundary without
// metadata is taken as the primary's).
func (w *HistoryWalk) boundary(m *CompactMetadata) {
	manual := m != nil && m.Trigger == TriggerManual
	if manual || !w.seen || len(w.Open) >= w.limit {
		w.Runs = w.Runs[:0]
	} else {
		w.Runs = append(w.Runs, len(w.Open))
	}
	if manual || m == nil || !m.Fallback && m.Summarizer != SummarizerSessionMemory {
		w.Failures = 0
	}
	w.Compactions++
	w.seen = true
	w.Open = w.Open[:0]
}

// failure counts a failed compaction attempt f for the breaker: a manual attempt starts the
// count over, and only the failures that [CompactFailure.Counts] counts add to it.
func (w *HistoryWalk) failure(f *CompactFailure) {
	switch {
	case f.Trigger == TriggerManual:
		w.Failures = 0
	case f.Counts():
		w.Failures++
	}
}

// Scan walks the responses of leaf's thread that sc lists at positions from up to (not
// including) to, as far as the open stretch counts them: the pipeline's way to the responses
// between two boundaries without reading the records between. sc must cover records.
func (w *HistoryWalk) Scan(sc *Scan, records []Record, leaf *Record, from, to int) {
	if !w.seen {
		return // the thread's first boundary starts the runs over, whatever came before
	}
	kinds := threadResponses(leaf)
	for _, k := range [...]scanKind{scanMain, scanSide} {
		if kinds&k.kinds() == 0 {
			continue
		}
		l := sc.pos[k]
		for j := sort.SearchInts(l, from); j < len(l) && l[j] < to && len(w.Open) < w.limit; j++ {
			if r := &records[l[j]]; ProviderResponse(r) && !OtherThread(r, leaf) {
				w.response(r)
			}
		}
	}
}

// Refills is the thrash guard's refills so far: the trailing runs below the walk's limit.
func (w *HistoryWalk) Refills() int { return len(w.Runs) }
