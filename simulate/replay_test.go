package simulate_test

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/testkit"
	"github.com/agentctx/agentctx/provider"
	"github.com/agentctx/agentctx/simulate"
	"github.com/agentctx/agentctx/transcript"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// compactedSession is a bundled session with a compaction of its own.
const compactedSession = "codemie-code/compacted-624a4a58.jsonl"

// readSession reads a bundled session (../testdata/sessions/NAME).
func readSession(t *testing.T, name string) []transcript.Record {
	t.Helper()
	tr, err := transcript.ReadFile(filepath.Join("..", "testdata", "sessions", name), transcript.ReadOptions{})
	require.NoError(t, err)
	return tr.Records
}

// TestReplayPolicy: on a session with its own compaction, --replay file builds the turns after
// it on the file's boundary and summary; --replay policy never gives Prepare the file's
// boundary or summary, reads the conversation on from before it (a turn after the boundary
// sends more than under the file), and compacts where the policy decides: under a small window
// its own compactions appear, the file's one is counted in the real totals only. A manual
// compaction in the file (the user asked for it) is replayed where it stood, by the policy.
func TestReplayPolicy(t *testing.T) {
	records := readSession(t, compactedSession)
	fileOwn := map[string]bool{}
	for _, r := range records {
		if r.IsCompactBoundary() || r.IsCompactSummary {
			fileOwn[r.UUID] = true
		}
	}
	require.NotEmpty(t, fileOwn, "the session compacted itself")
	run := func(mode string, window int) (*simulate.Result, []bool) {
		var usedFile []bool
		opts := simulate.Options{Replay: mode, Observe: func(s *simulate.Step) {
			used := false
			for _, r := range s.Input.Records {
				used = used || fileOwn[r.UUID]
			}
			usedFile = append(usedFile, used)
		}}
		sim, err := simulate.Run(t.Context(), records, agentctx.Config{Model: "claude-sonnet-4-5", ContextWindow: window}, opts)
		require.NoError(t, err)
		checkSimulation(t, sim, mode)
		return sim, usedFile
	}
	file, fileUsed := run(simulate.ReplayFile, 0)
	policy, policyUsed := run(simulate.ReplayPolicy, 0)
	assert.Contains(t, fileUsed, true, "the file's replay reads its boundary")
	assert.NotContains(t, policyUsed, true, "the policy's replay never does")
	assert.Equal(t, 1, file.Real.Compactions)
	assert.Equal(t, 1, policy.Real.Compactions, "the real totals count the file's compaction")
	assert.Equal(t, simulate.ReplayPolicy, policy.Replay)
	require.Len(t, policy.Turns, len(file.Turns))
	last := len(file.Turns) - 1
	assert.Greater(t, policy.Turns[last].InputTokens, file.Turns[last].InputTokens,
		"without the file's summary the last turn sends the conversation before it")

	small, smallUsed := run(simulate.ReplayPolicy, 30000)
	assert.NotContains(t, smallUsed, true)
	assert.Positive(t, small.Totals.Compactions, "the policy compacts on its own")
	assert.Less(t, small.Totals.PeakTokens, 30000)

	// The same compaction asked for by the user: the policy compacts where it stood, with its
	// own summarizer, and nowhere else at the model's window.
	manual := slices.Clone(records)
	at := slices.IndexFunc(manual, func(r transcript.Record) bool { return r.IsCompactBoundary() })
	m := *manual[at].CompactMetadata
	m.Trigger = "manual"
	manual[at].CompactMetadata = &m
	asked, err := simulate.Run(t.Context(), manual, agentctx.Config{Model: "claude-sonnet-4-5"}, simulate.Options{Replay: simulate.ReplayPolicy})
	require.NoError(t, err)
	checkSimulation(t, asked, "manual")
	assert.Equal(t, 1, asked.Totals.Compactions)
	for i, tu := range asked.Turns {
		if tu.Compaction != nil {
			assert.Equal(t, "manual", tu.Compaction.Trigger)
			assert.Equal(t, agentctx.CompactCompacted, tu.Compaction.Outcome)
			assert.Greater(t, tu.Line, manual[at].Line, "the first turn after the file's boundary")
			assert.Less(t, asked.Turns[i-1].Line, manual[at].Line)
		}
	}

	_, err = simulate.Run(t.Context(), records, agentctx.Config{Model: "claude-sonnet-4-5"}, simulate.Options{Replay: "both"})
	assert.ErrorContains(t, err, `Options.Replay "both"`)
}

