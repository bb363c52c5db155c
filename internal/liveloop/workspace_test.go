package liveloop

import (
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/agentctx/agentctx/transcript"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The share of huge reads is the workspace's big share: reading a huge file does not make it
// one of the files the model keeps coming back to.
func TestWorkspaceHugeShare(t *testing.T) {
	ws, err := newWorkspace(t.TempDir(), CorpusTools(), 1, 0.01)
	require.NoError(t, err)
	r := rand.New(rand.NewPCG(1, 1))
	huge := 0
	const n = 5000
	for i := range n {
		path := ws.pickFile(r, true)
		in, err := json.Marshal(map[string]string{"file_path": path})
		require.NoError(t, err)
		res := ws.run(&transcript.ToolUse{ID: "toolu_" + string(rune('a'+i%26)), Name: "Read", Input: in})
		require.False(t, res.IsError, path)
		if resultBytes(res) >= BigOutput {
			huge++
		}
	}
	assert.InDelta(t, 0.01, float64(huge)/n, 0.005)
}

// Paths lead nowhere outside the workspace.
func TestWorkspaceOutside(t *testing.T) {
	ws, err := newWorkspace(t.TempDir(), CorpusTools(), 1, 0)
	require.NoError(t, err)
	for _, p := range []string{"../secret", "/etc/passwd"} {
		in, _ := json.Marshal(map[string]string{"file_path": p})
		res := ws.run(&transcript.ToolUse{ID: "toolu_x", Name: "Read", Input: in})
		assert.True(t, res.IsError, p)
	}
}
