package simulate_test

import (
	"testing"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/simulate"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Under the server strategy the simulated provider compacts the requests that pass its
// trigger (the library's threshold): the turn is billed the summarizing step (the whole
// request in, the summary out) and the answering step (the summary in), the next request
// starts at the compaction block, and the library does not compact at the threshold itself.
func TestServerCompaction(t *testing.T) {
	records := readSession(t, compactedSession)
	run := func(s agentctx.CompactionStrategy) (*simulate.Result, []string) {
		var points []string
		cfg := agentctx.Config{Model: "claude-sonnet-4-6", ContextWindow: 100_000, ProviderContext: agentctx.ProviderContextConfig{Strategy: s}}
		sim, err := simulate.Run(t.Context(), records, cfg, simulate.Options{Replay: simulate.ReplayPolicy, Observe: func(st *simulate.Step) {
			points = append(points, st.Result.Report.ProviderCompaction)
		}})
		require.NoError(t, err)
		return sim, points
	}
	client, _ := run(agentctx.CompactClient)
	server, points := run(agentctx.CompactServer)
	assert.Positive(t, client.Totals.Compactions)
	assert.Zero(t, client.Totals.ServerCompactions)
	require.Positive(t, server.Totals.ServerCompactions)
	assert.Zero(t, server.Totals.Compactions, "the provider compacts before the library's blocking limit")
	assert.Less(t, server.Totals.PeakTokens, 100_000, "the peak is a request's, not the two steps'")
	n := 0
	for i, turn := range server.Turns {
		sc := turn.ServerCompaction
		if sc == nil {
			continue
		}
		n++
		assert.GreaterOrEqual(t, sc.PreTokens, server.Threshold)
		assert.Equal(t, sc.PreTokens, sc.Compaction.Input(), "the summarizing step reads the whole request")
		assert.Positive(t, sc.SummaryTokens)
		assert.Equal(t, server.Price.Cost(sc.Compaction.Uncached, sc.Compaction.CacheWrite5m, sc.Compaction.CacheWrite1h, sc.Compaction.CacheRead, sc.Compaction.Output), sc.Compaction.Cost)
		assert.Greater(t, turn.Cost, sc.Compaction.Cost, "the answering step is billed too")
		assert.Greater(t, turn.Output, sc.Compaction.Output)
		if i+1 < len(server.Turns) {
			assert.Equal(t, turn.UUID, points[i+1], "turn %d: the next request starts at the provider's compaction", turn.Turn)
			if b := server.Turns[i+1].PrefixBreak; b != nil {
				assert.Equal(t, "provider compaction", b.Cause)
			}
		}
	}
	assert.Equal(t, server.Totals.ServerCompactions, n)
	assert.Zero(t, server.Totals.Unexplained)

	// auto: the provider where the model table says the model supports it.
	auto, _ := run(agentctx.CompactAuto)
	assert.Equal(t, server.Totals, auto.Totals)
}
