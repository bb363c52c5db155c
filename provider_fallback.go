package agentctx

import (
	"slices"

	"github.com/agentctx/agentctx/transcript"
)

// summarizerProvider names the provider's own compaction in a failure record.
const summarizerProvider = "provider"

// serverFailure returns the view's latest answer when it holds a provider compaction that
// failed (a compaction block with null content: the provider passed its trigger, tried, and
// wrote no summary), or nil. Only the latest answer counts: an answer after it means the
// conversation went on.
func serverFailure(t *turn) *transcript.Record {
	for i := len(t.items) - 1; i >= 0; i-- {
		it := &t.items[i]
		if it.role != transcript.RoleAssistant || it.rec == nil {
			continue
		}
		if slices.ContainsFunc(it.blocks, func(b transcript.Block) bool {
			return transcript.CompactionOf(b) == transcript.CompactionFailed
		}) {
			return it.rec
		}
		return nil
	}
	return nil
}

// recordServerFailure writes, once per failed answer, the failure record of the provider's
// compaction that answer reports, so that the circuit breaker counts it with the library's
// own failures; it returns whether it wrote one. The library then compacts in its place.
func (co *compactor) recordServerFailure(t *turn, answer *transcript.Record) bool {
	f := transcript.CompactFailure{
		Trigger: transcript.TriggerAuto, Summarizer: summarizerProvider, Attempts: 1, PreTokens: t.report.Pressure.Tokens,
		LeafUUID: answer.UUID,
		Reason:   "the provider's compaction in answer " + answer.UUID + " wrote no summary (its compaction block has null content): the library compacts in its place",
	}
	r := t.newDecision(transcript.SubtypeCompactFailure, summarizerProvider+"\x00"+answer.UUID, "Compaction failed: "+f.Reason)
	if slices.ContainsFunc(t.in.Records, func(x transcript.Record) bool { return x.UUID == r.UUID }) {
		return false // recorded on an earlier turn: readHistory counted it
	}
	r.IsSidechain = t.chain.Leaf != nil && t.chain.Leaf.IsSidechain
	r.CompactFailure = &f
	t.appended = append(t.appended, r)
	return true
}
