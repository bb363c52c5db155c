package cli

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

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/transcript"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runCmd runs the light agentctx's command line, the zero Build.
func runCmd(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return runWith(t, Build{}, args...)
}

// runWith runs the command line of b.
func runWith(t *testing.T, b Build, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Run(t.Context(), b, args, &out, &errb)
	return code, out.String(), errb.String()
}

// repo is the repository's root, seen from this package's directory.
var repo = filepath.Join("..", "..", "..")

// worktrees is the bundled session the README's first command shows.
var worktrees = filepath.Join(repo, "testdata", "sessions", "claude-code-log", "worktrees-ef958aa1.jsonl")

// sessions returns the bundled sessions, and the corpus's when ../shared/corpus exists beside the repository.
func sessions(t *testing.T, corpus bool) []string {
	t.Helper()
	var files []string
	root := filepath.Join(repo, "testdata", "sessions")
	if corpus {
		root = filepath.Join(repo, "..", "shared", "corpus", "claude-code")
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
	if corpus && raceEnabled {
		// One corpus file in four under the race detector (see the root package's
		// corpusPaths): the plain run walks them all.
		files = slices.DeleteFunc(slices.Clone(files), func(f string) bool { return slices.Index(files, f)%4 != 0 })
	}
	return files
}

const now = "--now=2026-11-30T12:00:00Z"

func TestInspectBundled(t *testing.T) {
	store := "--store=" + t.TempDir()
	for _, f := range sessions(t, false) {
		t.Run(filepath.Base(f), func(t *testing.T) {
			code, out, errOut := runCmd(t, "inspect", now, store, f)
			require.Equal(t, 0, code, errOut)
			for _, want := range []string{"active chain", "by category", "tool definitions", "= input tokens", "free space", "auto-compact buffer", "= window",
				"anchored ", "counted ", "They differ by", "auto-compact threshold", "largest records", "next request", "budget", "normalize", "cache"} {
				assert.Contains(t, out, want)
			}
			code, out, errOut = runCmd(t, "inspect", "--json", "--window=40000", now, store, f)
			require.Equal(t, 0, code, errOut)
			var got inspection
			require.NoError(t, json.Unmarshal([]byte(out), &got))
			assert.Equal(t, 40000, got.Model.ContextWindow)
			// A 40k window caps the output reserve at 10k and the buffer at 5k.
			assert.Equal(t, 40000-10000-5000, got.Model.AutoCompactThreshold)
			assert.Positive(t, got.Request.InputTokens)
			assert.NotEmpty(t, got.Largest)
			assert.Contains(t, []int{7, 8}, len(got.Stages), "seven stages, and compact when it ran")
			if r := got.Request; r.Messages > 0 && r.InputTokens < 40000 {
				assert.LessOrEqual(t, r.InputTokens+r.MaxTokens, 40000, "max_tokens never overflows the window")
			}
		})
	}
}

// checkCategories asserts that the next request's categories sum to its counted input tokens,
// and with free space and buffer to the window.
func checkCategories(t *testing.T, got inspection, name string) {
	t.Helper()
	r, c := got.Request, got.Request.ByCategory
	msgs := 0
	for _, n := range c.MessagesByCategory {
		msgs += n
	}
	assert.Len(t, c.MessagesByCategory, 7, name)
	assert.Equal(t, c.Messages, msgs, "%s: the message categories sum to the messages", name)
	assert.Equal(t, r.InputTokens, c.SystemPrompt+c.ToolDefinitions+c.BaseContext+c.Messages, "%s: the categories sum to the input tokens", name)
	if r.InputTokens <= got.Model.ContextWindow {
		assert.Equal(t, got.Model.ContextWindow, r.InputTokens+c.FreeSpace+c.AutoCompactBuffer, "%s: with free space and buffer, to the window", name)
	}
	assert.Equal(t, max(0, got.Model.AutoCompactThreshold-r.InputTokens), c.FreeSpace, name)
	assert.Equal(t, r.InputTokens, got.Pressure.Counted, name)
	assert.Len(t, got.Pressure.Differ, 3, name)
}

// TestInspectCategories: on every bundled session, at the model's window and at one that
// forces an in-memory compaction, the next request's categories sum exactly to its input
// tokens, and the text shows the same figures.
func TestInspectCategories(t *testing.T) {
	store := "--store=" + t.TempDir()
	compacted := 0
	for _, f := range sessions(t, false) {
		for _, window := range []string{"--window=200000", "--window=40000"} {
			name := filepath.Base(f) + " " + window
			code, out, errOut := runCmd(t, "inspect", "--json", now, window, store, f)
			require.Equal(t, 0, code, errOut)
			var got inspection
			require.NoError(t, json.Unmarshal([]byte(out), &got))
			checkCategories(t, got, name)
			if c := got.Compaction.Next; c != nil && c.Outcome == agentctx.CompactCompacted {
				compacted++
			}
			code, text, errOut := runCmd(t, "inspect", now, window, store, f)
			require.Equal(t, 0, code, errOut)
			assert.Regexp(t, fmt.Sprintf(`= input tokens +%d\n`, got.Request.InputTokens), text, name)
			assert.Regexp(t, fmt.Sprintf(`free space +%d `, got.Request.ByCategory.FreeSpace), text, name)
		}
	}
	assert.Positive(t, compacted, "a bundled session is compacted in memory at 40k")
}

// TestInspectClock: without --now, the clock line and every clock-dependent stage line (the
// microcompact clearings, which measure the idle gap to now) say they used the wall clock.
func TestInspectClock(t *testing.T) {
	f := worktrees
	store := "--store=" + t.TempDir()
	code, out, errOut := runCmd(t, "inspect", store, f)
	require.Equal(t, 0, code, errOut)
	assert.Regexp(t, `clock +\S+, the wall clock: pass --now`, out)
	assert.Contains(t, out, "microcompact  cleared")
	for l := range strings.SplitSeq(out, "\n") {
		if strings.Contains(l, "cleared   toolu_") {
			assert.True(t, strings.HasSuffix(l, "(wall clock)"), l)
		}
	}
	code, out, errOut = runCmd(t, "inspect", now, store, f)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "(--now)")
	assert.NotContains(t, out, "wall clock")
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
		var got inspection
		if assert.NoError(t, json.Unmarshal([]byte(out), &got), f) {
			checkCategories(t, got, f)
		}
	}
}

