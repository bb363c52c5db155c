package simulate

import (
	"fmt"

	"github.com/agentctx/agentctx/transcript"
)

// The replay modes of [Options.Replay].
const (
	// ReplayFile replays the file as it is: its own compactions stay, and the policy compacts
	// on top of them. It answers "what would this policy have done to the session as it ran".
	ReplayFile = "file"
	// ReplayPolicy replays the conversation without the file's compactions: from the first
	// record, compacting only where the policy decides. It answers "what would this policy
	// have cost".
	ReplayPolicy = "policy"
)

// policyRecords returns the records a replay under the policy alone reads: the file's records
// without what a context policy wrote into the file — each compact boundary (Claude Code's and
// the library's) and microcompact boundary, the compaction summaries and the files and skills
// a compaction of the library re-read after them (rehydration records), and the library's
// decision records that a policy makes (tool-result budget replacements, microcompact
// clearings, collapse commits, compaction failures, recovery rungs). Snip and pin records stay:
// the model or the user asked for them, not the policy. A record whose parent was left out is
// linked to what that parent stood for: a boundary to the conversation it compacted (its
// logicalParentUuid), any other record to its own parent, so the conversation reads on from
// before the file's compaction; a compaction's preserved segment is then the plain
// conversation it was before the boundary relinked it. records are not modified.
//
// A manual compaction (trigger "manual": the user asked for it) is no decision of the policy's:
// manual holds where each stood among the records returned (the index of the first record
// after it), and the replay compacts there with the policy's summarizer.
func policyRecords(records []transcript.Record) (out []transcript.Record, manual []int) {
	dropped := map[string]string{} // a left-out record's uuid → the parent it stood for
	for i := range records {
		r := &records[i]
		if !leftOut(r) {
			continue
		}
		to := r.ParentUUID
		if r.IsCompactBoundary() && r.LogicalParentUUID != "" {
			to = r.LogicalParentUUID
		}
		if r.UUID != "" {
			dropped[r.UUID] = to
		}
	}
	out = make([]transcript.Record, 0, len(records))
	for i := range records {
		r := records[i]
		if leftOut(&r) {
			if m := r.CompactMetadata; r.IsCompactBoundary() && !r.IsSidechain && m != nil && m.Trigger == "manual" {
				manual = append(manual, len(out))
			}
			continue
		}
		for steps := 0; steps <= len(dropped); steps++ {
			to, ok := dropped[r.ParentUUID]
			if !ok || r.ParentUUID == "" {
				break
			}
			r.ParentUUID = to
		}
		out = append(out, r)
	}
	return out, manual
}

// leftOut reports whether a replay under the policy leaves the record out (see
// [policyRecords]).
func leftOut(r *transcript.Record) bool {
	switch {
	case r.IsCompactBoundary(), r.Type == transcript.TypeSystem && r.Subtype == transcript.SubtypeMicrocompactBoundary:
		return true
	case r.IsCompactSummary, r.Rehydration != nil:
		return true
	case r.IsDecision():
		return r.Subtype != transcript.SubtypeSnip && r.Subtype != transcript.SubtypePin
	}
	return false
}

// fileCompactions counts the compact boundaries of the file's main conversation.
func fileCompactions(records []transcript.Record) int {
	n := 0
	for i := range records {
		if r := &records[i]; r.IsCompactBoundary() && !r.IsSidechain {
			n++
		}
	}
	return n
}

// checkReplay returns an error naming a replay mode that is neither "", [ReplayFile] nor
// [ReplayPolicy].
func checkReplay(mode string) error {
	switch mode {
	case "", ReplayFile, ReplayPolicy:
		return nil
	}
	return fmt.Errorf("simulate: Options.Replay %q: want %q or %q", mode, ReplayFile, ReplayPolicy)
}
