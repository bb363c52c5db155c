package agentctx

import (
	"fmt"
	"slices"

	"github.com/agentctx/agentctx/transcript"
)

// startAtProviderCompaction starts the view at the latest provider compaction that took
// effect ([transcript.CompactionPoint]): an Anthropic answer that opens with a compaction
// block (compact_20260112), or an OpenAI compaction item (Responses context_management, as a
// Codex rollout records it). The provider reads the conversation from there on and refuses
// a second compaction with content, so the view drops every item before it and the blocks
// before it in its own message; the block itself goes out as it came. The record that holds
// it becomes the turn's boundary position: its answer's usage measured the prompt before
// the compaction, so the pressure figure counts the view from the compaction on rather than
// anchoring on it, and a client compaction waits for a response after it.
//
// A compaction item that a compaction restored with the rest of its history (Codex's
// compacted line: the output of /responses/compact, user messages then the item, which the
// provider says to send whole) is no such point: the compact boundary already starts the
// view. It is told by its place: an item of a user message with no answer between the
// chain's compact boundary and it.
//
// It runs on the chain's items before any stage, so every stage, the count and the
// Report see the same view; a resume or a fork reads the same records and starts at the
// same block.
func (t *turn) startAtProviderCompaction() {
	at, k := -1, 0
	restored := t.chain.Boundary != nil // no answer since the compact boundary so far
	for i := range t.items {
		it := &t.items[i]
		if it.role == transcript.RoleAssistant && it.pos > t.boundaryPos {
			restored = false
		}
		if restored && it.role == transcript.RoleUser {
			continue
		}
		for j := len(it.blocks) - 1; j >= 0; j-- {
			if transcript.CompactionOf(it.blocks[j]) == transcript.CompactionPoint {
				at, k = i, j
				break
			}
		}
	}
	if at < 0 {
		return
	}
	first := t.items[at]
	if at == len(t.items)-1 && first.rec != nil && first.rec.Message.StopReason == stopCompaction {
		t.paused = &pausedView{items: slices.Clone(t.items), at: at}
	}
	t.point = first.blocks[k]
	t.boundaryPos = max(t.boundaryPos, first.pos)
	t.report.ProviderCompaction = first.uuid
	n := copy(t.items, t.items[at:])
	clear(t.items[n:])
	t.items = t.items[:n]
	t.items[0].blocks = t.items[0].blocks[k:]
}

// isPoint reports whether b is the provider compaction the view starts at.
func (t *turn) isPoint(b transcript.Block) bool {
	return t.point != nil && b == t.point
}

// opensWithPoint reports whether the first message opens with the provider compaction the
// view starts at: the provider wants it as the conversation's first block, so no user
// message goes before it (1.3, 1.6).
func (n *normalizer) opensWithPoint(msgs []nmsg) bool {
	return len(msgs) > 0 && len(msgs[0].blocks) > 0 && n.t.isPoint(msgs[0].blocks[0].b)
}

// serverCleared sets pr.ServerCleared from the anchor response's applied context edits and
// returns what the figure's explanation says of them ("" when none).
func serverCleared(pr *Pressure, anchor *transcript.Record) string {
	if anchor == nil {
		return ""
	}
	pr.ServerCleared = anchor.Message.ClearedInputTokens()
	if pr.ServerCleared == 0 {
		return ""
	}
	return fmt.Sprintf("; the provider's context editing cleared %d tokens of its prompt, which the request still holds", pr.ServerCleared)
}
