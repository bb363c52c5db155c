package agentctx

import "github.com/agentctx/agentctx/transcript"

// The view may only be cut where no two items on either side belong together. Two items belong
// together when they share a tie key: a tool_use and its tool_result ("t:"+id), a server tool
// call and its result ("s:"+id), or two records of one split assistant response ("m:"+message
// id). Collapse widens spans with these keys, compaction cuts its kept tail and drops rounds
// with them; snip closes its removals over the pairing part (pairKeys).

// tieKeys returns the keys that tie a view item to others: its pairing keys and, for an
// assistant record, its message id.
func tieKeys(it *item) []string {
	keys := pairKeys(it.blocks, it.role)
	if it.role == transcript.RoleAssistant && it.msgID != "" {
		keys = append(keys, "m:"+it.msgID)
	}
	return keys
}

// safeCuts reports, for each index i in [0, len(items)], whether the view may be cut before
// items[i]: no tie key is held both by an item before i and by one at or after it. Cuts at 0
// and len(items) are always safe. It runs in time linear in the items and their keys.
func safeCuts(items []item) []bool {
	keys := make([][]string, len(items))
	last := map[string]int{}
	for i := range items {
		keys[i] = tieKeys(&items[i])
		for _, k := range keys[i] {
			last[k] = i
		}
	}
	ok := make([]bool, len(items)+1)
	reach := -1 // the furthest item tied to an item before the cut
	for i := range items {
		ok[i] = reach < i
		for _, k := range keys[i] {
			reach = max(reach, last[k])
		}
	}
	ok[len(items)] = true
	return ok
}
