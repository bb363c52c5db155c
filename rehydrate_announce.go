package agentctx

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/agentctx/agentctx/transcript"
)

// announceHead opens a re-injected announcement; the %s says what it is about.
const announceHead = "<system-reminder>\nThe conversation was compacted. Earlier in it you were told of %s; that still holds, as follows.\n\n"

// announceTopic says what an announcement of kind and name is about, for announceHead.
func announceTopic(kind, name string) string {
	var topic string
	switch kind {
	case transcript.AnnounceTools:
		topic = "changes to your tools since the session started"
	case transcript.AnnounceMCP:
		topic = "changes to the MCP servers and their instructions"
	case transcript.AnnounceAgents:
		topic = "changes to the agents you can start"
	case transcript.AnnounceTask:
		topic = "the state of a background task"
	default:
		topic = "a change of kind " + kind
	}
	if name != "" {
		topic += " (" + name + ")"
	}
	return topic
}

// rehydrateAnnouncements re-injects the latest announcement of each kind and name (see
// [transcript.Announcement]) that the summary covers and the kept tail does not repeat,
// newest first, each within each calibrated tokens and all within total.
func (co *compactor) rehydrateAnnouncements(t *turn, cut int, cal calibration, each, total int) []attachment {
	type found struct {
		at   int
		a    transcript.Announcement
		text string
	}
	latest := map[transcript.Announcement]found{}
	for i := range t.items {
		it := &t.items[i]
		r := it.rec
		if r == nil || r.Announcement == nil || it.role != transcript.RoleUser {
			continue
		}
		a := *r.Announcement
		text := transcript.TextOf(it.blocks)
		if r.Rehydration != nil { // re-injected earlier: strip the wrapper
			text = strings.TrimSuffix(strings.TrimPrefix(text, fmt.Sprintf(announceHead, announceTopic(a.Kind, a.Name))), tailNote)
		}
		if i >= cut {
			latest[a] = found{at: -1} // in the kept tail: the model sees it there
			continue
		}
		latest[a] = found{at: i, a: a, text: text}
	}
	order := make([]found, 0, len(latest))
	for _, f := range latest {
		if f.at >= 0 && strings.TrimSpace(f.text) != "" {
			order = append(order, f)
		}
	}
	slices.SortFunc(order, func(x, y found) int {
		return cmp.Or(cmp.Compare(y.at, x.at), strings.Compare(x.a.Kind, y.a.Kind), strings.Compare(x.a.Name, y.a.Name))
	})
	var out []attachment
	used := 0
	for _, f := range order {
		head := fmt.Sprintf(announceHead, announceTopic(f.a.Kind, f.a.Name))
		room := min(each, total-used) - cal.scale(co.counter.Text(head+tailNote))
		body, n := co.fitText(f.text, room, cal)
		if body == "" {
			continue
		}
		used += n
		a := f.a
		out = append(out, attachment{kind: transcript.RehydrateAnnouncement, skill: strings.TrimSpace(a.Kind + " " + a.Name), announce: &a, text: head + body + tailNote})
	}
	return out
}
