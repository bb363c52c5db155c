package agentctx

import (
	"testing"

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

	at, ccs := req.CacheBreakpoints()
	require.Len(t, at, 1, "one message-level breakpoint")
	m := req.Messages[at[0].Message]
	assert.Same(t, ccs[0], transcript.CacheControlOf(m.Content[at[0].Block]))

	edits := req.CacheEdits()
	require.Len(t, edits, 1)
	last := len(req.Messages) - 1
	assert.Equal(t, last, edits[0].Message)
	assert.Equal(t, transcript.KindCacheEdits, req.Messages[last].Content[edits[0].Block].Kind())
	_, at2 := mcCacheEdits(res.Request)
	assert.Equal(t, at2, []int{edits[0].Message})

	assert.Equal(t, []string{"Read"}, req.Stubs())
	for _, tool := range req.Tools {
		assert.Equal(t, "Read", tool.Name, "the only tool is the stub")
	}
}
