package agentctx_test

import (
	"testing"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/testkit"
	"github.com/agentctx/agentctx/transcript"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A 60-turn session run live: before each response the turn is prepared and its records are
// appended. The budget writes a record only for a turn that replaces something, and a record
// lists only replaced results.
func TestBudgetLiveSessionRecords(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 30, 0, 0, time.UTC)
	for _, budget := range []agentctx.BudgetConfig{
		{Store: &agentctx.MapStore{}}, // the default caps: the generated results fit
		{MaxResultChars: 5000, MaxMessageChars: 10_000, PreviewBytes: 500, Store: &agentctx.MapStore{}},
	} {
		p, err := agentctx.New(agentctx.Config{Model: "claude-sonnet-4-5", Tokens: agentctx.EstimateCounter{},
			Microcompact: agentctx.MicrocompactConfig{Disable: true}, Budget: budget, Now: func() time.Time { return now }})
		require.NoError(t, err)
		var live []transcript.Record
		records, replacingTurns, lastMsgID := 0, 0, ""
		for _, r := range testkit.Generate(60, testkit.Options{Seed: 1}) {
			if m := r.Message; r.Type == transcript.TypeAssistant && m.ID != lastMsgID {
				lastMsgID = m.ID
				res, err := p.Prepare(t.Context(), agentctx.Input{Records: live})
				require.NoError(t, err)
				replaced := false
				for _, a := range res.Report.Stage("budget").Actions {
					replaced = replaced || a.Kind == agentctx.ActionReplaced
				}
				if replaced {
					replacingTurns++
				}
				for _, d := range res.Append {
					if d.Subtype == transcript.SubtypeToolResultBudget {
						records++
						for _, br := range d.Budget.Results {
							assert.True(t, br.Replaced, "a record lists only replacements")
						}
					}
				}
				live = append(live, res.Append...)
			}
			live = append(live, r)
		}
		t.Logf("caps %d/%d: %d budget records among %d lines; %d turns replaced a result",
			budget.MaxResultChars, budget.MaxMessageChars, records, len(live), replacingTurns)
		assert.Equal(t, replacingTurns, records, "one record per turn that replaces, none otherwise")
	}
}
