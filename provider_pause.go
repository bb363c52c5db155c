package agentctx

import (
	"cmp"
	"context"
	"slices"
	"strings"

	"github.com/agentctx/agentctx/transcript"
)

// stopCompaction is the stop reason of an answer that paused after the provider's compaction
// (pause_after_compaction).
const stopCompaction = "compaction"

// pausedNote is the text of the record that ends what the library re-injects after a paused
// provider compaction.
const pausedNote = "<system-reminder>\nThe conversation was compacted; what had to survive the compaction has been added again above. Go on with the task from where it stood.\n</system-reminder>"

// pausedView is the view of a turn whose latest answer paused after the provider's
// compaction: its items before the view was started at the compaction block, and the index
// of the answer among them.
type pausedView struct {
	items []item
	at    int
}

// resumePause goes on after an answer that paused after the provider's compaction, as the
// library goes on after its own: the provider's summary stands in for everything before it,
// and the library re-injects what its own compaction would after a summary — the files the
// conversation worked with, re-read; the invoked skills; the plan and the todo list; the
// announcements (see [RehydrateConfig]) — as meta user records after the answer, then a
// record of kind [transcript.RehydratePause] that records the pause as handled and asks the
// model to go on. Pinned records follow (see injectPinned). The records are appended, so a
// resume or a fork builds the same request, and the turn is built again on them; an answer
// the runtime already added something after is left to the runtime.
func (co *compactor) resumePause(ctx context.Context, t *turn) (*turn, error) {
	pv := t.paused
	view := *t
	view.items = pv.items
	atts, notes := co.rehydrate(ctx, &view, pv.at, 1)
	names := rehydratedNames(atts)
	atts = append(atts, attachment{kind: transcript.RehydratePause, text: pausedNote})
	answer := pv.items[pv.at].rec
	recs := attachmentRecords(t, atts, "provider_pause", answer.UUID, answer.UUID, answer.IsSidechain)
	parent := recs[len(recs)-1].UUID
	in := *t.in
	in.Records = slices.Concat(t.in.Records, recs)
	if in.Leaf != "" {
		in.Leaf = parent
	}
	post, err := co.build(ctx, &in)
	if err != nil {
		return t, err
	}
	st := post.report.stage("compact")
	for _, n := range notes {
		st.add(Action{Kind: ActionSkipped, Detail: "rehydration after the provider's paused compaction: " + n})
	}
	st.add(Action{Kind: ActionInjected, UUID: answer.UUID, Record: recs[0].UUID,
		Detail: "the provider's compaction paused: " + cmp.Or(strings.Join(names, ", "), "nothing") + " re-injected after its summary"})
	post.appended = slices.Concat(t.appended, recs, post.appended)
	return post, nil
}
