package session_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/testkit"
	"github.com/agentctx/agentctx/session"
	"github.com/agentctx/agentctx/summarize"
	"github.com/agentctx/agentctx/transcript"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestResumeFileFromTail resumes a long compacted file (a generated earlier conversation, then
// a bundled compacted session) with ResumeFile, which reads its active tail, and with Resume
// on a whole read: the same leaf, session id and working directory, and the same request.
func TestResumeFileFromTail(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "testdata", "sessions", "codemie-code", "compacted-624a4a58.jsonl"))
	require.NoError(t, err)
	prefix, err := testkit.JSONL(testkit.Generate(1000, testkit.Options{Seed: 7}))
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "long.jsonl")
	require.NoError(t, os.WriteFile(path, append(prefix, data...), 0o644))

	s, tr, err := session.ResumeFile(path, session.Options{})
	require.NoError(t, err)
	require.NotNil(t, tr.Tail, "a file over DefaultTailMinBytes is read from its tail")
	whole, err := transcript.ReadFile(path, transcript.ReadOptions{})
	require.NoError(t, err)
	assert.Less(t, len(tr.Records), len(whole.Records)/2)
	ws, err := session.Resume(whole.Records, session.Options{})
	require.NoError(t, err)
	assert.Equal(t, ws.Leaf(), s.Leaf())
	assert.Equal(t, ws.ID(), s.ID())

	now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	for _, window := range []int{200_000, 40_000} {
		body := func(s *session.Session) string {
			p := newTestPipeline(t, agentctx.Config{ContextWindow: window, Compact: agentctx.CompactConfig{Summarizer: summarize.Extractive{}}}, now)
			res, err := p.Prepare(t.Context(), agentctx.Input{Records: s.Records()})
			require.NoError(t, err)
			out, err := res.Request.MarshalJSON()
			require.NoError(t, err)
			return string(out)
		}
		assert.Equal(t, body(ws), body(s), "window %d", window)
	}

	_, tr, err = session.ResumeFile(path, session.Options{Chain: transcript.ChainOptions{Leaf: ws.Leaf()}})
	require.NoError(t, err)
	assert.Nil(t, tr.Tail, "a chosen leaf is looked for in the whole file")
}
