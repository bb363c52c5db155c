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

// readHistory scans records in file order for the compactions and failed attempts of the
// leaf's thread, up to the chain's boundary (boundaryIdx; -1 without one) for boundaries. sc,
// when it covers records, lists the boundaries, failures and responses (nil: every record is
// read); the responses between two boundaries are then counted only as far as the thrash
// guard needs.
func readHistory(records []transcript.Record, sc *transcript.Scan, leaf *transcript.Record, boundaryIdx, thrashTurns int) compactHistory {
	var h compactHistory
	responses := map[string]bool{}
	seenBoundary := false
	indexed := sc.Covers(records)
	from := 0 // indexed: the first position whose responses the next boundary counts
	// A read that stopped at a boundary's cut left the records before it out: its history
	// stands for them, and the records it carries, first in records, count for nothing here.
	var start *transcript.History
	first := true
	sc.Each(records, transcript.ScanBoundary, func(_ int, r *transcript.Record) {
		if first && r.IsCompactBoundary() && !transcript.OtherThread(r, leaf) {
			first, start = false, r.CutHistory()
		}
	})
	if start != nil {
		h.compactions, h.failures = start.Compactions, start.Failures
		h.refills = start.Refills(thrashTurns)
		seenBoundary = start.Compactions > 0
		for _, id := range start.Open {
			responses[id] = true
		}
		from = min(len(start.Records), len(records))
	}
	sc.Each(records, transcript.ScanBoundary|transcript.ScanFailure, func(i int, r *transcript.Record) {
		if transcript.OtherThread(r, leaf) {
			return
		}
		switch {
		case transcript.ProviderResponse(r):
			if i < from {
				return
			}
			if id := r.Message.ID; id != "" {
				responses[id] = true
			}
		case r.IsCompactBoundary() && i <= boundaryIdx:
			if indexed {
				if seenBoundary {
					sc.ResponseIDs(records, leaf, from, i, thrashTurns+1, responses)
				}
				from = i + 1
			}
			m := r.CompactMetadata
			manual := m != nil && m.Trigger == transcript.TriggerManual
			switch {
			case manual:
				h.refills = 0
			case seenBoundary && len(responses) <= thrashTurns:
				h.refills++
			default:
				h.refills = 0
			}
			if manual || m == nil || !m.Fallback && m.Summarizer != summarizerSessionMemory {
				h.failures = 0 // the primary summarizer succeeded, or a person compacted
			}
			h.compactions++
			h.last = r
			seenBoundary = true
			clear(responses)
		case r.Type == transcript.TypeSystem && r.Subtype == transcript.SubtypeCompactFailure && r.CompactFailure != nil && r.CompactFailure.Trigger != transcript.TriggerCollapse:
			f := r.CompactFailure
			if leaf != nil && f.LeafUUID == leaf.UUID && f.Trigger == transcript.TriggerAuto && i > boundaryIdx {
				h.failedHere = true
			}
			switch {
			case f.Trigger == transcript.TriggerManual:
				h.failures = 0
			case f.Counts():
				h.failures++
			}
		}
	})
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