func TestRequestBundled(t *testing.T) {
	f := worktrees
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
	src := worktrees
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
	assert.Equal(t, transcript.ChainUnreadable, b.Kind)
	assert.Equal(t, broken, b.Line)
	assert.Positive(t, b.Cut)
	assert.NotEmpty(t, b.Bridge)
	assert.Len(t, got.Dropped, 1)

	code, body, errOut := runCmd(t, "request", now, store, f)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, errOut, fmt.Sprintf("agentctx: %s:%d: ", f, broken))
	assert.Contains(t, errOut, fmt.Sprintf("agentctx: %s:%d: field message.usage.input_tokens", f, dropped))
	assert.Contains(t, errOut, fmt.Sprintf("without the bridge the chain would lose %d records", b.Cut))
	assert.NotContains(t, errOut, ": agentctx:", "a line error's cause carries no second prefix")
	torn := filepath.Join(t.TempDir(), "torn.jsonl")
	require.NoError(t, os.WriteFile(torn, append(append([]byte(nil), before...), `{"type":"user","uuid":"cut`...), 0o644))
	code, _, errOut = runCmd(t, "request", now, store, torn)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, errOut, "torn line")
	assert.NotContains(t, errOut, ": agentctx:", "the torn line's cause carries no second prefix")
	var req struct {
		Messages []json.RawMessage `json:"messages"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &req))
	_, clean, _ := runCmd(t, "request", now, store, worktrees)
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
var small = filepath.Join(repo, "testdata", "sessions", "spotter", "tool-heavy.jsonl")

// TestUsageAndErrors: exit codes, and error messages on stderr that start with one
// "agentctx: " and name flags as the command line spells them, never a Go field.
func TestUsageAndErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
		return p
	}
	array := write("array.json", `[{"type":"user","uuid":"u1"},{"type":"assistant","uuid":"a1"}]`)
	pretty := write("pretty.json", "\xef\xbb\xbf\n[\n  {\"type\": \"user\"},\n  {\"type\": \"assistant\"}\n]\n")
	sub := filepath.Join(dir, "sessions")
	require.NoError(t, os.Mkdir(sub, 0o755))
	tests := []struct {
		name string
		args []string
		code int
		err  []string
	}{
		{"no command", nil, 2, []string{"usage: agentctx COMMAND"}},
		{"unknown command", []string{"frobnicate"}, 2, []string{`unknown command "frobnicate"`, "usage: agentctx COMMAND"}},
		{"no FILE", []string{"inspect"}, 2, []string{"exactly one session FILE", "usage: agentctx inspect [flags] FILE", "agentctx inspect --help"}},
		{"two FILEs", []string{"request", small, small}, 2, []string{"exactly one session FILE, got 2"}},
		{"bad int", []string{"inspect", "--window=x", small}, 2, []string{"invalid value", "--window"}},
		{"unknown flag", []string{"compact", "--frob", small}, 2, []string{"not defined: --frob"}},
		{"bad time", []string{"request", "--now=yesterday", small}, 2, []string{"--now"}},
		{"negative window", []string{"inspect", "--window=-5", small}, 2, []string{"--window must be positive, got -5"}},
		{"zero window", []string{"request", "--window", "0", small}, 2, []string{"--window must be positive, got 0"}},
		{"zero max tokens", []string{"compact", "--max-tokens=0", small}, 2, []string{"--max-tokens must be positive"}},
		{"unknown model", []string{"inspect", "--model=gpt-9", small}, 2, []string{`--model "gpt-9"`, "pass --window"}},
		{"missing FILE", []string{"inspect", "does-not-exist.jsonl"}, 1, []string{"cannot read does-not-exist.jsonl: no such file or directory"}},
		{"directory", []string{"inspect", sub}, 1, []string{sub + " is a directory"}},
		{"directory, request", []string{"request", sub}, 1, []string{sub + " is a directory"}},
		{"JSON array", []string{"inspect", array}, 1, []string{array + " is a JSON array, not JSONL: one record per line expected"}},
		{"indented JSON array", []string{"compact", pretty}, 1, []string{pretty + " is a JSON array, not JSONL"}},
		{"missing tools", []string{"request", "--tools=does-not-exist.json", small}, 1, []string{"--tools: cannot read does-not-exist.json"}},
		{"tools directory", []string{"request", "--tools=" + sub, small}, 1, []string{"--tools: cannot read " + sub + ": is a directory"}},
		{"library error", []string{"request", now, "--window=1000", small}, 1, []string{"agentctx: prompt too long"}},
	}
	if os.Geteuid() != 0 { // root reads any file
		locked := write("locked.jsonl", "{}\n")
		require.NoError(t, os.Chmod(locked, 0))
		tests = append(tests, struct {
			name string
			args []string
			code int
			err  []string
		}{"permission", []string{"inspect", locked}, 1, []string{"cannot read " + locked + ": permission denied"}})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runCmd(t, tt.args...)
			assert.Equal(t, tt.code, code)
			assert.Empty(t, out)
			require.NotEmpty(t, errOut)
			for _, w := range tt.err {
				assert.Contains(t, errOut, w)
			}
			if tt.code == 1 || strings.HasPrefix(errOut, "agentctx:") {
				assert.True(t, strings.HasPrefix(errOut, "agentctx: "), errOut)
			}
			assert.NotContains(t, errOut, "agentctx: agentctx:", "one prefix")
			assert.NotContains(t, errOut, "Config.", "flags, not Go fields")
			assert.NotContains(t, errOut, "torn line")
			assert.NotRegexp(t, `(^|\s)-[a-z]`, strings.ReplaceAll(errOut, "--", ""), "flags are spelled --name")
		})
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
	src := worktrees
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
	checkCategories(t, got, "compacted copy")

	// The manual compaction with instructions differs from the auto one in memory, but a
	// compaction appended to FILE itself reads back the same as one kept in memory.
	code, _, errOut = runCmd(t, "compact", now, "--window=40000", "--instructions=focus on the merges", store, f)
	require.Equal(t, 0, code, errOut)
	code, fromFile, errOut := runCmd(t, "request", now, "--window=40000", store, f)
	require.Equal(t, 0, code, errOut)
	assert.NotEqual(t, inMemory, fromFile)
	assert.Contains(t, fromFile, "focus on the merges")
}

// TestInspectNotSendable: a request that cannot be sent is shown, with the library's error
// under one prefix.
func TestInspectNotSendable(t *testing.T) {
	code, out, errOut := runCmd(t, "inspect", now, "--window=1000", "--store="+t.TempDir(), small)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "NOT SENDABLE: prompt too long")
	assert.NotContains(t, out, "agentctx: agentctx:")
}

// TestCodexRollout runs inspect, request and compact on the hand-made Codex rollout, under a
// name that does not say what it is: inspect and request read it (its base instructions as
// the system prompt, what cannot be mapped reported), compact refuses to write to it, and the
// file is never changed.
func TestCodexRollout(t *testing.T) {
	src := filepath.Join(repo, "testdata", "codex", "all-items.jsonl")
	orig, err := os.ReadFile(src)
	require.NoError(t, err)
	f := filepath.Join(t.TempDir(), "session.jsonl")
	require.NoError(t, os.WriteFile(f, orig, 0o644))
	store := "--store=" + t.TempDir()

	code, out, errOut := runCmd(t, "inspect", now, store, f)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "format     codex (read only")
	assert.Contains(t, out, "unmapped   "+f+":16: field payload: web_search_call has no counterpart")
	assert.Contains(t, out, `rollout item type "thread_rolled_back" is unknown`)
	assert.Contains(t, out, "system/compact_boundary 2")
	assert.Contains(t, out, "compaction block not accepted in a user message")

	code, js, errOut := runCmd(t, "inspect", "--json", now, store, f)
	require.Equal(t, 0, code, errOut)
	var in struct {
		Format   string   `json:"format"`
		Unmapped []string `json:"unmapped"`
		Chain    struct {
			Records int `json:"records"`
		} `json:"chain"`
	}
	require.NoError(t, json.Unmarshal([]byte(js), &in))
	assert.Equal(t, "codex", in.Format)
	assert.Len(t, in.Unmapped, 4)
	assert.Equal(t, 9, in.Chain.Records, "the chain after the second compaction")

	code, body, errOut := runCmd(t, "request", now, store, f)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, errOut, "tool_search_call has no counterpart")
	var req struct {
		System []struct {
			Text string `json:"text"`
		} `json:"system"`
		Messages []struct {
			Role string `json:"role"`
		} `json:"messages"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &req))
	require.Len(t, req.System, 1)
	assert.Equal(t, "You are a coding agent. Keep answers short.", req.System[0].Text)
	assert.Equal(t, "user", req.Messages[0].Role)
	assert.Contains(t, body, `"text":"Another model wrote this summary of the work so far.\nSecond summary: README added."`)
	assert.Contains(t, body, `"tool_use_id":"call_fmt"`)
	assert.NotContains(t, body, "gAAAAAB")

	code, _, errOut = runCmd(t, "compact", now, store, f)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, f+" is an OpenAI Codex rollout")
	out2 := filepath.Join(t.TempDir(), "copy.jsonl")
	code, _, _ = runCmd(t, "compact", now, store, "--out="+out2, f)
	assert.Equal(t, 1, code)
	assert.NoFileExists(t, out2, "no copy is left behind")
	after, err := os.ReadFile(f)
	require.NoError(t, err)
	assert.Equal(t, orig, after, "the rollout is never changed")
}

