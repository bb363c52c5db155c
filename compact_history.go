package agentctx

import (
	"github.com/agentctx/agentctx/transcript"
)

// compactHistory is what a transcript says about the past compactions of one thread: the
// circuit breaker's and the thrash guard's state, computed from records only, so that it
// survives a restart and a fork.
type compactHistory struct {
	// failures is the number of consecutive failed attempts of the primary summarizer on auto
	// trigger, since its last success or the last manual compaction (see counts).
	failures int
	// compactions is the number of compact boundaries of the thread up to the chain's.
	compactions int
	// refills is the length of the trailing run of auto compactions each made within
	// thrashTurns responses of the one before.
	refills int
	// last is the chain's boundary, or nil.
	last *transcript.Record
	// failedHere is true when an auto attempt on the leaf itself failed, after the boundary.
	failedHere bool
}

// readHistory walks records in file order for the compactions and failed attempts of the
// leaf's thread (see [transcript.HistoryWalk]), up to the chain's boundary (boundaryIdx; -1
// without one) for boundaries. sc, when it covers records, lists the boundaries, failures and
// responses (nil: every record is read); the responses between two boundaries are then counted
// only as far as the thrash guard needs.
func readHistory(records []transcript.Record, sc *transcript.Scan, leaf *transcript.Record, boundaryIdx, thrashTurns int) compactHistory {
	var h compactHistory
	indexed := sc.Covers(records)
	// from: the first position whose responses count (indexed: for the next boundary).
	w, from := transcript.StartHistoryWalk(records, sc, leaf, thrashTurns+1)
	sc.Each(records, transcript.ScanBoundary|transcript.ScanFailure, func(i int, r *transcript.Record) {
		switch {
		case transcript.OtherThread(r, leaf), i < from && transcript.ProviderResponse(r), i > boundaryIdx && r.IsCompactBoundary():
			return
		case r.IsCompactBoundary():
			if indexed {
				w.Scan(sc, records, leaf, from, i)
				from = i + 1
			}
			h.last = r
		}
		if f := r.CompactionFailure(); f != nil && leaf != nil && f.LeafUUID == leaf.UUID && f.Trigger == transcript.TriggerAuto && i > boundaryIdx {
			h.failedHere = true
		}
		w.Record(r)
	})
	h.failures, h.compactions, h.refills = w.Failures, w.Compactions, w.Refills()
	return h
}

// CompactState is what a transcript says about its conversation's compactions: the circuit
// breaker's and the thrash guard's state, as [Pipeline.Prepare] would find them. See
// [CompactConfig].
type CompactState struct {
	// Compactions counts the compact boundaries of the conversation's thread.
	Compactions int
	// Last is the latest compact boundary on the conversation's chain, or nil.
	Last *transcript.Record
	// ConsecutiveFailures counts the failed attempts of the primary summarizer on auto-compact
	// since it last succeeded or a manual compaction ran; BreakerOpen is true when they reached
	// the limit.
	ConsecutiveFailures int
	BreakerOpen         bool
	// Refills is the trailing run of auto compactions each made soon after the one before;
	// Thrash is true when it reached the limit and auto-compact stands still.
	Refills int
	Thrash  bool
}

// CompactState reads the compaction state of the conversation in records (leaf as in
// [Input.Leaf]). It does not modify records.
func (p *Pipeline) CompactState(records []transcript.Record, leaf string) (CompactState, error) {
	chain, err := transcript.BuildChain(records, transcript.ChainOptions{Leaf: leaf, NoBridge: p.cfg.NoBridge})
	if err != nil {
		return CompactState{}, err
	}
	c := p.cfg.Compact
	h := readHistory(records, chain.Scan(), chain.Leaf, chain.BoundaryIndex(), c.thrashTurns())
	return CompactState{
		Compactions: h.compactions, Last: h.last,
		ConsecutiveFailures: h.failures, BreakerOpen: h.failures >= c.maxFailures(),
		Refills: h.refills, Thrash: h.refills >= c.thrashRuns(),
	}, nil
}
