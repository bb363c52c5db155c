package compacted

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentctx/agentctx/internal/testkit"
)

// TestReplay checks that a replay at a small window compacts several times and that every
// boundary it writes carries its history, counting the boundaries before it.
func TestReplay(t *testing.T) {
	recs, compactions, err := Replay(t.Context(), testkit.Generate(200, testkit.Options{Seed: 1}), 30_000)
	require.NoError(t, err)
	require.Greater(t, compactions, 2)
	n := 0
	for i := range recs {
		if r := &recs[i]; r.IsCompactBoundary() {
			require.NotNil(t, r.History, "boundary %d", n)
			assert.Equal(t, n, r.History.Compactions, "boundary %d", n)
			assert.NoError(t, r.History.Check())
			n++
		}
	}
	assert.Equal(t, compactions, n)
}
