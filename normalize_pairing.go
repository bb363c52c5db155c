package agentctx

import (
	"slices"

	"github.com/agentctx/agentctx/transcript"
)

// pairServerTools keeps each server_tool_use with the first server tool result after it in
// the same message, and drops unpaired ones (2.7).
func (n *normalizer) pairServerTools(m *nmsg) {
	if !slices.ContainsFunc(m.blocks, isServerTool) {
		return
	}
	uses := map[string]int{} // id → block index
	paired := map[string]bool{}
	drop := map[int]string{}
	for k, nb := range m.blocks {
		switch b := nb.b.(type) {
		case *transcript.ServerToolUse:
			if _, dup := uses[b.ID]; dup {
				drop[k] = "duplicate server_tool_use id"
				continue
			}
			uses[b.ID] = k
		case *transcript.ServerToolResult:
			if _, ok := uses[b.ToolUseID]; !ok || paired[b.ToolUseID] {
				drop[k] = string(b.Type) + " without a server_tool_use before it in the same message"
				continue
			}
			paired[b.ToolUseID] = true
		}
	}
	for id, k := range uses {
		if !paired[id] {
			drop[k] = "server_tool_use without its result in the same message"
		}
	}
	if len(drop) == 0 {
		return
	}
	out := make([]nblock, 0, len(m.blocks))
	for k, nb := range m.blocks {
		if why, ok := drop[k]; ok {
			n.drop(nb, why)
			continue
		}
		out = append(out, nb)
	}
	m.blocks = out
}

// dedupToolUses keeps the first tool_use of each id and drops later ones (2.5). Their
// results are left to pair, which drops them unless the kept tool_use has none. The same
// holds for server_tool_use ids across messages (pairServerTools has already deduplicated
// them within one); the dropped use's result is then dropped by pairServerTools.
func (n *normalizer) dedupToolUses(msgs []nmsg) []nmsg {
	seen := n.sc.seen       // tool_use ids
	srvSeen := n.sc.srvSeen // server_tool_use ids
	for i := range msgs {
		if msgs[i].role != transcript.RoleAssistant {
			continue
		}
		var out []nblock
		for k, nb := range msgs[i].blocks {
			var ids map[string]bool
			var id, why string
			switch b := nb.b.(type) {
			case *transcript.ToolUse:
				ids, id, why = seen, b.ID, "duplicate tool_use id"
			case *transcript.ServerToolUse:
				ids, id, why = srvSeen, b.ID, "duplicate server_tool_use id"
			}
			if ids == nil || !ids[id] {
				if ids != nil {
					ids[id] = true
				}
				if out != nil {
					out = append(out, nb)
				}
				continue
			}
			if out == nil {
				out = append(make([]nblock, 0, len(msgs[i].blocks)), msgs[i].blocks[:k]...)
			}
			n.drop(nb, why)
		}
		if out != nil {
			msgs[i].blocks = out
			msgs[i].tidied = false
		}
	}
	return msgs
}