// TestCodexCorpus runs inspect, request and simulate on the corpus's Codex rollouts; not under the race
// detector (see the root package's codexCorpusFiles).
func TestCodexCorpus(t *testing.T) {
	if raceEnabled {
		t.Skip("Codex corpus tests run without the race detector only")
	}
	root := filepath.Join(repo, "..", "shared", "corpus", "codex")
	files, _ := filepath.Glob(filepath.Join(root, "*", "*.jsonl"))
	if len(files) == 0 {
		t.Skip("../shared/corpus/codex not found; Codex corpus tests skipped")
	}
	for _, f := range files {
		code, out, errOut := runCmd(t, "inspect", now, "--store="+t.TempDir(), f)
		require.Equal(t, 0, code, errOut)
		assert.Contains(t, out, "format     codex")
		code, body, errOut := runCmd(t, "request", now, "--store="+t.TempDir(), f)
		require.Equal(t, 0, code, errOut)
		assert.True(t, json.Valid([]byte(body)), f)
		code, sim, errOut := runCmd(t, "simulate", "--json", f)
		require.Equal(t, 0, code, errOut)
		var res struct {
			Responses int `json:"responses"`
			Totals    struct {
				Turns int `json:"turns"`
			} `json:"totals"`
		}
		require.NoError(t, json.Unmarshal([]byte(sim), &res), f)
		assert.Positive(t, res.Totals.Turns, "%s: simulate replays the rollout's responses", f)
	}
}

