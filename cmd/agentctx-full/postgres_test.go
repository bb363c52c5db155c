package main

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentctx/agentctx/postgres"
)

// database returns the test server's address, or skips the test when there is none.
func database(t *testing.T) string {
	t.Helper()
	u := os.Getenv("AGENTCTX_POSTGRES_URL")
	if u == "" {
		t.Skip("AGENTCTX_POSTGRES_URL is not set: the CLI's PostgreSQL tests need a server (.ci/postgres go test ./cmd/agentctx-full starts a throwaway one)")
	}
	return u
}

// TestImportExport imports every bundled session, exports each back byte for byte (to a
// file and to standard output), and checks that request prints the same body for the
// database session as for its file.
func TestImportExport(t *testing.T) {
	db := database(t)
	dir := t.TempDir()
	run := strings.ToLower(rand.Text()[:8])
	store := "--store=" + filepath.Join(dir, "store")
	for i, f := range sessions(t) {
		session := "cli-" + run + "-" + filepath.Base(f)
		addr := db + "#" + url.PathEscape(session)
		code, out, errOut := runCmd(t, "import", f, addr)
		require.Equal(t, 0, code, errOut)
		assert.Contains(t, out, "imported "+f+" as session "+session)
		code, out, errOut = runCmd(t, "import", f, addr)
		require.Equal(t, 0, code, errOut)
		assert.Contains(t, out, "already in the database", "importing the same file again")

		want, err := os.ReadFile(f)
		require.NoError(t, err)
		code, out, errOut = runCmd(t, "export", addr)
		require.Equal(t, 0, code, errOut)
		assert.True(t, out == string(want), "%s: export to stdout differs from the file", f)
		exported := filepath.Join(dir, "export.jsonl")
		os.Remove(exported)
		code, _, errOut = runCmd(t, "export", addr, exported)
		require.Equal(t, 0, code, errOut)
		got, err := os.ReadFile(exported)
		require.NoError(t, err)
		assert.True(t, string(got) == string(want), "%s: export to a file differs from the file", f)
		code, _, errOut = runCmd(t, "export", addr, exported)
		assert.Equal(t, 1, code, "export never overwrites")
		assert.Contains(t, errOut, "file exists")

		code, fromFile, errOut := runCmd(t, "request", now, store, f)
		code2, fromDB, errOut2 := runCmd(t, "request", now, store, addr)
		assert.Equal(t, code, code2, "%s: %s / %s", f, errOut, errOut2)
		assert.Equal(t, fromFile, fromDB, f)
		if i == 0 {
			code, out, errOut = runCmd(t, "inspect", now, store, addr)
			require.Equal(t, 0, code, errOut)
			assert.Contains(t, out, "#"+url.PathEscape(session))
			// simulate reads a database session as it reads its file.
			code, simFile, errOut := runCmd(t, "simulate", "--json", f)
			require.Equal(t, 0, code, errOut)
			code, simDB, errOut := runCmd(t, "simulate", "--json", addr)
			require.Equal(t, 0, code, errOut)
			assert.JSONEq(t, simFile, simDB, "%s: simulate from the database", f)
		}
	}
	// Without #SESSION, each file goes under its file name.
	f := sessions(t)[0]
	tmp := filepath.Join(dir, "cli-"+run+"-byname.jsonl")
	data, err := os.ReadFile(f)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(tmp, data, 0o644))
	code, out, errOut := runCmd(t, "import", tmp, db)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "as session cli-"+run+"-byname:")
	code, out, _ = runCmd(t, "export", db+"#cli-"+run+"-byname")
	require.Equal(t, 0, code)
	assert.Equal(t, string(data), out)
}