// pair enforces tool_use/tool_result pairing between each assistant message and the next
// (2.1, 2.2) and puts the results first in their message (2.3). It reports whether it moved,
// dropped or synthesized anything.
func (n *normalizer) pair(msgs []nmsg) ([]nmsg, bool) {
	if paired(msgs) {
		return msgs, false
	}
	useAt := map[string]int{} // tool_use id → assistant message index
	for i, m := range msgs {
		if m.role == transcript.RoleAssistant {
			for _, nb := range m.blocks {
				if tu, ok := nb.b.(*transcript.ToolUse); ok {
					useAt[tu.ID] = i
				}
			}
		}
	}
	// Results by the assistant message they answer; unplaced ones are candidates to move.
	type loc struct{ msg, blk int }
	answers := map[int]map[string]nblock{}
	answer := func(k int, id string, nb nblock) {
		if answers[k] == nil {
			answers[k] = map[string]nblock{}
		}
		answers[k][id] = nb
	}
	var misplaced []loc
	candidates := map[string]int{}
	changed := false
	for j, m := range msgs {
		if m.role != transcript.RoleUser {
			continue
		}
		for k, nb := range m.blocks {
			tr, ok := nb.b.(*transcript.ToolResult)
			if !ok {
				continue
			}
			at, used := useAt[tr.ToolUseID]
			switch {
			case !used:
				n.drop(nb, "tool_result without a tool_use")
				changed = true
			case at == j-1:
				if _, dup := answers[at][tr.ToolUseID]; dup {
					n.drop(nb, "duplicate tool_result")
					changed = true
					continue
				}
				answer(at, tr.ToolUseID, nb)
			default:
				misplaced = append(misplaced, loc{j, k})
				candidates[tr.ToolUseID]++
			}
		}
	}
	for _, l := range misplaced {
		nb := msgs[l.msg].blocks[l.blk]
		id := nb.b.(*transcript.ToolResult).ToolUseID
		at := useAt[id]
		changed = true
		switch _, has := answers[at][id]; {
		case has:
			n.drop(nb, "tool_result away from its tool_use, which already has a result")
		case candidates[id] > 1:
			n.drop(nb, "tool_result away from its tool_use, and not the only one: ambiguous")
		default:
			n.act(ActionRepaired, nb.uuid, id, "tool_result moved to the message after its tool_use", 0)
			answer(at, id, nb)
		}
	}
	// Rebuild: each assistant message with tool_use blocks is followed by a user message
	// that opens with exactly their results, in their order.
	out := make([]nmsg, 0, len(msgs)+1)
	for i := 0; i < len(msgs); i++ {
		m := msgs[i]
		if m.role == transcript.RoleUser {
			out = append(out, nmsg{role: transcript.RoleUser, blocks: withoutResults(m.blocks), lost: m.lost})
			continue
		}
		out = append(out, m)
		var results []nblock
		for _, nb := range m.blocks {
			tu, ok := nb.b.(*transcript.ToolUse)
			if !ok {
				continue
			}
			if r, ok := answers[i][tu.ID]; ok {
				results = append(results, r)
				continue
			}
			n.act(ActionRepaired, nb.uuid, tu.ID, "tool_use without a tool_result: synthesized an error result", 0)
			changed = true
			results = append(results, nblock{b: &transcript.ToolResult{ToolUseID: tu.ID, Content: []transcript.Block{&transcript.Text{Text: interruptedResultText}}, StringContent: true, IsError: true}})
		}
		if len(results) == 0 {
			continue
		}
		if i+1 < len(msgs) && msgs[i+1].role == transcript.RoleUser {
			next := msgs[i+1].blocks
			if k := slices.IndexFunc(next, func(nb nblock) bool { return nb.b.Kind() != transcript.KindToolResult }); k >= 0 &&
				slices.ContainsFunc(next[k:], func(nb nblock) bool { return nb.b.Kind() == transcript.KindToolResult }) {
				n.act(ActionRepaired, next[k].uuid, "", "tool_result blocks moved before the other content of their message", 0)
			}
			out = append(out, nmsg{role: transcript.RoleUser, blocks: append(results, withoutResults(next)...), lost: msgs[i+1].lost})
			i++
			continue
		}
		n.act(ActionRepaired, m.blocks[0].uuid, "", "inserted a user message for the tool results of an assistant message", 0)
		changed = true
		out = append(out, nmsg{role: transcript.RoleUser, blocks: results})
	}
	return out, changed
}

// isServerTool reports whether nb holds a server_tool_use or a server tool result.
func isServerTool(nb nblock) bool {
	switch nb.b.(type) {
	case *transcript.ServerToolUse, *transcript.ServerToolResult:
		return true
	}
	return false
}

// paired reports whether pair has nothing to do on msgs: each user message opens with the
// results of the tool_use blocks of the assistant message before it, one each and in their
// order, and holds no other tool_result; each assistant message with tool_use blocks has a
// user message after it. pair keeps such messages as they are and reports nothing. The
// tool_use ids are unique across the messages (dedupToolUses ran), so a result that answers
// the message before it answers no other.
func paired(msgs []nmsg) bool {
	var uses []nblock // blocks of the previous message when it is an assistant message
	for i := range msgs {
		m := &msgs[i]
		if m.role == transcript.RoleAssistant {
			if uses != nil && hasToolUse(uses) {
				return false // its results would need a user message of their own
			}
			uses = m.blocks
			continue
		}
		k := 0 // results matched so far
		for _, u := range uses {
			tu, ok := u.b.(*transcript.ToolUse)
			if !ok {
				continue
			}
			if k >= len(m.blocks) {
				return false
			}
			if tr, ok := m.blocks[k].b.(*transcript.ToolResult); !ok || tr.ToolUseID != tu.ID {
				return false
			}
			k++
		}
		for _, nb := range m.blocks[k:] {
			if nb.b.Kind() == transcript.KindToolResult {
				return false
			}
		}
		uses = nil
	}
	return uses == nil || !hasToolUse(uses)
}

// hasToolUse reports whether nbs holds a tool_use block.
func hasToolUse(nbs []nblock) bool {
	return slices.ContainsFunc(nbs, func(nb nblock) bool {
		_, ok := nb.b.(*transcript.ToolUse)
		return ok
	})
}

func withoutResults(bs []nblock) []nblock {
	return slices.DeleteFunc(slices.Clone(bs), func(nb nblock) bool { return nb.b.Kind() == transcript.KindToolResult })
}
