package agentctx

import "github.com/agentctx/agentctx/transcript"

// consProviderCompaction explains what a provider compaction left out: the record the
// Report names holds a compaction that took effect, no later message of the chain holds
// one in an answer, and everything before it (earlier messages, and the blocks before it in
// its own message) is gone by the provider's decision, which the transcript records.
func consProviderCompaction(c *consCheck) {
	uuid := c.res.Report.ProviderCompaction
	if uuid == "" {
		return
	}
	at, idx := -1, -1
	for i, r := range c.msgs {
		if r.rec.UUID != uuid {
			continue
		}
		for k, bl := range r.blocks {
			if transcript.CompactionOf(bl.b) == transcript.CompactionPoint {
				at, idx = i, k
			}
		}
	}
	if at < 0 {
		c.fail("Report.ProviderCompaction names record %s, which holds no compaction that took effect", uuid)
		return
	}
	for _, r := range c.msgs[at+1:] {
		if r.rec.Type != transcript.TypeAssistant {
			continue
		}
		for _, bl := range r.blocks {
			if transcript.CompactionOf(bl.b) == transcript.CompactionPoint {
				c.fail("%s is a later provider compaction than the one the view starts at (%s)", bl, uuid)
			}
		}
	}
	why := "before the provider compaction in record " + uuid
	for _, r := range c.msgs[:at] {
		c.removeRecord(r, byDecision, why)
	}
	for _, bl := range c.msgs[at].blocks[:idx] {
		c.remove(bl, byDecision, why)
	}
}
