package agentctx

import (
	"fmt"
	"slices"
	"strings"

	"github.com/agentctx/agentctx/transcript"
)

// taggable reports whether a view item gets a tag: a user record (not meta, not a compact
// summary, not an interrupt notice) with a non-blank text block or, when results is set, a
// tool_result block.
func taggable(it *item, results bool) bool {
	r := it.rec
	if r == nil || it.role != transcript.RoleUser || it.meta || r.IsMeta || r.IsCompactSummary || r.IsInterruptNotice() {
		return false
	}
	for _, b := range it.blocks {
		if t, ok := b.(*transcript.Text); ok && strings.TrimSpace(t.Text) != "" {
			return true
		}
		if results && b.Kind() == transcript.KindToolResult {
			return true
		}
	}
	return false
}

// tagMessages adds the id tags to the view's user prompts and, when results is set, to its
// user messages of tool results (after the results). Tag lengths are decided over every
// user and assistant record of the transcript (snipped, pre-boundary and other branches
// included), so that [transcript.ResolveTag] finds exactly one record for every tag shown.
func (st *snipStage) tagMessages(t *turn, rep *StageReport, results bool) {
	var uuids []string
	for i := range t.in.Records {
		if r := &t.in.Records[i]; r.IsConversation() {
			uuids = append(uuids, r.UUID)
		}
	}
	tags := transcript.Tags(uuids)
	n, tokens := 0, 0
	for i := range t.items {
		it := &t.items[i]
		if !taggable(it, results) {
			continue
		}
		tag := tags[it.uuid]
		b := &transcript.Text{Text: "[id:" + tag + "]"}
		pos := 0
		for pos < len(it.blocks) && transcript.KindOf(it.blocks[pos]) == transcript.KindToolResult {
			pos++
		}
		it.blocks = slices.Insert(slices.Clip(it.blocks), pos, transcript.Block(b))
		it.owned = true
		n++
		tokens += st.counter.Block(b)
	}
	if n > 0 {
		rep.add(Action{Kind: ActionTagged, Detail: fmt.Sprintf("%d user messages tagged with [id:…]", n), Tokens: tokens})
	}
}