// TestAppendAfterFile: compact appends to a file after the line it read, so a line another
// writer (the agent, still running) appended since is a conflict, not a fork.
func TestAppendAfterFile(t *testing.T) {
	f := filepath.Join(t.TempDir(), "s.jsonl")
	require.NoError(t, os.WriteFile(f, []byte(`{"type":"user","uuid":"u1","message":{"role":"user","content":"hi"}}`+"\n"+
		`{"type":"assistant","uuid":"a1","parentUuid":"u1","message":{"id":"m1","role":"assistant","content":[{"type":"text","text":"ok"}]}}`+"\n"), 0o644))
	rec := transcript.Record{Type: transcript.TypeSystem, UUID: "s1", ParentUUID: "a1", Content: json.RawMessage(`"note"`)}
	addr := address{file: f, shown: f}
	err := addr.appendAfter(t.Context(), 1, []transcript.Record{rec})
	require.ErrorIs(t, err, transcript.ErrConflict, "a line was appended after the one read")
	require.NoError(t, addr.appendAfter(t.Context(), 2, []transcript.Record{rec}))
	tr, err := transcript.ReadFile(f, transcript.ReadOptions{})
	require.NoError(t, err)
	require.Equal(t, 3, tr.End)
}

// TestRequestMemoryLimit checks the one-shot memory limit: it follows the size of a regular
// session file, and there is none for what is not one or when GOMEMLIMIT sets one.
func TestRequestMemoryLimit(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "s.jsonl")
	require.NoError(t, os.WriteFile(file, make([]byte, 1000), 0o644))
	tests := []struct {
		name   string
		path   string
		env    string
		want   int64
		wantOK bool
	}{
		{name: "a file", path: file, want: memoryFloor + memoryPerByte*1000, wantOK: true},
		{name: "GOMEMLIMIT set", path: file, env: "100MiB"},
		{name: "a directory", path: dir},
		{name: "no such file", path: filepath.Join(dir, "missing.jsonl")},
		{name: "a database session", path: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("GOMEMLIMIT", tt.env)
			got, ok := memoryLimit(tt.path)
			assert.Equal(t, tt.wantOK, ok)
			assert.Equal(t, tt.want, got)
		})
	}
}

