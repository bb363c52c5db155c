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
	require.Len(t, lines, 2)
	assert.True(t, strings.HasPrefix(lines[0], "turn 1: "), lines[0])
	assert.Contains(t, lines[1], "0 decision records appended", "the second turn replays the first turn's decisions")
}
