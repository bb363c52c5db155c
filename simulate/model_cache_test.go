package simulate

import (
	"testing"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/transcript"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestModelSwitchMissesTheCache: with ResponseModels each model has a cache of its own, as
// the provider's: the first request to another model reads nothing of what the first model's
// requests wrote (a prefix break whose cause is "model"), and the next one to it reads what
// that one wrote; without, the models share one cache as before. When the other model's first
// response read from the cache, its cache starts warm with the fixed prefix that read covers.
func TestModelSwitchMissesTheCache(t *testing.T) {
	recs := simSession(6)
	for i := range recs {
		if m := recs[i].Message; m.Role == "assistant" {
			m.Model = "claude-sonnet-4-5"
			if i >= 6 {
				m.Model = "claude-opus-4-5"
			}
		}
	}
	cfg := agentctx.Config{Model: "claude-sonnet-4-5", Tokens: agentctx.EstimateCounter{}}
	apart, err := Run(t.Context(), recs, cfg, Options{SystemTokens: 6000, ResponseModels: true})
	require.NoError(t, err)
	require.Len(t, apart.Turns, 6)
	assert.Positive(t, apart.Turns[2].CacheRead, "turn 3 reads what turn 2 wrote")
	switched := apart.Turns[3]
	assert.Zero(t, switched.CacheRead, "turn 4, the first to the other model, reads nothing")
	require.NotNil(t, switched.PrefixBreak)
	assert.Equal(t, "model", switched.PrefixBreak.Cause)
	assert.Positive(t, apart.Turns[4].CacheRead, "turn 5 reads what turn 4 wrote")
	assert.Zero(t, apart.Totals.Unexplained)

	for _, i := range []int{1, 7} { // each model's first response read the whole fixed prefix
		recs[i].Message.Usage = &transcript.Usage{InputTokens: 10, CacheReadInputTokens: 50_000, OutputTokens: 5}
	}
	warm, err := Run(t.Context(), recs, cfg, Options{SystemTokens: 6000, ResponseModels: true})
	require.NoError(t, err)
	assert.Equal(t, 6000, warm.WarmPrefix)
	assert.Equal(t, 6000, warm.Turns[0].CacheRead, "the first model's cache starts warm")
	assert.Equal(t, 6000, warm.Turns[3].CacheRead, "so does the other model's, at its first request")
	assert.Equal(t, "model", warm.Turns[3].PrefixBreak.Cause)

	shared, err := Run(t.Context(), recs, cfg, Options{SystemTokens: 6000})
	require.NoError(t, err)
	assert.Positive(t, shared.Turns[3].CacheRead, "one cache when the turns are not told apart")
	assert.Nil(t, shared.Turns[3].PrefixBreak)
}
