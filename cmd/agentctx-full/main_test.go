package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentctx/agentctx/cmd/internal/cli"
)

// runCmd runs agentctx-full's command line.
func runCmd(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = cli.Run(t.Context(), build(), args, &out, &errb)
	return code, out.String(), errb.String()
}

// worktrees is the bundled session the README's first command shows.
var worktrees = filepath.Join("..", "..", "testdata", "sessions", "claude-code-log", "worktrees-ef958aa1.jsonl")

// sessions returns the bundled sessions.
func sessions(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "..", "testdata", "sessions", "*", "*.jsonl"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	return files
}

const now = "--now=2026-11-30T12:00:00Z"

// TestFull: agentctx-full has every command and every value of --provider and --summarizer,
// and never sends its user to itself.
func TestFull(t *testing.T) {
	code, usage, _ := runCmd(t, "--help")
	require.Equal(t, 0, code)
	assert.Contains(t, usage, "usage: agentctx-full COMMAND")
	assert.NotContains(t, usage, "(agentctx-full)")
	for _, cmd := range []string{"request", "compact", "simulate"} {
		code, help, _ := runCmd(t, cmd, "--help")
		require.Equal(t, 0, code)
		assert.Contains(t, help, "usage: agentctx-full "+cmd+" [flags] FILE")
		assert.NotContains(t, help, "this build has only", cmd)
	}
	code, schema, _ := runCmd(t, "schema")
	assert.Equal(t, 0, code)
	assert.Contains(t, schema, "CREATE TABLE agentctx_lines")
}

// TestImportDevice: import refuses a device before it connects to the database.
func TestImportDevice(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero here")
	}
	code, out, errOut := runCmd(t, "import", "/dev/zero", "postgres://localhost/agentctx")
	assert.Equal(t, 1, code)
	assert.Empty(t, out)
	assert.Equal(t, "agentctx: cannot read /dev/zero: it is a device, not a file\n", errOut)
}
