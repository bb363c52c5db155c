package agentctx

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRootImportsNoSDK checks that the root package pulls in neither provider SDK nor pgx:
// the adapters and the PostgreSQL store are subpackages, and a user who imports only the
// root pays nothing for them.
func TestRootImportsNoSDK(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	require.NoError(t, err)
	for dep := range strings.Lines(string(out)) {
		dep = strings.TrimSpace(dep)
		for _, sdk := range []string{"github.com/anthropics/", "github.com/openai/", "github.com/agentctx/agentctx/anthropic", "github.com/agentctx/agentctx/openai", "github.com/jackc/", "github.com/agentctx/agentctx/postgres"} {
			assert.False(t, strings.HasPrefix(dep, sdk), "the root package depends on %s", dep)
		}
	}
}

// TestHostModuleGraph builds what a host sees: a module of its own that requires only the root
// module and builds a program calling New. Its module graph (go list -m all, minimal version
// selection over our go.mod) holds no provider SDK, database driver, TOML or terminal
// library: the adapters, the store and the command are modules of their own.
func TestHostModuleGraph(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module of its own with the go command")
	}
	root, err := filepath.Abs(".")
	require.NoError(t, err)
	dir := t.TempDir()
	gomod := "module example.com/host\n\ngo 1.26.0\n\nrequire github.com/agentctx/agentctx v0.0.0-00010101000000-000000000000\n\nreplace github.com/agentctx/agentctx => " + root + "\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte(gomod), 0o644))
	sum, err := os.ReadFile("go.sum")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.sum"), sum, 0o644))
	main := "package main\n\nimport \"github.com/agentctx/agentctx\"\n\nfunc main() {\n\tif _, err := agentctx.New(agentctx.Config{ContextWindow: 32_000}); err != nil {\n\t\tpanic(err)\n\t}\n}\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.go"), []byte(main), 0o644))
	run := func(args ...string) string {
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "go %s: %s", strings.Join(args, " "), out)
		return string(out)
	}
	run("build", "-o", filepath.Join(dir, "host"), ".")
	graph := run("list", "-m", "all")
	for _, banned := range []string{"github.com/anthropics/", "github.com/openai/", "github.com/jackc/", "github.com/BurntSushi/toml", "github.com/schollz/progressbar", "golang.org/x/term", "github.com/agentctx/agentctx/"} {
		assert.NotContains(t, graph, banned, "a host requiring only the root module gets %s in its module graph", banned)
	}
	t.Logf("go list -m all:\n%s", graph)
}
