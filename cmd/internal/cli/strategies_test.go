package cli

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// simulate --strategy all replays the session under client, server and auto and prints them
// side by side; --strategy server alone replays with the provider compacting; a strategy
// that is none of them is a usage error, and so is all for report.
func TestSimulateStrategies(t *testing.T) {
	f := filepath.Join(repo, "testdata", "sessions", "codemie-code", "compacted-624a4a58.jsonl")
	args := []string{"simulate", "--replay=policy", "--window=100000", "--model=claude-sonnet-4-6"}
	code, text, errOut := runCmd(t, append(args, "--strategy=all", f)...)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, text, "strategy compacts   client provider")
	assert.Regexp(t, `(?m)^client   client +[1-9]\d* +0 `, text)
	assert.Regexp(t, `(?m)^server   provider +0 +[1-9]\d* `, text)
	assert.Regexp(t, `(?m)^auto     provider `, text, "Sonnet 4.6 compacts on the provider's side")

	code, out, errOut := runCmd(t, append(args, "--strategy=all", "--json", f)...)
	require.Equal(t, 0, code, errOut)
	var rows []strategyRow
	require.NoError(t, json.Unmarshal([]byte(out), &rows))
	require.Len(t, rows, 3)
	assert.False(t, rows[0].Server)
	assert.True(t, rows[1].Server)
	assert.Positive(t, rows[1].Result.Totals.ServerCompactions)

	code, out, errOut = runCmd(t, append(args, "--strategy=server", "--json", f)...)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, `"server_compactions": `+fmt.Sprint(rows[1].Result.Totals.ServerCompactions))

	code, _, errOut = runCmd(t, append(args, "--strategy=provider", f)...)
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "--strategy must be client, server or auto")
	code, _, errOut = runCmd(t, "report", "--strategy=all", "-o", filepath.Join(t.TempDir(), "r.html"), f)
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "--strategy must be client, server or auto")
}
