package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentctx/agentctx/internal/testkit"
	"github.com/agentctx/agentctx/internal/testkit/compacted"
	"github.com/agentctx/agentctx/transcript"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// longCompacted writes the bundled compacted session after a generated earlier conversation
// that brings the file over transcript.DefaultTailMinBytes, and returns its path and the
// bundled session's.
func longCompacted(t *testing.T) (long, compacted string) {
	t.Helper()
	compacted = filepath.Join(repo, "testdata", "sessions", "codemie-code", "compacted-624a4a58.jsonl")
	data, err := os.ReadFile(compacted)
	require.NoError(t, err)
	prefix, err := testkit.JSONL(testkit.Generate(1000, testkit.Options{Seed: 7}))
	require.NoError(t, err)
	data = append(prefix, data...)
	require.Greater(t, len(data), int(transcript.DefaultTailMinBytes))
	long = filepath.Join(t.TempDir(), "long.jsonl")
	require.NoError(t, os.WriteFile(long, data, 0o644))
	return long, compacted
}

// TestRequestFromTail checks that request reads a long compacted file from its active tail and
// sends what it sends for the compacted session alone, and that inspect says it read a tail.
func TestRequestFromTail(t *testing.T) {
	long, compacted := longCompacted(t)
	sameRequests(t, compacted, long, "--window=200000", "--window=40000")

	code, out, errOut := runCmd(t, "inspect", now, "--store="+t.TempDir(), long)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "read       the active tail: lines ")
	code, out, errOut = runCmd(t, "inspect", "--json", now, "--store="+t.TempDir(), long)
	require.Equal(t, 0, code, errOut)
	var in inspection
	require.NoError(t, json.Unmarshal([]byte(out), &in))
	require.NotNil(t, in.Tail)
	assert.Positive(t, in.Tail.Line)
	code, out, errOut = runCmd(t, "inspect", now, "--store="+t.TempDir(), compacted)
	require.Equal(t, 0, code, errOut)
	assert.NotContains(t, out, "the active tail", "a file under the threshold is read whole")
}

// TestRequestFromBoundaryHistory checks that request reads a long session compacted by the
// library from its latest boundary's history, without reading a line before the cut, and
// sends what it sends for a copy of the file cut there; inspect says where the history came
// from.
func TestRequestFromBoundaryHistory(t *testing.T) {
	recs, _, err := compacted.Replay(t.Context(), testkit.Generate(1500, testkit.Options{Seed: 3}), 30_000)
	require.NoError(t, err)
	data, err := testkit.JSONL(recs)
	require.NoError(t, err)
	require.Greater(t, len(data), int(transcript.DefaultTailMinBytes))
	long := filepath.Join(t.TempDir(), "long.jsonl")
	require.NoError(t, os.WriteFile(long, data, 0o644))
	f, err := transcript.ReadFile(long, transcript.ReadOptions{TailMinBytes: transcript.DefaultTailMinBytes})
	require.NoError(t, err)
	require.NotNil(t, f.Tail)
	require.True(t, f.Tail.Digest)
	cut := filepath.Join(t.TempDir(), "cut.jsonl")
	require.NoError(t, os.WriteFile(cut, data[f.Tail.Offset:], 0o644))
	sameRequests(t, cut, long, "--window=200000", "--window=30000")
	code, out, errOut := runCmd(t, "inspect", now, "--store="+t.TempDir(), long)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "carried by the latest compact boundary, no line before read")
}

// sameRequests asserts that request sends the same bytes for the long file as for want, a
// file holding its active tail alone, at each window flag.
func sameRequests(t *testing.T, want, long string, windows ...string) {
	t.Helper()
	for _, window := range windows {
		code, wantOut, errOut := runCmd(t, "request", now, window, "--store="+t.TempDir(), want)
		require.Equal(t, 0, code, errOut)
		code, got, errOut := runCmd(t, "request", now, window, "--store="+t.TempDir(), long)
		require.Equal(t, 0, code, errOut)
		assert.Equal(t, wantOut, got, "%s: the long file's request", window)
	}
}
