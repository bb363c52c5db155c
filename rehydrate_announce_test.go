package agentctx

import (
	"fmt"
	"testing"

	"github.com/agentctx/agentctx/transcript"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The latest announcement of each kind and name before the cut is re-injected, an earlier
// re-injection read back without its wrapper, one the kept tail repeats left out, newest
// first; a budget too small for any leaves none.
func TestRehydrateAnnouncements(t *testing.T) {
	var records []transcript.Record
	add := func(r transcript.Record) {
		r.UUID = fmt.Sprintf("r%d", len(records)+1)
		if len(records) > 0 {
			r.ParentUUID = records[len(records)-1].UUID
		}
		records = append(records, r)
	}
	user := func(text string, a *transcript.Announcement, rh *transcript.Rehydration) {
		add(transcript.Record{Type: transcript.TypeUser, IsMeta: a != nil, Announcement: a, Rehydration: rh,
			Message: &transcript.Message{Role: transcript.RoleUser, StringContent: true, Content: []transcript.Block{&transcript.Text{Text: text}}}})
	}
	answer := func(text string) {
		add(transcript.Record{Type: transcript.TypeAssistant, Message: &transcript.Message{ID: "m" + text, Role: transcript.RoleAssistant, Content: []transcript.Block{&transcript.Text{Text: text}}}})
	}
	tools := &transcript.Announcement{Kind: transcript.AnnounceTools}
	agents := &transcript.Announcement{Kind: transcript.AnnounceAgents}
	user("Start.", nil, nil)
	user("Grep was added.", tools, nil)
	answer("ok")
	user(fmt.Sprintf(announceHead, announceTopic(transcript.AnnounceAgents, ""))+"The reviewer agent is available."+tailNote, agents, &transcript.Rehydration{Kind: transcript.RehydrateAnnouncement, Name: "agents"})
	user("Grep and Glob were added.", tools, nil)
	user("Task 7 is running.", &transcript.Announcement{Kind: transcript.AnnounceTask, Name: "7"}, nil)
	answer("noted")
	user("Task 8 is running.", &transcript.Announcement{Kind: transcript.AnnounceTask, Name: "8"}, nil)
	user("Go on.", nil, nil)

	p, err := New(Config{ContextWindow: 50_000})
	require.NoError(t, err)
	tn, err := p.build(t.Context(), &Input{Records: records})
	require.NoError(t, err)
	defer tn.release()
	cut := len(tn.items) - 1
	for cut > 0 && tn.items[cut].uuid != "r8" { // the kept tail starts at task 8's announcement
		cut--
	}
	require.Equal(t, "r8", tn.items[cut].uuid)
	got := p.compactor.rehydrateAnnouncements(tn, cut, calibration{ratio: 1}, 1_000, 5_000)
	var texts []string
	for _, a := range got {
		assert.Equal(t, transcript.RehydrateAnnouncement, a.kind)
		texts = append(texts, a.skill+": "+a.text[len(fmt.Sprintf(announceHead, announceTopic(a.announce.Kind, a.announce.Name))):len(a.text)-len(tailNote)])
	}
	assert.Equal(t, []string{"task 7: Task 7 is running.", "tools: Grep and Glob were added.", "agents: The reviewer agent is available."}, texts)

	assert.Empty(t, p.compactor.rehydrateAnnouncements(tn, cut, calibration{ratio: 1}, 40, 5_000), "no room for a useful part")
}