// TestFixedPrefixEstimate: with the estimated prefix and the calibration, the requests the
// replay sends over the responses the calibration was fitted on are, together, in provider
// tokens, what those responses reported (the fit's intercept is the prefix); a synthetic
// prompt of N tokens counts N; the zero Options report neither.
func TestFixedPrefixEstimate(t *testing.T) {
	records := readSession(t, compactedSession)
	cfg := agentctx.Config{Model: "claude-sonnet-4-5"}
	sim, err := simulate.Run(t.Context(), records, cfg, simulate.Options{Replay: simulate.ReplayPolicy, EstimatePrefix: true, Calibrate: true})
	require.NoError(t, err)
	checkSimulation(t, sim, "estimate")
	require.NotNil(t, sim.FixedPrefix)
	require.NotNil(t, sim.Calibration)
	assert.Equal(t, simulate.PrefixEstimate, sim.FixedPrefix.Source)
	assert.True(t, sim.Calibration.Scaled)
	assert.Positive(t, sim.Calibration.Responses)
	faithful := cfg // the replay as the file ran: no decision the file did not make
	faithful.Budget.Disable, faithful.Microcompact.Disable, faithful.Compact.DisableAuto = true, true, true
	asRan, err := simulate.Run(t.Context(), records, faithful, simulate.Options{EstimatePrefix: true, Calibrate: true})
	require.NoError(t, err)
	var replayed, real, n int
	for _, tu := range asRan.Turns {
		if tu.Real != nil && n < sim.Calibration.Responses {
			replayed, real, n = replayed+tu.Input(), real+tu.Real.Input(), n+1
		}
	}
	assert.InEpsilon(t, real, replayed, 0.01, "the requests of the calibration's responses are as large as the real ones")
	t.Logf("fixed prefix %+v, calibration %+v; %d requests: %d provider tokens, real %d",
		*sim.FixedPrefix, *sim.Calibration, n, replayed, real)

	for _, n := range []int{1, 1000, 20000} {
		sim, err := simulate.Run(t.Context(), records[:40], cfg, simulate.Options{SystemTokens: n})
		require.NoError(t, err)
		require.NotNil(t, sim.FixedPrefix)
		assert.Equal(t, simulate.FixedPrefix{Tokens: n, Source: simulate.PrefixSystemTokens}, *sim.FixedPrefix)
		assert.Nil(t, sim.Calibration)
	}
	plain, err := simulate.Run(t.Context(), records[:40], cfg, simulate.Options{})
	require.NoError(t, err)
	assert.Nil(t, plain.FixedPrefix)
	assert.Nil(t, plain.Calibration)
	assert.Empty(t, plain.ThinkingSource)
}

// TestSessionThinking: a session whose responses hold thinking blocks runs with thinking
// enabled at the documented budget, one without with thinking off; a config's setting wins.
func TestSessionThinking(t *testing.T) {
	for _, tc := range []struct {
		name     string
		thinking bool
		cfg      *provider.Thinking
		want     *provider.Thinking
		source   string
	}{
		{"thought", true, nil, &provider.Thinking{Type: "enabled", BudgetTokens: simulate.SessionThinkingBudget}, "session"},
		{"did not", false, nil, nil, "session"},
		{"config wins", true, &provider.Thinking{Type: "adaptive"}, &provider.Thinking{Type: "adaptive"}, "config"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			records := testkit.Generate(12, testkit.Options{Seed: 5})
			if tc.thinking {
				for i := range records {
					if r := &records[i]; r.Type == transcript.TypeAssistant && r.Message != nil {
						m := *r.Message
						m.Content = append([]transcript.Block{&transcript.Thinking{Thinking: "Look first.", Signature: "c2ln"}}, m.Content...)
						r.Message = &m
						break
					}
				}
			}
			assert.Equal(t, tc.thinking, simulate.SessionThinking(records) != nil)
			sim, err := simulate.Run(t.Context(), records, agentctx.Config{Model: "claude-sonnet-4-5", Thinking: tc.cfg},
				simulate.Options{SessionThinking: true})
			require.NoError(t, err)
			assert.Equal(t, tc.want, sim.Thinking)
			assert.Equal(t, tc.source, sim.ThinkingSource)
		})
	}
}
