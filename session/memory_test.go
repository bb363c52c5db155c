package session_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/memory"
	"github.com/agentctx/agentctx/session"
	"github.com/agentctx/agentctx/summarize"
	"github.com/agentctx/agentctx/transcript"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// With Options.Memory, a Prepare whose gate says so starts an extraction; its record is
// appended by the next Prepare (or WaitExtraction), and a failed one appends nothing and is
// kept for ExtractionErr.
func TestSessionMemory(t *testing.T) {
	fail := false
	calls := 0
	ex, err := memory.New(memory.Config{FirstTokens: 10, GrowthTokens: 10, ToolCalls: 1,
		Summarizer: summarize.Func(func(context.Context, summarize.Request) (summarize.Summary, error) {
			calls++
			if fail {
				return summarize.Summary{}, errors.New("the model is down")
			}
			return summarize.Summary{Text: "<summary>The user wants the files listed.</summary>"}, nil
		})})
	require.NoError(t, err)
	cfg := agentctx.Config{}
	cfg.Compact.Memory = ex
	p := newTestPipeline(t, cfg, normNow)
	s := session.New(session.Options{ID: "sess", NewUUID: seqUUIDs(), Now: stepClock(normNow), Memory: ex})

	_, err = s.User("list the files " + strings.Repeat("please ", 20))
	require.NoError(t, err)
	_, err = s.Prepare(t.Context(), p, agentctx.Input{})
	require.NoError(t, err)
	require.NoError(t, s.WaitExtraction())
	last := s.Records()[len(s.Records())-1]
	require.Equal(t, transcript.SubtypeSessionMemory, last.Subtype)
	assert.Equal(t, "The user wants the files listed.", last.SessionMemory.Summary)
	assert.Equal(t, "u1", last.SessionMemory.Through)
	assert.Equal(t, "u1", s.Leaf(), "the extraction does not move the leaf")

	// No growth, no tool call: nothing starts.
	_, err = s.Prepare(t.Context(), p, agentctx.Input{})
	require.NoError(t, err)
	require.NoError(t, s.WaitExtraction())
	assert.Equal(t, 1, calls)

	// A failed extraction appends nothing.
	fail = true
	_, err = s.Response(response("msg_1", `{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"ls"}}`))
	require.NoError(t, err)
	_, err = s.ToolResults(transcript.TextResult("toolu_1", "a.go b.go "+strings.Repeat("c.go ", 30)))
	require.NoError(t, err)
	n := len(s.Records())
	_, err = s.Prepare(t.Context(), p, agentctx.Input{})
	require.NoError(t, err)
	require.NoError(t, s.WaitExtraction())
	assert.Equal(t, 2, calls)
	assert.Len(t, s.Records(), n)
	assert.ErrorContains(t, s.ExtractionErr(), "the model is down")
}
