package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentctx/agentctx"
)

func runCmd(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(t.Context(), args, &out, &errb)
	return code, out.String(), errb.String()
}

// sessions returns the bundled sessions, and the corpus's when ../../../shared/corpus exists.
func sessions(t *testing.T, corpus bool) []string {
	t.Helper()
	var files []string
	root := filepath.Join("..", "..", "testdata", "sessions")
	if corpus {
		root = filepath.Join("..", "..", "..", "shared", "corpus", "claude-code")
		if _, err := os.Stat(root); err != nil {
			t.Skip("../shared/corpus not found; whole-corpus tests skipped (clone without shared/)")
		}
	}
	require.NoError(t, filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".jsonl") {
			files = append(files, p)
		}
		return err
	}))
	slices.Sort(files)
	require.NotEmpty(t, files)
	return files
}

const now = "--now=2026-11-30T12:00:00Z"

func TestInspectBundled(t *testing.T) {
	store := "--store=" + t.TempDir()
	for _, f := range sessions(t, false) {
		t.Run(filepath.Base(f), func(t *testing.T) {
			code, out, errOut := runCmd(t, "inspect", now, store, f)
			require.Equal(t, 0, code, errOut)
			for _, want := range []string{"active chain", "tokens by category", "counted total", "anchored total", "auto-compact threshold", "largest records", "next request", "budget", "normalize", "cache"} {
				assert.Contains(t, out, want)
			}
			code, out, errOut = runCmd(t, "inspect", "--json", "--window=40000", now, store, f)
			require.Equal(t, 0, code, errOut)
			var got inspection
			require.NoError(t, json.Unmarshal([]byte(out), &got))
			assert.Equal(t, 40000, got.Model.ContextWindow)
			// A 40k window caps the output reserve at 10k and the buffer at 5k.
			assert.Equal(t, 40000-10000-5000, got.Model.AutoCompactThreshold)
			assert.Positive(t, got.Tokens.Counted)
			assert.NotEmpty(t, got.Largest)
			assert.Contains(t, []int{7, 8}, len(got.Stages), "seven stages, and compact when it ran")
			if r := got.Request; r.Messages > 0 && r.InputTokens < 40000 {
				assert.LessOrEqual(t, r.InputTokens+r.MaxTokens, 40000, "max_tokens never overflows the window")
			}
		})
	}
}

// TestInspectCorpus runs inspect on every corpus session, at the model's window and at a
// tight one.
func TestInspectCorpus(t *testing.T) {
	store := "--store=" + t.TempDir()
	for _, f := range sessions(t, true) {
		code, _, errOut := runCmd(t, "inspect", now, store, f)
		assert.Equal(t, 0, code, "%s: %s", f, errOut)
		code, out, errOut := runCmd(t, "inspect", "--json", "--window=40000", now, store, f)
		assert.Equal(t, 0, code, "%s: %s", f, errOut)
		assert.True(t, json.Valid([]byte(out)), f)
	}
}

func TestRequestBundled(t *testing.T) {
	f := filepath.Join("..", "..", "testdata", "sessions", "claude-code-log", "worktrees-ef958aa1.jsonl")
	tools := filepath.Join(t.TempDir(), "tools.json")
	require.NoError(t, os.WriteFile(tools, []byte(`[{"name":"Bash","description":"Run a command.","input_schema":{"type":"object"}}]`), 0o644))
	code, out, errOut := runCmd(t, "request", now, "--window=40000", "--tools="+tools, "--store="+t.TempDir(), f)
	require.Equal(t, 0, code, errOut)
	var body struct {
		Model     string            `json:"model"`
		MaxTokens int               `json:"max_tokens"`
		Messages  []json.RawMessage `json:"messages"`
		Tools     []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &body))
	assert.Equal(t, "claude-opus-4-7", body.Model, "the session's model")
	assert.NotEmpty(t, body.Messages)
	require.NotEmpty(t, body.Tools)
	assert.Equal(t, "Bash", body.Tools[0].Name, "the caller's tools come first")
	assert.Positive(t, body.MaxTokens)
	assert.Equal(t, 1, strings.Count(out, `"cache_control"`), "exactly one cache marker")

	code2, out2, _ := runCmd(t, "request", now, "--window=40000", "--tools="+tools, "--store="+t.TempDir(), f)
	require.Equal(t, 0, code2)
	assert.Equal(t, out, out2, "the same session gives the same bytes")

	code, indented, _ := runCmd(t, "request", "--indent", now, "--window=40000", "--tools="+tools, "--store="+t.TempDir(), f)
	require.Equal(t, 0, code)
	var a, b any
	require.NoError(t, json.Unmarshal([]byte(out), &a))
	require.NoError(t, json.Unmarshal([]byte(indented), &b))
	assert.Equal(t, a, b, "--indent changes only the layout")
}

