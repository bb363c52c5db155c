package agentctx

import (
	"fmt"
	"slices"

	"github.com/agentctx/agentctx/provider"

	"github.com/agentctx/agentctx/transcript"
)

// reminderText is the context_efficiency reminder's wording; %d is the growth, rounded.
const reminderText = "<system-reminder>\nYour context has grown by about %d tokens since anything was last removed from it. " +
	"If earlier messages are no longer useful to you (finished explorations, long outputs you have already acted on, attempts that were superseded), " +
	"remove them with the snip tool, naming their [id:…] tags. Keep whatever you may still need.\n</system-reminder>"

// snipOffered reports whether in offers the model the snip tool.
func snipOffered(in *Input) bool {
	return slices.ContainsFunc(in.Tools, func(tl provider.Tool) bool { return tl.Name == SnipToolName })
}

// remind puts the reminders the transcript's reminder records hold after the records they
// follow, then, when on and the view has grown by the reminder step since last (the position
// of the last snip record that removed something) or the last reminder shown, makes a new
// one after the latest input.
func (st *snipStage) remind(t *turn, rep *StageReport, last int, on bool) {
	type shown struct {
		pos int
		rec *transcript.Record
	}
	var found []shown
	t.chain.Scan().Each(t.in.Records, transcript.ScanReminder, func(pos int, r *transcript.Record) {
		if r.Type == transcript.TypeSystem && r.Subtype == transcript.SubtypeReminder && r.Reminder != nil {
			found = append(found, shown{pos, r})
		}
	})
	if len(found) > 0 {
		at := make(map[string]int, len(t.items)) // uuid → index of the item of a record
		for i := range t.items {
			if t.items[i].rec != nil {
				at[t.items[i].uuid] = i
			}
		}
		after := map[int][]item{}
		for _, f := range found {
			i, ok := at[f.rec.Reminder.AfterUUID]
			if !ok {
				continue // compacted away, snipped, or on another branch
			}
			after[i] = append(after[i], reminderItem(f.rec))
			last = max(last, f.pos)
		}
		if len(after) > 0 {
			items := make([]item, 0, len(t.items)+len(found))
			for i := range t.items {
				items = append(items, t.items[i])
				items = append(items, after[i]...)
			}
			t.items = items
		}
	}
	step := st.cfg.reminderStep(st.window)
	if !on || step == 0 || t.in.SkipCacheWrite || len(t.items) == 0 {
		return
	}
	end := &t.items[len(t.items)-1]
	if end.rec == nil || end.role != transcript.RoleUser {
		return
	}
	growth := 0
	for i := range t.items {
		if it := &t.items[i]; it.rec != nil && it.pos > last {
			growth += st.counter.Blocks(it.blocks)
		}
	}
	if growth < step {
		return
	}
	rec := t.newDecision(transcript.SubtypeReminder, transcript.ReminderContextEfficiency+"\x00"+end.uuid,
		"Reminded the model to snip the messages it no longer needs")
	rec.Reminder = &transcript.ReminderDecision{
		Kind:         transcript.ReminderContextEfficiency,
		AfterUUID:    end.uuid,
		Text:         fmt.Sprintf(reminderText, (growth+50)/100*100),
		GrowthTokens: growth,
	}
	t.appended = append(t.appended, rec)
	it := reminderItem(&rec)
	t.items = append(t.items, it)
	rep.add(Action{Kind: ActionReminded, UUID: end.uuid, Record: rec.UUID, Tokens: st.counter.Blocks(it.blocks),
		Detail: fmt.Sprintf("context_efficiency: the view grew by %d tokens since the last snip or reminder (step %d)", growth, step)})
}

// reminderItem is the view item of a reminder record: a meta user message of its text.
func reminderItem(r *transcript.Record) item {
	return item{uuid: transcript.ContentUUID("reminder", r.UUID), pos: -1, role: transcript.RoleUser, meta: true, time: r.Time(),
		blocks: []transcript.Block{&transcript.Text{Text: r.Reminder.Text}}, owned: true, origin: "reminder"}
}
