package agentctx

import (
	"fmt"
	"slices"

	"github.com/agentctx/agentctx/internal/wire"

	"github.com/agentctx/agentctx/transcript"
)

// tidy merges same-role neighbours, applies the per-message rules and drops empty
// messages, until nothing changes. Messages already tidied are left as they are, the rules
// being idempotent; a view with nothing to do costs one look at each message.
func (n *normalizer) tidy(msgs []nmsg) []nmsg {
	if settled(msgs) {
		return msgs
	}
	msgs = merge(msgs)
	for {
		for i := range msgs {
			if !msgs[i].tidied {
				n.tidyMessage(&msgs[i])
				msgs[i].tidied = true
			}
		}
		out := make([]nmsg, 0, len(msgs))
		var carry []nblock // cache_edits of dropped messages, for the next user message
		lastUser := -1     // index in out of its last user message
		dropped := false
		for _, m := range msgs {
			if !hasContent(m) && len(m.lost) > 0 {
				// The blocks that made dropping the unsupported ones safe were removed since
				// (pairing, thinking rules): the placeholder keeps the message.
				nb := m.lost[0]
				n.act(ActionRepaired, nb.uuid, toolID(nb.b), fmt.Sprintf("%s block not accepted in a %s message: replaced by a text placeholder", nb.b.Kind(), m.role), 0)
				m.blocks = append(slices.Clip(m.blocks), nblock{b: &transcript.Text{Text: fmt.Sprintf(unsupportedBlockText, nb.b.Kind())}, uuid: nb.uuid})
				m.lost = nil
				m.tidied = false
			}
			if hasContent(m) {
				if m.role == transcript.RoleUser {
					if len(carry) > 0 {
						m.blocks = append(slices.Clip(m.blocks), carry...)
						m.tidied = false
						carry = nil
					}
					lastUser = len(out)
				}
				out = append(out, m)
				continue
			}
			dropped = true
			if n.suffix && (lastUser < 0 || len(out) == 0) {
				// The whole view would give its cache_edits to the prefix's last user message,
				// or join its neighbours across the prefix's end.
				n.crossed = true
			}
			edits := slices.DeleteFunc(slices.Clone(m.blocks), func(nb nblock) bool { return nb.b.Kind() != transcript.KindCacheEdits })
			uuid := ""
			if len(m.blocks) > 0 {
				uuid = m.blocks[0].uuid
			}
			n.act(ActionDropped, uuid, "", "empty "+string(m.role)+" message", 0)
			if len(edits) == 0 {
				continue
			}
			if lastUser >= 0 {
				out[lastUser].blocks = append(slices.Clip(out[lastUser].blocks), edits...)
				out[lastUser].tidied = false
			} else {
				carry = append(carry, edits...)
			}
		}
		for _, nb := range carry {
			n.drop(nb, "cache_edits block without a user message to carry it")
		}
		msgs = out
		if !dropped {
			return msgs
		}
		msgs = merge(msgs)
	}
}

// merge joins consecutive messages of the same role; msgs is returned as it is when there is
// none. A run of any length costs time linear
// in its blocks: the first join gives the merged message slices of its own (its first
// message's may share their arrays), which later joins append to in place.
func merge(msgs []nmsg) []nmsg {
	if !sameRoleNeighbours(msgs) {
		return msgs
	}
	out := make([]nmsg, 0, len(msgs))
	owned := false // out's last message owns its slices' arrays
	for _, m := range msgs {
		if k := len(out) - 1; k >= 0 && out[k].role == m.role {
			last := &out[k]
			if !owned {
				last.blocks, last.lost = slices.Clip(last.blocks), slices.Clip(last.lost)
				owned = true
			}
			last.blocks = append(last.blocks, m.blocks...)
			last.lost = append(last.lost, m.lost...)
			last.tidied = false
			continue
		}
		out = append(out, m)
		owned = false
	}
	return out
}

// settled reports whether tidy has nothing to do on msgs: every message tidied and holding
// content, and no two neighbours of one role.
func settled(msgs []nmsg) bool {
	for i := range msgs {
		if !msgs[i].tidied || !hasContent(msgs[i]) {
			return false
		}
	}
	return !sameRoleNeighbours(msgs)
}

// sameRoleNeighbours reports whether two consecutive messages have one role.
func sameRoleNeighbours(msgs []nmsg) bool {
	for i := 1; i < len(msgs); i++ {
		if msgs[i-1].role == msgs[i].role {
			return true
		}
	}
	return false
}

// hasContent reports whether a message holds a block that makes it non-empty (cache_edits
// alone do not).
func hasContent(m nmsg) bool {
	for _, nb := range m.blocks {
		if nb.b.Kind() != transcript.KindCacheEdits {
			return true
		}
	}
	return false
}

// tidyMessage applies the rules that look at one message: unsupported blocks, server tool
// pairing and thinking placement. It is idempotent.
func (n *normalizer) tidyMessage(m *nmsg) {
	// Unsupported blocks: a placeholder when nothing else would remain, else dropped.
	if slices.ContainsFunc(m.blocks, func(nb nblock) bool { return nb.bad }) {
		placeholder := !slices.ContainsFunc(m.blocks, func(nb nblock) bool { return !nb.bad && nb.b.Kind() != transcript.KindCacheEdits })
		out := make([]nblock, 0, len(m.blocks))
		for _, nb := range m.blocks {
			switch {
			case !nb.bad:
				out = append(out, nb)
			case placeholder:
				placeholder = false
				n.act(ActionRepaired, nb.uuid, toolID(nb.b), fmt.Sprintf("%s block not accepted in a %s message: replaced by a text placeholder", nb.b.Kind(), m.role), 0)
				out = append(out, nblock{b: &transcript.Text{Text: fmt.Sprintf(unsupportedBlockText, nb.b.Kind())}, uuid: nb.uuid})
			default:
				n.drop(nb, fmt.Sprintf("%s block not accepted in a %s message", nb.b.Kind(), m.role))
				m.lost = append(m.lost, nb)
			}
		}
		m.blocks = out
	}
	if m.role != transcript.RoleAssistant {
		return
	}
	n.pairServerTools(m)
	// 4.4: an assistant message cannot end with thinking.
	for k := len(m.blocks) - 1; k >= 0 && wire.IsThinking(m.blocks[k].b); k-- {
		n.drop(m.blocks[k], "assistant message cannot end with thinking")
		m.blocks = m.blocks[:k]
	}
	// 4.3: thinking comes first (merged responses: in their original order), after the
	// provider's compaction the view starts at (1.6).
	lead := 0
	if len(m.blocks) > 0 && n.t.isPoint(m.blocks[0].b) {
		lead = 1
	}
	if len(m.blocks) > lead && !wire.IsThinking(m.blocks[lead].b) && slices.ContainsFunc(m.blocks, func(nb nblock) bool { return wire.IsThinking(nb.b) }) {
		var think, rest []nblock
		for _, nb := range m.blocks[lead:] {
			if wire.IsThinking(nb.b) {
				think = append(think, nb)
			} else {
				rest = append(rest, nb)
			}
		}
		n.act(ActionRepaired, think[0].uuid, "", fmt.Sprintf("%d thinking blocks moved to the front of a merged assistant message", len(think)), 0)
		m.blocks = slices.Concat(m.blocks[:lead], think, rest)
	}
}
