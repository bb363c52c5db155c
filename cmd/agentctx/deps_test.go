package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLinksNoSDK: agentctx, the binary the README's first command runs, links no provider
// SDK and no database driver, so that its first build compiles the library and little else.
// Neither its packages (in the workspace, and in its module alone, as go install resolves it)
// nor its module alone's graph hold the SDKs, pgx, or this repository's adapters and store:
// agentctx-full links those. Nor does it link net/http (and with it crypto/tls), which no
// command of agentctx needs: a progress bar module brought them in once.
func TestLinksNoSDK(t *testing.T) {
	banned := []string{"github.com/anthropics/", "github.com/openai/", "github.com/jackc/",
		"github.com/agentctx/agentctx/anthropic", "github.com/agentctx/agentctx/openai", "github.com/agentctx/agentctx/postgres",
		"net/http"}
	tests := []struct {
		name string
		env  []string
		args []string
	}{
		{"packages", nil, []string{"list", "-deps", "."}},
		{"packages, its module alone", []string{"GOWORK=off"}, []string{"list", "-deps", "."}},
		{"module graph, its module alone", []string{"GOWORK=off"}, []string{"list", "-m", "all"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command("go", tt.args...)
			cmd.Env = append(os.Environ(), tt.env...)
			out, err := cmd.Output()
			require.NoError(t, err, "go %s", strings.Join(tt.args, " "))
			lines := strings.Fields(string(out))
			require.NotEmpty(t, lines)
			for _, l := range lines {
				for _, b := range banned {
					assert.False(t, strings.HasPrefix(l, b), "go %s lists %s", strings.Join(tt.args, " "), l)
				}
			}
		})
	}
}
