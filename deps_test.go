package agentctx

import (
	"os/exec"
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
