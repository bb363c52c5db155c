package agentctx

// Compaction triggers, as Claude Code writes them in compactMetadata.trigger.
const (
	TriggerAuto   = "auto"
	TriggerManual = "manual"
)

// compactHistory is what a transcript says about the past compactions of one thread: the
// circuit breaker's and the thrash guard's state, computed from records only, so that it
// survives a restart and a fork.
type compactHistory struct {
	// failures is the number of consecutive failed attempts of the primary summarizer on auto
	// trigger, since its last success or the last manual compaction.
	failures int
	// compactions is the number of compact boundaries of the thread up to the chain's.
	compactions int
	// refills is the length of the trailing run of auto compactions each made within
	// thrashTurns responses of the one before.
	refills int
	// last is the chain's boundary, or nil.
	last *Record
}

// readHistory scans records in file order for the compactions and failed attempts of the
// leaf's thread, up to the chain's boundary (boundaryIdx; -1 without one) for boundaries.
func readHistory(records []Record, leaf *Record, boundaryIdx, thrashTurns int) compactHistory {
	var h compactHistory
	responses := map[string]bool{}
	seenBoundary := false
	for i := range records {
		r := &records[i]
		if otherThread(r, leaf) {
			continue
		}
		switch {
		case r.Type == TypeAssistant && r.Message != nil && !r.IsAPIErrorMessage && r.Message.Model != SyntheticModel:
			if id := r.Message.ID; id != "" {
				responses[id] = true
			}
		case r.IsCompactBoundary() && i <= boundaryIdx:
			m := r.CompactMetadata
			manual := m != nil && m.Trigger == TriggerManual
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
		case r.Type == TypeSystem && r.Subtype == SubtypeCompactFailure && r.CompactFailure != nil:
			f := r.CompactFailure
			switch {
			case f.Trigger == TriggerManual:
				h.failures = 0
			case !f.Fallback:
				h.failures++
			}
		}
	}
	return h
}
