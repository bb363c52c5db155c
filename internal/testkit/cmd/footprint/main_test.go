package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentctx/agentctx/internal/testkit"
)

// session writes a generated session of the given turns to a file and returns its path.
func session(t *testing.T, turns int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "s.jsonl")
	f, err := os.Create(path)
	require.NoError(t, err)
	w := bufio.NewWriter(f)
	for _, r := range testkit.Generate(turns, testkit.Options{Seed: 1}) {
		line, err := r.MarshalJSON()
		require.NoError(t, err)
		w.Write(append(line, '\n'))
	}
	require.NoError(t, w.Flush())
	require.NoError(t, f.Close())
	return path
}

// TestRunWritesTheRequest checks that footprint writes one request body, the same bytes
// with MarshalJSON and with -stream, and that -phases and -memprofile report on the side
// without changing it.
func TestRunWritesTheRequest(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir()) // the tool-result store goes under the temporary directory
	path := session(t, 30)
	base := []string{"-now", "2026-01-03T00:00:00Z", "-window", "40000000"}
	profile := filepath.Join(t.TempDir(), "heap.pb.gz")
	tests := []struct {
		name       string
		flags      []string
		wantSteps  []string
		wantOutput string // a file that must exist afterwards
	}{
		{name: "MarshalJSON"},
		{name: "WriteTo", flags: []string{"-stream"}},
		{name: "phases", flags: []string{"-phases"}, wantSteps: []string{"start", "read", "prepare", "marshal", "write"}},
		{name: "phases, streamed", flags: []string{"-phases", "-stream"}, wantSteps: []string{"start", "read", "prepare", "write"}},
		{name: "heap profile", flags: []string{"-memprofile", profile}, wantOutput: profile},
	}
	var want []byte
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			require.NoError(t, run(append(append(tt.flags, base...), path), &stdout, &stderr))
			body := stdout.Bytes()
			require.True(t, bytes.HasSuffix(body, []byte("}\n")), "one body and a newline")
			var req struct {
				Messages []json.RawMessage `json:"messages"`
			}
			require.NoError(t, json.Unmarshal(body, &req))
			assert.NotEmpty(t, req.Messages)
			if want == nil {
				want = body
			}
			assert.Equal(t, string(want), string(body), "the same bytes every way")
			_, procErr := os.Stat("/proc/self/status")
			var steps []string
			for line := range strings.Lines(stderr.String()) {
				steps = append(steps, strings.Fields(line)[0])
				assert.Contains(t, line, "live", "the live heap")
				if procErr == nil {
					assert.Contains(t, line, "VmHWM", "the peak resident memory")
				}
			}
			assert.Equal(t, tt.wantSteps, steps)
			if tt.wantOutput != "" {
				fi, err := os.Stat(tt.wantOutput)
				require.NoError(t, err)
				assert.Positive(t, fi.Size())
			}
		})
	}
}

// TestRunRejectsBadArguments checks the errors for arguments that name no session.
func TestRunRejectsBadArguments(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{nil, "want one session FILE, got 0 arguments"},
		{[]string{"a", "b"}, "want one session FILE, got 2 arguments"},
		{[]string{"-now", "yesterday", "s.jsonl"}, "-now: "},
		{[]string{filepath.Join(t.TempDir(), "missing.jsonl")}, "no such file"},
	}
	for _, tt := range tests {
		err := run(tt.args, &bytes.Buffer{}, &bytes.Buffer{})
		if assert.Error(t, err, "%q", tt.args) {
			assert.Contains(t, err.Error(), tt.want, "%q", tt.args)
		}
	}
}
