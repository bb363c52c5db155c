package anthropic_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/anthropic"
	"github.com/agentctx/agentctx/session"
	"github.com/agentctx/agentctx/transcript"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An answer paused after the provider's compaction (pause_after_compaction, stop_reason
// "compaction"): the next Prepare re-injects what the library's own compaction would — the
// file the conversation read, re-read from disk, and the todo list — and the pinned rule
// after the server's summary, records the pause, and the conversation goes on without a new
// prompt; the request the server gets opens with the compaction block, and a resume from the
// records builds the same bytes.
func TestPausedCompactionGoesOn(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "parse.go")
	require.NoError(t, os.WriteFile(file, []byte("package parse\n\n// Parse reads one log line.\nfunc Parse(line string) {}\n"), 0o600))
	f := newFakeAPI(t, func(w http.ResponseWriter, _ *http.Request, n int) {
		if n == 0 {
			writeJSON(w, 200, pausedAnswer)
			return
		}
		writeJSON(w, 200, answer)
	})
	cfg := agentctx.Config{
		Model: "claude-sonnet-4-6", MaxOutputTokens: 4096, Tokens: agentctx.EstimateCounter{},
		Now:             func() time.Time { return time.Date(2026, 3, 5, 9, 0, 0, 0, time.UTC) },
		ProviderContext: agentctx.ProviderContextConfig{Strategy: agentctx.CompactServer, PauseAfterCompaction: true},
	}
	p, err := agentctx.New(cfg)
	require.NoError(t, err)
	sess := session.New(session.Options{Cwd: dir, Now: cfg.Now})
	rule, err := sess.User("Hard rule: never edit the files under gen/.")
	require.NoError(t, err)
	pin, err := p.Pin(sess.Records(), []string{rule.UUID}, "a standing rule", cfg.Now())
	require.NoError(t, err)
	require.NoError(t, sess.Append(pin))
	read := &transcript.ToolUse{ID: "toolu_read", Name: "Read", Input: json.RawMessage(`{"file_path":"` + file + `"}`)}
	todo := &transcript.ToolUse{ID: "toolu_todo", Name: "TodoWrite",
		Input: json.RawMessage(`{"todos":[{"content":"Fix Parse","status":"in_progress","activeForm":"Fixing Parse"}]}`)}
	_, err = sess.Assistant(&transcript.Message{ID: "msg_1", Type: "message", Role: transcript.RoleAssistant, Model: cfg.Model, StopReason: "tool_use",
		Content: []transcript.Block{read, todo}, Usage: &transcript.Usage{InputTokens: 500, OutputTokens: 40}})
	require.NoError(t, err)
	_, err = sess.ToolResults(&transcript.ToolResult{ToolUseID: read.ID, Content: []transcript.Block{&transcript.Text{Text: "package parse"}}, StringContent: true},
		&transcript.ToolResult{ToolUseID: todo.ID, Content: []transcript.Block{&transcript.Text{Text: "Todos updated."}}, StringContent: true})
	require.NoError(t, err)

	c := f.client()
	res, err := sess.Prepare(t.Context(), p, agentctx.Input{})
	require.NoError(t, err)
	paused, err := c.Turn(t.Context(), sess, res.Request, anthropic.Options{})
	require.NoError(t, err)
	require.Equal(t, "compaction", paused.Message.StopReason)

	// No new prompt: the library goes on from the summary.
	res, err = sess.Prepare(t.Context(), p, agentctx.Input{})
	require.NoError(t, err)
	var kinds []string
	for _, r := range res.Append {
		if r.Rehydration != nil {
			kinds = append(kinds, r.Rehydration.Kind)
		}
	}
	assert.Equal(t, []string{transcript.RehydrateFile, transcript.RehydrateTodos, transcript.RehydratePause}, kinds, "the pause is recorded with what was re-injected")
	records := sess.Records()
	_, err = c.Turn(t.Context(), sess, res.Request, anthropic.Options{})
	require.NoError(t, err)

	msgs := f.bodies[1]["messages"].([]any)
	require.Len(t, msgs, 2)
	first := msgs[0].(map[string]any)
	assert.Equal(t, "assistant", first["role"])
	sent, err := res.Request.MarshalJSON()
	require.NoError(t, err)
	assert.Contains(t, string(sent), `"messages":[{"role":"assistant","content":[`+compactionBlock, "the block goes back byte for byte, first")
	rest, err := json.Marshal(msgs[1])
	require.NoError(t, err)
	for _, want := range []string{"// Parse reads one log line.", "[in_progress] Fix Parse", "Hard rule: never edit the files under gen/.", "Go on with the task"} {
		assert.Contains(t, string(rest), want)
	}

	// A resume from the records builds the same request, with nothing new to append.
	again, err := agentctx.New(cfg)
	require.NoError(t, err)
	resumed, err := again.Prepare(t.Context(), agentctx.Input{Records: records})
	require.NoError(t, err)
	body, err := resumed.Request.MarshalJSON()
	require.NoError(t, err)
	assert.Equal(t, string(sent), string(body))
	assert.Empty(t, resumed.Append)

	// The turn after goes on as usual: nothing re-injected again.
	_, err = sess.User("Now add a test.")
	require.NoError(t, err)
	res, err = sess.Prepare(t.Context(), p, agentctx.Input{})
	require.NoError(t, err)
	assert.Empty(t, res.Append)
	assert.Equal(t, paused.UUID, res.Report.ProviderCompaction)
}
