package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRun(t *testing.T) {
	var out bytes.Buffer
	src := filepath.Join("..", "..", "testdata", "sessions", "claude-code-log", "worktrees-ef958aa1.jsonl")
	require.NoError(t, run(src, t.TempDir(), &out))
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 6, out.String())
	assert.True(t, strings.HasPrefix(lines[0], "turn 1: "), lines[0])
	assert.Contains(t, lines[1], "recovered (prompt_too_long)", "the refused prompt is compacted once")
	assert.Contains(t, lines[2], "turn 1: ", "the compacted request")
	assert.Contains(t, lines[3], "turn 2: ", lines[3])
	assert.Contains(t, lines[3], "0 records appended", "the second turn replays the first turn's decisions")
	assert.Contains(t, lines[4], "recovered (output_cap)", "the cut answer gets a higher cap")
	assert.Contains(t, lines[5], "max_tokens 64000", lines[5])
}
