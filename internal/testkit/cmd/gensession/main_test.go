package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentctx/agentctx/internal/testkit"
	"github.com/agentctx/agentctx/transcript"
)

// TestRunWritesTheSession checks that the file gensession writes reads back as the generated
// session, record for record, and that stdout gets the same bytes as -o.
func TestRunWritesTheSession(t *testing.T) {
	for _, tc := range []struct {
		turns int
		seed  uint64
	}{{1, 1}, {20, 1}, {20, 7}} {
		path := filepath.Join(t.TempDir(), "s.jsonl")
		require.NoError(t, run([]string{"-turns", itoa(tc.turns), "-seed", itoa(int(tc.seed)), "-o", path}, nil))
		tr, err := transcript.ReadFile(path, transcript.ReadOptions{Strict: true})
		require.NoError(t, err)
		want := testkit.Generate(tc.turns, testkit.Options{Seed: tc.seed})
		require.Len(t, tr.Records, len(want), "turns %d seed %d", tc.turns, tc.seed)
		for i := range want {
			assert.Equal(t, want[i].UUID, tr.Records[i].UUID, "record %d", i+1)
		}
		var stdout bytes.Buffer
		require.NoError(t, run([]string{"-turns", itoa(tc.turns), "-seed", itoa(int(tc.seed))}, &stdout))
		file, err := os.ReadFile(path)
		require.NoError(t, err)
		assert.Equal(t, file, stdout.Bytes(), "turns %d seed %d: stdout and -o differ", tc.turns, tc.seed)
	}
}

// TestRunRejectsBadArguments checks the errors for arguments that name no session.
func TestRunRejectsBadArguments(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-turns", "0"}, "-turns must be positive, got 0"},
		{[]string{"-turns", "-3"}, "-turns must be positive, got -3"},
		{[]string{"extra"}, `unexpected argument "extra"`},
		{[]string{"-turns", "x"}, "invalid value"},
		{[]string{"-o", filepath.Join(t.TempDir(), "missing", "s.jsonl")}, "no such file or directory"},
	} {
		err := run(tc.args, &bytes.Buffer{})
		require.Error(t, err, "%v", tc.args)
		assert.Contains(t, err.Error(), tc.want, "%v", tc.args)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
