package agentctx

import (
	"testing"

	"github.com/agentctx/agentctx/provider"
	"github.com/agentctx/agentctx/transcript"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStepOutputs reads, from a request a Pipeline built, what a host that builds its own
// request must apply: the one cache breakpoint as a position, the cache_edits blocks, and the
// stub tools it must add to its own (the history calls Read, the caller offers none).
func TestStepOutputs(t *testing.T) {
	k, _ := mcCachedSession()
	p := mcPipeline(t, k.at(0), MicrocompactConfig{Cached: true, CacheEditingBeta: testCacheBeta, CachedTriggerTokens: 500})
	res, err := p.Prepare(t.Context(), Input{Records: k.recs})
	require.NoError(t, err)
	req := &res.Request

	bps := req.CacheBreakpoints()
	require.Len(t, bps, 1, "one message-level breakpoint")
	var want []provider.Position
	for i, m := range req.Messages {
		for j, b := range m.Content {
			if transcript.CacheControlOf(b) != nil {
				want = append(want, provider.Position{Message: i, Block: j})
			}
		}
	}
	assert.Equal(t, want, []provider.Position{bps[0].Position})
	assert.Equal(t, "ephemeral", bps[0].CacheControl.Type)

	edits := req.CacheEdits()
	require.Len(t, edits, 1)
	last := len(req.Messages) - 1
	assert.Equal(t, last, edits[0].Message)
	assert.Equal(t, transcript.KindCacheEdits, req.Messages[last].Content[edits[0].Block].Kind())
	_, at := mcCacheEdits(res.Request)
	assert.Equal(t, []int{edits[0].Message}, at)

	assert.Equal(t, []string{"Read"}, req.Stubs())
	for _, tool := range req.Tools {
		assert.Equal(t, "Read", tool.Name, "the only tool is the stub")
	}
}
