package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentctx/agentctx/provider"
	"github.com/agentctx/agentctx/summarize"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNeedsFull: the light build, asked for what only agentctx-full links (a provider's
// body, a model summarizer, a PostgreSQL session, import, export, schema), fails with 1
// before reading or writing anything, and prints the agentctx-full command line that does
// it: the same arguments, quoted for a shell, a password hidden.
func TestNeedsFull(t *testing.T) {
	const head = "agentctx: %s needs agentctx-full, the build of agentctx that links the provider SDKs and the PostgreSQL driver; run the same command with it:\n" +
		"agentctx:   go run ./cmd/agentctx-full %s\n"
	f := filepath.Join(t.TempDir(), "s.jsonl")
	orig, err := os.ReadFile(small)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(f, orig, 0o644))
	out := filepath.Join(t.TempDir(), "copy.jsonl")
	tests := []struct {
		name       string
		args       []string
		what, line string
	}{
		{"provider anthropic", []string{"request", "--provider=anthropic", f}, "--provider anthropic", "request --provider=anthropic " + f},
		{"provider openai-chat", []string{"request", "--provider", "openai-chat", "--indent", f}, "--provider openai-chat", "request --provider openai-chat --indent " + f},
		{"provider openai-responses", []string{"request", f, "--provider=openai-responses"}, "--provider openai-responses", "request " + f + " --provider=openai-responses"},
		{"summarizer anthropic", []string{"compact", "--summarizer=anthropic", "--instructions", "focus on the parser's tests", "--out=" + out, f},
			"--summarizer anthropic", "compact --summarizer=anthropic --instructions 'focus on the parser'\\''s tests' --out=" + out + " " + f},
		{"summarizer openai", []string{"simulate", "--summarizer=openai", "--summary-model=qwen3:8b", f}, "--summarizer openai", "simulate --summarizer=openai --summary-model=qwen3:8b " + f},
		{"database session", []string{"inspect", "postgres://me:s3cret@localhost/agents#0b5f", "--now=2026-11-30T12:00:00Z"},
			"the PostgreSQL address postgres://me:xxxxx@localhost/agents#0b5f", "inspect 'postgres://me:xxxxx@localhost/agents#0b5f' --now=2026-11-30T12:00:00Z"},
		{"database session, simulate", []string{"simulate", "postgres://localhost/agents#s1"}, "the PostgreSQL address postgres://localhost/agents#s1", "simulate 'postgres://localhost/agents#s1'"},
		{"database copy", []string{"compact", "--out=postgres://me:s3cret@localhost/agents#c", f},
			"--out: the PostgreSQL address postgres://me:xxxxx@localhost/agents#c", "compact '--out=postgres://me:xxxxx@localhost/agents#c' " + f},
		{"import", []string{"import", f, "postgres://localhost/agents"}, "import", "import " + f + " postgres://localhost/agents"},
		{"export", []string{"export", "postgres://localhost/agents#s1", out}, "export", "export 'postgres://localhost/agents#s1' " + out},
		{"schema", []string{"schema"}, "schema", "schema"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runCmd(t, tt.args...)
			assert.Equal(t, 1, code)
			assert.Empty(t, stdout)
			assert.Equal(t, fmt.Sprintf(head, tt.what, tt.line), stderr)
			assert.NotContains(t, stderr, "s3cret")
			assert.NoFileExists(t, out, "nothing is written")
			after, err := os.ReadFile(f)
			require.NoError(t, err)
			assert.Equal(t, orig, after, "FILE is not changed")
		})
	}
	// What the light build has: the default body, the extractive summarizer, help for the
	// commands it lacks.
	for _, args := range [][]string{
		{"request", "--now=2026-11-30T12:00:00Z", "--store=" + t.TempDir(), f},
		{"compact", "--summarizer=extractive", "--now=2026-11-30T12:00:00Z", "--window=40000", "--store=" + t.TempDir(), "--out=" + out, f},
		{"import", "--help"},
		{"help", "schema"},
	} {
		code, _, stderr := runCmd(t, args...)
		assert.Equal(t, 0, code, "%v: %s", args, stderr)
		assert.NotContains(t, stderr, "agentctx-full", args)
	}
	code, usage, _ := runCmd(t, "--help")
	assert.Equal(t, 0, code)
	assert.Contains(t, usage, "import    copy session files into a PostgreSQL database, byte for byte (agentctx-full)\n")
	assert.Regexp(t, `go run\s+\./cmd/agentctx-full COMMAND`, usage)
	code, help, _ := runCmd(t, "request", "--help")
	assert.Equal(t, 0, code)
	assert.Regexp(t, `this build has only the default: agentctx-full\s+links the rest`, help)
}

// TestBuild: the commands use what a Build hands them. A provider's notes go to stderr and
// its body to stdout; a summarizer maker gets --summary-model, and its usage error is the
// command's; a Database's driver opens postgres:// sessions.
func TestBuild(t *testing.T) {
	var gotModel string
	b := Build{
		Name: "agentctx-test",
		Providers: map[string]Provider{
			"openai-chat": func(req provider.Request) (any, []string, error) {
				return map[string]int{"messages": len(req.Messages)}, []string{"a note"}, nil
			},
		},
		Summarizers: map[string]NewSummarizer{
			"openai": func(model string) (summarize.Summarizer, error) {
				gotModel = model
				if model == "" {
					return nil, UsageError{"--summarizer openai needs --summary-model"}
				}
				return summarize.Extractive{}, nil
			},
		},
		Database: fakeDatabase{},
	}
	run := func(args ...string) (int, string, string) { return runWith(t, b, args...) }
	store := "--store=" + t.TempDir()
	code, body, stderr := run("request", "--provider=openai-chat", now, store, small)
	require.Equal(t, 0, code, stderr)
	assert.Regexp(t, `^\{"messages":\d+\}\n$`, body)
	assert.Equal(t, "agentctx: a note\n", stderr)
	code, _, stderr = run("request", "--provider=openai-responses", now, store, small)
	assert.Equal(t, 1, code, "a provider the Build lacks")
	assert.Contains(t, stderr, "agentctx: --provider openai-responses needs agentctx-full")

	code, _, stderr = run("compact", "--summarizer=openai", now, store, small)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "agentctx: --summarizer openai needs --summary-model\nusage: agentctx-test compact [flags] FILE\n")
	code, _, stderr = run("compact", "--summarizer=openai", "--summary-model=m", now, store, "--out="+filepath.Join(t.TempDir(), "c.jsonl"), small)
	assert.Equal(t, 0, code, stderr)
	assert.Equal(t, "m", gotModel)

	code, _, stderr = run("inspect", now, store, "postgres://localhost/agents#s1")
	assert.Equal(t, 1, code)
	assert.Equal(t, "agentctx: postgres://localhost/agents#s1: no server here\n", stderr)
	code, schema, _ := run("schema")
	assert.Equal(t, 0, code)
	assert.Equal(t, "CREATE TABLE t ();\n", schema)
	code, usage, _ := run("--help")
	assert.Equal(t, 0, code)
	assert.Contains(t, usage, "usage: agentctx-test COMMAND")
	assert.NotContains(t, usage, "agentctx-full", "a Build with a database lists its commands plainly")
}

// fakeDatabase is a Database with no server behind it.
type fakeDatabase struct{}

func (fakeDatabase) Open(ctx context.Context, url string) (Store, error) {
	return nil, errors.New("no server here")
}

func (fakeDatabase) Schema() string { return "CREATE TABLE t ();\n" }

func (fakeDatabase) MissingTables(err error) bool { return false }
