package agentctx

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentctx/agentctx/transcript"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLateUsage: a response recorded without usage, then its usage as a record of its own,
// anchors the pressure figure as the same usage on the response's record does, with the same
// request bytes; the usage record survives a round trip through JSON, and NewUsage refuses
// what it cannot attach.
func TestLateUsage(t *testing.T) {
	build := func(withUsage bool) (*tk, string) {
		k := newTK()
		var last string
		for i := range 4 {
			k.user(fmt.Sprintf("question %d %s", i, strings.Repeat("context ", 200)))
			a := k.assistant(text(fmt.Sprintf("answer %d", i)))
			a.Message.ID = fmt.Sprintf("msg_%d", i)
			a.Message.Usage = nil // a host's answer, written before its usage is known
			if withUsage {
				a.Message.Usage = &transcript.Usage{InputTokens: 3_000 * (i + 1), OutputTokens: 50}
			}
			last = a.UUID
		}
		k.user("and now?")
		return k, last
	}
	withUsage, _ := build(true)
	late, lastUUID := build(false)
	// A host's step hook learns each usage after writing the answer.
	for i := range 4 {
		uuid := late.recs[2*i+1].UUID
		r, err := NewUsage(late.recs, uuid, transcript.Usage{InputTokens: 3_000 * (i + 1), OutputTokens: 50}, late.at(0))
		require.NoError(t, err)
		late.decision(r)
	}
	p := newTestPipeline(t, Config{Model: "claude-sonnet-4-5"}, late.at(0))
	want, err := p.Prepare(t.Context(), Input{Records: withUsage.recs})
	require.NoError(t, err)
	got, err := p.Prepare(t.Context(), Input{Records: late.recs})
	require.NoError(t, err)
	require.NotZero(t, want.Report.Pressure.Anchor)
	assert.Equal(t, want.Report.Pressure.Anchor, got.Report.Pressure.Anchor)
	assert.Equal(t, lastUUID, got.Report.Pressure.AnchorUUID)
	assert.Equal(t, want.Report.AnchoredTokens, got.Report.AnchoredTokens)
	assert.Equal(t, string(requestBytes(t, want.Request)), string(requestBytes(t, got.Request)), "the usage record changes no byte")

	again, err := p.Prepare(t.Context(), Input{Records: roundTrip(t, late.recs)})
	require.NoError(t, err)
	assert.Equal(t, got.Report.Pressure, again.Report.Pressure, "read back from JSON")
	steady, err := p.Prepare(t.Context(), Input{Records: late.recs})
	require.NoError(t, err)
	assert.Equal(t, got.Report.Pressure, steady.Report.Pressure, "a steady turn")

	// The copies are made once: a steady turn's chain holds the same copy of the anchor.
	chainOf := func() *transcript.Chain {
		c, err := p.chains.Build(late.recs, transcript.ChainOptions{})
		require.NoError(t, err)
		return p.late.apply(late.recs, c)
	}
	a, b := chainOf(), chainOf()
	last := len(a.Records) - 2 // the answer before the last prompt
	require.Equal(t, lastUUID, a.Records[last].UUID)
	assert.Same(t, a.Records[last], b.Records[last])
	assert.NotSame(t, &late.recs[a.Index(last)], a.Records[last], "a copy, not the caller's record")
	assert.Equal(t, 12_050, a.Records[last].Message.Usage.Total())
	assert.Nil(t, late.recs[a.Index(last)].Message.Usage, "the caller's record is untouched")

	u := transcript.Usage{InputTokens: 10}
	for _, tt := range []struct {
		name, uuid string
		usage      transcript.Usage
		want       string
	}{
		{"no such record", "nope", u, "no record"},
		{"a user record", late.recs[0].UUID, u, "not an assistant"},
		{"already attached", lastUUID, u, "attached already"},
		{"holds its own", withUsage.recs[1].UUID, u, "of its own"},
		{"empty", lastUUID, transcript.Usage{}, "no tokens"},
	} {
		recs := late.recs
		if tt.name == "holds its own" {
			recs = withUsage.recs
		}
		_, err := NewUsage(recs, tt.uuid, tt.usage, time.Time{})
		assert.ErrorContains(t, err, tt.want, tt.name)
	}
}