// TestFileBounds: a file a command reads is bounded — a device is refused and a file or a
// pipe over its bound is an error naming it, where --config /dev/zero used to read on until
// the memory ran out.
func TestFileBounds(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, size int) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, bytes.Repeat([]byte("#\n"), size/2), 0o644))
		return p
	}
	config, tools := write("big.toml", maxConfigBytes+2), write("big.json", maxToolsBytes+2)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"config over 1 MiB", []string{"simulate", "--config=" + config, small}, "--config: cannot read " + config + ": larger than 1 MiB"},
		{"tools over 4 MiB", []string{"request", "--tools=" + tools, small}, "--tools: cannot read " + tools + ": larger than 4 MiB"},
	}
	if _, err := os.Stat("/dev/zero"); err == nil {
		tests = append(tests, []struct {
			name string
			args []string
			want string
		}{
			{"config device", []string{"simulate", "--config=/dev/zero", small}, "--config: cannot read /dev/zero: it is a device, not a file"},
			{"tools device", []string{"simulate", "--tools=/dev/zero", small}, "--tools: cannot read /dev/zero: it is a device, not a file"},
			{"session device", []string{"inspect", "/dev/zero"}, "cannot read /dev/zero: it is a device, not a file"},
		}...)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runCmd(t, tt.args...)
			assert.Equal(t, 1, code)
			assert.Empty(t, out)
			assert.Equal(t, "agentctx: "+tt.want+"\n", errOut)
		})
	}

	t.Run("endless pipe", func(t *testing.T) {
		r, w, err := os.Pipe()
		require.NoError(t, err)
		path := fmt.Sprintf("/dev/fd/%d", r.Fd())
		if _, err := os.Stat(path); err != nil {
			r.Close()
			w.Close()
			t.Skip("no /dev/fd here")
		}
		go func() {
			line := []byte("# a comment\n")
			for {
				if _, err := w.Write(line); err != nil {
					w.Close()
					return
				}
			}
		}()
		code, _, errOut := runCmd(t, "simulate", "--config="+path, small)
		r.Close() // the writer fails, and stops
		assert.Equal(t, 1, code)
		assert.Equal(t, "agentctx: --config: cannot read "+path+": larger than 1 MiB\n", errOut)
	})
}