// TestCompactDatabase compacts a database session in place and into a copy, as compact does
// a file.
func TestCompactDatabase(t *testing.T) {
	db := database(t)
	src := worktrees
	orig, err := os.ReadFile(src)
	require.NoError(t, err)
	run := strings.ToLower(rand.Text()[:8])
	addr, copyAddr := db+"#compact-"+run, db+"#compact-copy-"+run
	store := "--store=" + t.TempDir()
	code, _, errOut := runCmd(t, "import", src, addr)
	require.Equal(t, 0, code, errOut)

	code, stdout, errOut := runCmd(t, "compact", now, "--window=40000", "--out="+copyAddr, store, addr)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, stdout, "compacted postgres://")
	_, unchanged, _ := runCmd(t, "export", addr)
	assert.Equal(t, string(orig), unchanged, "--out leaves the session untouched")
	_, copied, _ := runCmd(t, "export", copyAddr)
	assert.True(t, strings.HasPrefix(copied, string(orig)), "the copy starts with the session's bytes")
	assert.Greater(t, len(copied), len(orig))
	code, _, errOut = runCmd(t, "compact", now, "--window=40000", "--out="+copyAddr, store, addr)
	assert.Equal(t, 1, code, "--out never writes into a session that has lines")
	assert.Contains(t, errOut, "already holds another session")

	code, _, errOut = runCmd(t, "compact", now, "--window=40000", store, addr)
	require.Equal(t, 0, code, errOut)
	_, compacted, _ := runCmd(t, "export", addr)
	assert.True(t, strings.HasPrefix(compacted, string(orig)), "compact appends, never rewrites")
	code, js, errOut := runCmd(t, "inspect", "--json", now, "--window=40000", store, addr)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, js, `"compactions": 1,`)
}

// TestDatabaseErrors: a missing session, an address without a session, a bad address, a
// file where an address is wanted, and a password kept out of messages.
func TestDatabaseErrors(t *testing.T) {
	db := database(t)
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"inspect", db + "#no-such-session-" + rand.Text()}, 1, "no such session in the database"},
		{[]string{"request", db}, 1, "names no session: add #SESSION-ID"},
		{[]string{"import", "a.jsonl", "b.jsonl"}, 2, "must be a postgres:// ADDRESS"},
		{[]string{"import", "a.jsonl", "b.jsonl", db + "#one"}, 2, "names one session, for 2 FILEs"},
		{[]string{"export", "a.jsonl"}, 2, "must be a postgres:// ADDRESS#SESSION"},
		{[]string{"export", db}, 1, "names no session"},
		{[]string{"inspect", "postgres://me:s3cret@/nodb?host=/nonexistent#x"}, 1, "me:xxxxx@"},
		{[]string{"schema", "extra"}, 2, "schema takes no arguments"},
	}
	for _, tt := range tests {
		code, _, errOut := runCmd(t, tt.args...)
		assert.Equal(t, tt.code, code, "%v: %s", tt.args, errOut)
		assert.Contains(t, errOut, tt.want, tt.args)
		assert.NotContains(t, errOut, "s3cret", tt.args)
	}
	code, out, _ := runCmd(t, "schema")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "CREATE TABLE agentctx_lines")
}

// TestImportResume: an import cut short (here its first chunk stored by hand) is completed by
// running agentctx import again, byte for byte.
func TestImportResume(t *testing.T) {
	db := database(t)
	var lines [][]byte // 10 lines of 1 MiB: Import INSERTs lines 1-8, then 9-10
	for i := range 10 {
		lines = append(lines, fmt.Appendf(nil, `{"type":"user","uuid":"u%d","x":"%s"}`+"\n", i, strings.Repeat("x", 1<<20)))
	}
	f := filepath.Join(t.TempDir(), "s.jsonl")
	require.NoError(t, os.WriteFile(f, bytes.Join(lines, nil), 0o644))
	st, err := postgres.Open(t.Context(), db)
	require.NoError(t, err)
	defer st.Close()
	_, err = st.Migrate(t.Context())
	require.NoError(t, err)
	session := "resume-" + strings.ToLower(rand.Text()[:8]) // what an import killed after its first INSERT leaves:
	_, err = st.Import(t.Context(), session, bytes.NewReader(bytes.Join(lines[:8], nil)))
	require.NoError(t, err)
	code, _, errOut := runCmd(t, "import", f, db+"#"+session)
	require.Equal(t, 0, code, errOut)
	code, out, errOut := runCmd(t, "export", db+"#"+session)
	require.Equal(t, 0, code, errOut)
	assert.True(t, out == string(bytes.Join(lines, nil)), "the completed import exports the file byte for byte")
}