// damagedCopy writes a copy of a bundled session with one line no longer JSON and one usage
// figure too large for an int, and returns its path and the two line numbers.
func damagedCopy(t *testing.T) (path string, broken, dropped int) {
	t.Helper()
	src := filepath.Join("..", "..", "testdata", "sessions", "claude-code-log", "worktrees-ef958aa1.jsonl")
	data, err := os.ReadFile(src)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	for i := len(lines) / 2; i < len(lines) && (broken == 0 || dropped == 0); i++ {
		switch {
		case broken == 0 && strings.Contains(lines[i], `"type":"user"`) && strings.Contains(lines[i], `"parentUuid":"`):
			lines[i], broken = "{"+lines[i], i+1
		case broken != 0 && dropped == 0 && strings.Contains(lines[i], `"input_tokens":`):
			lines[i], dropped = strings.Replace(lines[i], `"input_tokens":`, `"input_tokens":1e400,"was":`, 1), i+1
		}
	}
	require.NotZero(t, broken)
	require.NotZero(t, dropped)
	path = filepath.Join(t.TempDir(), "damaged.jsonl")
	require.NoError(t, os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644))
	return path, broken, dropped
}

// TestDamagedSession checks that inspect, request and compact name what a damaged session
// lost: the unreadable line and the records its break would cut off, and the dropped field;
// and that the history before the break is still sent.
func TestDamagedSession(t *testing.T) {
	f, broken, dropped := damagedCopy(t)
	before, err := os.ReadFile(f)
	require.NoError(t, err)
	store := "--store=" + t.TempDir()

	code, out, errOut := runCmd(t, "inspect", now, store, f)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, fmt.Sprintf("problem    %s:%d: ", f, broken))
	assert.Contains(t, out, fmt.Sprintf("dropped    %s:%d: field message.usage.input_tokens", f, dropped))
	assert.Contains(t, out, fmt.Sprintf("  break      %s:%d: unreadable line", f, broken))
	assert.Contains(t, out, "without the bridge the chain would lose")

	code, js, errOut := runCmd(t, "inspect", "--json", now, store, f)
	require.Equal(t, 0, code, errOut)
	var got inspection
	require.NoError(t, json.Unmarshal([]byte(js), &got))
	require.Len(t, got.Chain.Breaks, 1)
	b := got.Chain.Breaks[0]
	assert.Equal(t, agentctx.ChainUnreadable, b.Kind)
	assert.Equal(t, broken, b.Line)
	assert.Positive(t, b.Cut)
	assert.NotEmpty(t, b.Bridge)
	assert.Len(t, got.Dropped, 1)

	code, body, errOut := runCmd(t, "request", now, store, f)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, errOut, fmt.Sprintf("agentctx: %s:%d: ", f, broken))
	assert.Contains(t, errOut, fmt.Sprintf("agentctx: %s:%d: field message.usage.input_tokens", f, dropped))
	assert.Contains(t, errOut, fmt.Sprintf("without the bridge the chain would lose %d records", b.Cut))
	var req struct {
		Messages []json.RawMessage `json:"messages"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &req))
	_, clean, _ := runCmd(t, "request", now, store, filepath.Join("..", "..", "testdata", "sessions", "claude-code-log", "worktrees-ef958aa1.jsonl"))
	var cleanReq struct {
		Messages []json.RawMessage `json:"messages"`
	}
	require.NoError(t, json.Unmarshal([]byte(clean), &cleanReq))
	assert.GreaterOrEqual(t, len(req.Messages), len(cleanReq.Messages)-2, "the history before the break is sent")

	code, _, errOut = runCmd(t, "compact", now, "--window=40000", "--out="+filepath.Join(t.TempDir(), "c.jsonl"), store, f)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, errOut, "without the bridge the chain would lose")
	after, err := os.ReadFile(f)
	require.NoError(t, err)
	assert.Equal(t, before, after, "the damaged file is not rewritten")
}

func TestUsageAndErrors(t *testing.T) {
	tests := []struct {
		args []string
		code int
		err  string
	}{
		{nil, 2, "usage"},
		{[]string{"frobnicate"}, 2, `unknown command "frobnicate"`},
		{[]string{"inspect"}, 2, "exactly one session FILE"},
		{[]string{"inspect", "--window=x", "f"}, 2, "invalid value"},
		{[]string{"request", "--now=yesterday", "../../testdata/sessions/spotter/tool-heavy.jsonl"}, 2, "--now"},
		{[]string{"inspect", "does-not-exist.jsonl"}, 1, "does-not-exist.jsonl"},
		{[]string{"request", "--tools=does-not-exist.json", "../../testdata/sessions/spotter/tool-heavy.jsonl"}, 1, "does-not-exist.json"},
	}
	for _, tt := range tests {
		code, _, errOut := runCmd(t, tt.args...)
		assert.Equal(t, tt.code, code, "%v", tt.args)
		assert.Contains(t, errOut, tt.err, "%v", tt.args)
	}
}

// TestCompactCommand compacts a copy of a bundled session: the original's bytes stay, the copy
// is the original plus the compaction's records, and the request built from the copy is the one
// `request` printed for the overflowing original (compacted in memory), under the threshold.
func TestCompactCommand(t *testing.T) {
	src := filepath.Join("..", "..", "testdata", "sessions", "claude-code-log", "worktrees-ef958aa1.jsonl")
	dir := t.TempDir()
	f := filepath.Join(dir, "session.jsonl")
	orig, err := os.ReadFile(src)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(f, orig, 0o644))
	store := "--store=" + filepath.Join(dir, "store")

	code, inMemory, errOut := runCmd(t, "request", now, "--window=40000", store, f)
	require.Equal(t, 0, code, errOut)

	out := filepath.Join(dir, "compacted.jsonl")
	code, stdout, errOut := runCmd(t, "compact", now, "--window=40000", "--out="+out, store, f)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, stdout, "compacted "+out)
	assert.Contains(t, stdout, "summary by extractive")
	after, err := os.ReadFile(f)
	require.NoError(t, err)
	assert.Equal(t, orig, after, "--out leaves FILE untouched")
	copied, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(copied), string(orig)), "the copy starts with FILE's bytes")
	assert.Greater(t, len(copied), len(orig))

	code, _, errOut = runCmd(t, "compact", now, "--window=40000", "--out="+out, store, f)
	assert.Equal(t, 1, code, "--out never overwrites")
	assert.Contains(t, errOut, "--out")

	// Inspect the compacted copy: one compaction, the request under the threshold.
	code, js, errOut := runCmd(t, "inspect", "--json", now, "--window=40000", store, out)
	require.Equal(t, 0, code, errOut)
	var got inspection
	require.NoError(t, json.Unmarshal([]byte(js), &got))
	assert.Equal(t, 1, got.Compaction.Compactions)
	require.NotNil(t, got.Chain.Boundary)
	assert.True(t, got.Chain.Boundary.KeptTail)
	assert.Less(t, got.Pressure.Tokens, got.Pressure.Threshold)
	assert.Nil(t, got.Compaction.Next, "nothing to compact on the next turn")

	// The manual compaction with instructions differs from the auto one in memory, but a
	// compaction appended to FILE itself reads back the same as one kept in memory.
	code, _, errOut = runCmd(t, "compact", now, "--window=40000", "--instructions=focus on the merges", store, f)
	require.Equal(t, 0, code, errOut)
	code, fromFile, errOut := runCmd(t, "request", now, "--window=40000", store, f)
	require.Equal(t, 0, code, errOut)
	assert.NotEqual(t, inMemory, fromFile)
	assert.Contains(t, fromFile, "focus on the merges")
}
