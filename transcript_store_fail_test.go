//go:build linux

package agentctx_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentctx/agentctx/internal/storetest"
	"github.com/agentctx/agentctx/transcript"
)

// TestDirStorePartialBatch: a batch whose write fails part-way (here a file size limit, as a
// full disk would) is undone, so a Load never sees part of it and the retry after the limit
// is lifted stores it whole. The limit is a process's, so the write runs in a child process.
func TestDirStorePartialBatch(t *testing.T) {
	if root := os.Getenv("AGENTCTX_FSIZE_ROOT"); root != "" {
		partialBatchChild(t, root)
		return
	}
	root := t.TempDir()
	store := transcript.DirStore{Root: root}
	end, err := store.Append(t.Context(), "s", 0, storetest.Record("s", "a", "one"))
	require.NoError(t, err)
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestDirStorePartialBatch$", "-test.count=1")
	cmd.Env = append(os.Environ(), "AGENTCTX_FSIZE_ROOT="+root)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "child: %s", out)
	tr, err := store.Load(t.Context(), "s", transcript.ReadOptions{})
	require.NoError(t, err)
	require.Len(t, tr.Records, 1, "no record of the failed batch is in the file")
	require.Equal(t, end, tr.End)
	end2, err := store.Append(t.Context(), "s", end, storetest.Record("s", "b", "two"), storetest.Record("s", "c", strings.Repeat("x", 4096)))
	require.NoError(t, err, "the retry matches the file as it was before the failed write")
	require.Equal(t, end+2, end2)
}

// partialBatchChild appends a batch that the file size limit cuts after its first record.
func partialBatchChild(t *testing.T, root string) {
	store := transcript.DirStore{Root: root}
	fi, err := os.Stat(filepath.Join(root, filepath.Base(store.Path("s"))))
	require.NoError(t, err)
	signal.Ignore(syscall.SIGXFSZ)
	lim := syscall.Rlimit{Cur: uint64(fi.Size()) + 300, Max: uint64(fi.Size()) + 300}
	var old syscall.Rlimit
	require.NoError(t, syscall.Getrlimit(syscall.RLIMIT_FSIZE, &old))
	lim.Max = old.Max
	require.NoError(t, syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim))
	_, err = store.Append(t.Context(), "s", 1, storetest.Record("s", "b", "two"), storetest.Record("s", "c", strings.Repeat("x", 4096)))
	require.Error(t, err, "the write is cut short by the size limit")
}

// TestDirStoreEmptyFile: a first append whose record cannot be encoded creates no session.
func TestDirStoreEmptyFile(t *testing.T) {
	store := transcript.DirStore{Root: t.TempDir()}
	bad := storetest.Record("s", "a", "one")
	bad.Extra = map[string]json.RawMessage{"x": json.RawMessage("{not json")}
	_, err := store.Append(t.Context(), "s", 0, bad)
	require.Error(t, err)
	_, err = store.Load(t.Context(), "s", transcript.ReadOptions{})
	require.ErrorIs(t, err, os.ErrNotExist)
	require.NoError(t, os.WriteFile(store.Path("s"), nil, 0o644))
	_, err = store.Load(t.Context(), "s", transcript.ReadOptions{})
	require.ErrorIs(t, err, os.ErrNotExist, "an empty file holds no session")
}
