package main

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

// TestHelp: --help and -h on every command, and help COMMAND, print the command's usage with
// each of its flags and a description on stdout, and exit 0; agentctx --help lists the
// commands.
func TestHelp(t *testing.T) {
	shared := []string{"--model", "--window", "--max-tokens", "--now", "--tools", "--store", "--rehydrate-files"}
	own := map[string][]string{"inspect": {"--json"}, "request": {"--indent"}, "compact": {"--instructions", "--out"}}
	var tests []struct {
		args []string
		want []string
	}
	for _, top := range [][]string{{"--help"}, {"-h"}, {"help"}} {
		tests = append(tests, struct {
			args []string
			want []string
		}{top, []string{"usage: agentctx COMMAND", "inspect ", "request ", "compact ", "help "}})
	}
	for cmd, flags := range own {
		for _, args := range [][]string{{cmd, "--help"}, {cmd, "-h"}, {"help", cmd}, {cmd, small, "--help"}} {
			tests = append(tests, struct {
				args []string
				want []string
			}{args, append([]string{"usage: agentctx " + cmd + " [flags] FILE", "flags:"}, append(shared, flags...)...)})
		}
	}
	for _, tt := range tests {
		code, out, errOut := runCmd(t, tt.args...)
		assert.Equal(t, 0, code, "%v", tt.args)
		assert.Empty(t, errOut, "%v", tt.args)
		for _, w := range tt.want {
			assert.Contains(t, out, w, "%v", tt.args)
		}
		if strings.HasPrefix(tt.want[0], "usage: agentctx COMMAND") {
			continue
		}
		// Each flag has a description on the line after it.
		lines := strings.Split(out, "\n")
		for i, l := range lines {
			if strings.HasPrefix(l, "  --") {
				require.Less(t, i+1, len(lines), "%v: %s", tt.args, l)
				assert.True(t, strings.HasPrefix(lines[i+1], "        ") && len(strings.TrimSpace(lines[i+1])) > 10, "%v: %s has no description", tt.args, l)
			}
		}
	}
}

// small is a small bundled session.
var small = filepath.Join("..", "..", "testdata", "sessions", "spotter", "tool-heavy.jsonl")

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

// TestFlagsAfterFile: flags may follow FILE, and "--" ends them.
func TestFlagsAfterFile(t *testing.T) {
	store := "--store=" + t.TempDir()
	code, before, errOut := runCmd(t, "request", now, "--window=40000", store, small)
	require.Equal(t, 0, code, errOut)
	code, after, errOut := runCmd(t, "request", small, now, "--window", "40000", store)
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, before, after)
	code, _, errOut = runCmd(t, "request", now, store, "--", small, "--window=40000")
	assert.Equal(t, 2, code, "after --, --window=40000 is a second FILE")
	assert.Contains(t, errOut, "exactly one session FILE, got 2")
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
