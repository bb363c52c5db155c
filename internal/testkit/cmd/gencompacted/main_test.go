package main

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentctx/agentctx/transcript"
)

// TestRun checks that gencompacted writes a session that reads back with the compactions it
// reports.
func TestRun(t *testing.T) {
	out := filepath.Join(t.TempDir(), "c.jsonl")
	var stderr bytes.Buffer
	require.NoError(t, run(t.Context(), []string{"-turns", "150", "-window", "30000", "-o", out}, &stderr))
	f, err := transcript.ReadFile(out, transcript.ReadOptions{Strict: true})
	require.NoError(t, err)
	n := 0
	for i := range f.Records {
		if f.Records[i].IsCompactBoundary() {
			n++
		}
	}
	assert.Positive(t, n)
	assert.Contains(t, stderr.String(), "compactions")
	assert.Error(t, run(t.Context(), []string{"-turns", "1"}, &stderr), "no output file")
}
