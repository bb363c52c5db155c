package agentctx_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPeerRunCheck runs the LangChain peer comparison (bench/peer/run --check: a 20-turn
// session, one short round) and checks that it ran both sides and printed its tables. It needs
// Node and npm (and the npm registry, when bench/peer/node_modules is absent), so it runs only
// when AGENTCTX_PEER=1; CI does not set it.
func TestPeerRunCheck(t *testing.T) {
	if os.Getenv("AGENTCTX_PEER") != "1" {
		t.Skip("the LangChain peer check runs only with AGENTCTX_PEER=1 (it needs node and npm)")
	}
	for _, tool := range []string{"bash", "node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("AGENTCTX_PEER=1, but %s is not installed: %v", tool, err)
		}
	}
	cmd := exec.Command("bash", "bench/peer/run", "--check")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "bench/peer/run --check failed:\n%s", stderr.String())
	table := string(out)
	assert.NotContains(t, table, "skipped")
	for _, want := range []string{
		"| 20 | ", // a row for the session's size
		"whole history (nothing compacts)",
		"200k window",
		"| turns | agentctx request | node trim --cold |",
	} {
		assert.Contains(t, table, want)
	}
	// Every figure of the steady rows was measured: no empty cell, no ratio from a zero.
	for line := range strings.Lines(table) {
		if !strings.HasPrefix(line, "| 20 | ") {
			continue
		}
		assert.NotContains(t, line, "|  |", "an empty cell: %s", line)
		assert.NotContains(t, line, " 0.0×", "a zero ratio: %s", line)
		assert.NotContains(t, line, " 0.00×", "a zero ratio: %s", line)
		assert.NotContains(t, line, "inf", "a ratio over zero: %s", line)
	}
}
