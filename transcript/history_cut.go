package transcript

import "slices"

// SummarizerSessionMemory is the [CompactMetadata.Summarizer] of a compaction whose summary is
// a session-memory extraction.
const SummarizerSessionMemory = "session_memory"

// Counts reports whether the circuit breaker counts a failed attempt: one of the primary
// summarizer that was called. A summary request the library could not size to fit the window
// (no call made) is the library's failure, not the summarizer's.
func (f *CompactFailure) Counts() bool { return !f.Fallback && f.Attempts > 0 }

// CutHistory returns the history a compaction's boundary carries (see [History]):
// what pre, the records before the boundary's cut in file order, say of leaf's thread, so
// that a later read can stop at the cut. It reads pre the way readHistory and the stages
// read them: the breaker's failures, the boundaries and the responses between them the
// thrash guard counts, for any ThrashTurns up to 7; and it carries the records later turns
// still read: the pins and the records they name, the recovery decisions, the latest
// response of the main thread and the latest that completed, their late usage and the snips
// naming a pinned record. When pre starts from a read that stopped at a cut itself, that
// cut's history is where the walk starts.
func CutHistory(pre []Record, leaf *Record) (*History, error) {
	d := &History{Version: HistoryVersion}
	seen := false
	start := historyStart(pre, leaf)
	skip := 0
	if start != nil {
		d.Compactions, d.Failures = start.Compactions, start.Failures
		d.Runs, d.Open = slices.Clone(start.Runs), slices.Clone(start.Open)
		seen, skip = start.Compactions > 0, min(len(start.Records), len(pre))
	}
	for i := skip; i < len(pre); i++ {
		r := &pre[i]
		if OtherThread(r, leaf) {
			continue
		}
		switch {
		case ProviderResponse(r):
			if id := r.Message.ID; id != "" && len(d.Open) < HistoryResponses && !slices.Contains(d.Open, id) {
				d.Open = append(d.Open, id)
			}
		case r.IsCompactBoundary():
			m := r.CompactMetadata
			manual := m != nil && m.Trigger == TriggerManual
			if manual || !seen || len(d.Open) >= HistoryResponses {
				d.Runs = nil // no refill, whatever ThrashTurns up to 7
			} else {
				d.Runs = append(d.Runs, len(d.Open))
			}
			if manual || m == nil || !m.Fallback && m.Summarizer != SummarizerSessionMemory {
				d.Failures = 0
			}
			d.Compactions++
			seen = true
			d.Open = nil
		case r.Type == TypeSystem && r.Subtype == SubtypeCompactFailure && r.CompactFailure != nil && r.CompactFailure.Trigger != TriggerCollapse:
			switch f := r.CompactFailure; {
			case f.Trigger == TriggerManual:
				d.Failures = 0
			case f.Counts():
				d.Failures++
			}
		}
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
	last, done := -1, -1
	for i := range pre {
		r := &pre[i]
		if r.Type == TypeSystem && r.Subtype == SubtypePin && r.Pin != nil {
			for _, u := range r.Pin.UUIDs {
				pinned[u] = true
			}
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
		keep := i == last || i == done
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

// historyStart returns the history of the first compact boundary of leaf's thread in records
// when a read stopped at its cut ([Record.CutHistory]): the records before the
// cut are not in records, and it stands for them; the read put the records it carries first.
func historyStart(records []Record, leaf *Record) *History {
	for i := range records {
		r := &records[i]
		if r.IsCompactBoundary() && !OtherThread(r, leaf) {
			return r.CutHistory()
		}
	}
	return nil
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
