package postgres_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/storetest"
	"github.com/agentctx/agentctx/postgres"
	"github.com/agentctx/agentctx/transcript"
)

// serverURL returns the address of the test server, or skips the test when there is none.
func serverURL(t testing.TB) string {
	t.Helper()
	url := os.Getenv("AGENTCTX_POSTGRES_URL")
	if url == "" {
		t.Skip("AGENTCTX_POSTGRES_URL is not set: the PostgreSQL tests need a server (.ci/postgres go test ./postgres starts a throwaway one)")
	}
	return url
}

// openStore opens a Store on the test server with the schema applied, closed at the end of
// the test.
func openStore(t testing.TB) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(t.Context(), serverURL(t))
	require.NoError(t, err)
	t.Cleanup(s.Close)
	_, err = s.Migrate(t.Context())
	require.NoError(t, err)
	return s
}

func TestContract(t *testing.T) {
	appends := 4000
	if raceEnabled {
		appends = 1000 // the same 32 writers and 200 sessions, fewer rounds
	}
	storetest.Run(t, openStore(t), storetest.Options{
		Writers: 32, Sessions: 200, Appends: appends, Timeout: 3 * time.Minute, MaxSessionID: postgres.MaxSessionID,
	})
}

// TestMigrate applies the schema to an empty database schema twice, by Migrate and by the

// schemaStore opens a Store on a database schema of its own, dropped at the end of the test,
// and returns it with a connection outside that schema and the schema's name. With migrate,
// the schema is applied.
func schemaStore(t *testing.T, migrate bool) (*postgres.Store, *pgx.Conn, string) {
	t.Helper()
	ctx := t.Context()
	url := serverURL(t)
	admin, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	t.Cleanup(func() { _ = admin.Close(context.Background()) })
	schema := "agentctx_test_" + strings.ToLower(rand.Text()[:10])
	_, err = admin.Exec(ctx, "CREATE SCHEMA "+schema)
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = admin.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE") })
	s, err := postgres.Open(ctx, url+"&search_path="+schema)
	require.NoError(t, err)
	t.Cleanup(s.Close)
	if migrate {
		_, err = s.Migrate(ctx)
		require.NoError(t, err)
	}
	return s, admin, schema
}

// printed script, and checks that each finds the other's work done.
func TestMigrate(t *testing.T) {
	ctx := t.Context()
	for _, how := range []string{"migrate", "script"} {
		s, admin, schema := schemaStore(t, false)
		var all []int
		for _, m := range postgres.Migrations() {
			all = append(all, m.Version)
		}
		if how == "migrate" {
			applied, err := s.Migrate(ctx)
			require.NoError(t, err)
			assert.Equal(t, all, applied, "a new schema gets every step")
		} else {
			_, err := admin.Exec(ctx, "SET search_path TO "+schema+"; "+postgres.Schema()+" RESET search_path;")
			require.NoError(t, err)
		}
		applied, err := s.Migrate(ctx)
		require.NoError(t, err)
		assert.Empty(t, applied, "%s: nothing left to apply", how)
		end, err := s.Append(ctx, "s", 0, storetest.Record("s", "u1", "hi"))
		require.NoError(t, err, how)
		assert.Equal(t, 1, end)
	}
}

// corpusFiles returns the shared corpus's Claude Code sessions (a fixed sixteenth of them
// under the race detector), or skips the test when the corpus is absent.
func corpusFiles(t testing.TB) []string {
	t.Helper()
	root := filepath.Join("..", "..", "shared", "corpus", "claude-code")
	if fi, err := os.Stat(root); err != nil || !fi.IsDir() {
		t.Skip("../../shared/corpus not found; whole-corpus tests skipped (clone without shared/)")
	}
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".jsonl") {
			files = append(files, path)
		}
		return err
	})
	require.NoError(t, err)
	slices.Sort(files)
	if raceEnabled {
		// The race detector looks for races in the store, not in Prepare, which the root
		// package's race run covers: one session in sixteen.
		var some []string
		for i, f := range files {
			if i%16 == 0 {
				some = append(some, f)
			}
		}
		files = some
	}
	require.NotEmpty(t, files)
	return files
}

// TestCorpus imports every corpus session, exports it back byte for byte, loads it, and checks
// that Prepare on the loaded transcript gives the same request bytes (and the same error,
// the same records to append) as Prepare on the transcript read from the file. Both
// pipelines keep replaced tool results in the database.
func TestCorpus(t *testing.T) {
	ctx := t.Context()
	s := openStore(t)
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	pipeline := func() *agentctx.Pipeline {
		p, err := agentctx.New(agentctx.Config{Model: "claude-sonnet-4-5", ContextWindow: 4_000_000,
			Tokens: agentctx.EstimateCounter{}, Budget: agentctx.BudgetConfig{Store: s},
			Now: func() time.Time { return now }})
		require.NoError(t, err)
		return p
	}
	prepared := 0
	for _, f := range corpusFiles(t) {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		session := storetest.Session(t, filepath.Base(f))
		n, err := s.Import(ctx, session, bytes.NewReader(data))
		require.NoError(t, err, f)
		assert.Equal(t, len(storetest.Lines(data)), n, "%s: lines imported", f)
		if len(data) == 0 { // an empty file stores nothing: no session
			_, err := s.Load(ctx, session, transcript.ReadOptions{})
			assert.ErrorIs(t, err, fs.ErrNotExist, f)
			continue
		}

		var out bytes.Buffer
		_, err = s.Export(ctx, &out, session)
		require.NoError(t, err)
		require.True(t, bytes.Equal(data, out.Bytes()), "%s: the export differs from the file", f)

		fromFile, err := transcript.ReadFile(f, transcript.ReadOptions{})
		require.NoError(t, err)
		fromDB, err := s.Load(ctx, session, transcript.ReadOptions{})
		require.NoError(t, err)
		assert.Equal(t, fromFile.End, fromDB.End, f)
		assert.Equal(t, fromFile.Lines, fromDB.Lines, f)
		require.Equal(t, len(fromFile.Records), len(fromDB.Records), f)

		want, werr := pipeline().Prepare(ctx, agentctx.Input{Records: fromFile.Records})
		got, gerr := pipeline().Prepare(ctx, agentctx.Input{Records: fromDB.Records})
		if werr != nil {
			assert.Equal(t, werr.Error(), fmt.Sprint(gerr), f)
			continue
		}
		require.NoError(t, gerr, f)
		wb, err := want.Request.MarshalJSON()
		require.NoError(t, err)
		gb, err := got.Request.MarshalJSON()
		require.NoError(t, err)
		require.True(t, bytes.Equal(wb, gb), "%s: the request from the database differs from the file's", f)
		assert.Equal(t, len(want.Append), len(got.Append), f)
		prepared++
	}
	assert.Positive(t, prepared)
	t.Logf("%d sessions prepared from the database, byte-identical to their files", prepared)
}

// TestExportImportShapes checks byte-for-byte transfer of files a reader must cope with:
// blank lines, CRLF, a torn last line, a last line without a newline, a bad line, a byte
// order mark; and that an append after a torn last line gets a line of its own, as in a file.
func TestExportImportShapes(t *testing.T) {
	ctx := t.Context()
	s := openStore(t)
	rec := `{"type":"user","uuid":"a","message":{"role":"user","content":"hi"}}`
	tests := []struct {
		name, data string
	}{
		{"plain", rec + "\n"},
		{"blank lines", "\n" + rec + "\n\n\n"},
		{"crlf", rec + "\r\n" + strings.Replace(rec, `"a"`, `"b"`, 1) + "\r\n"},
		{"no final newline", rec},
		{"torn last line", rec + "\n" + `{"type":"assis`},
		{"bad line", "not json\n" + rec + "\n"},
		{"byte order mark", "\xef\xbb\xbf" + rec + "\n"},
		{"nul and invalid utf-8", `{"type":"x","v":"\u0000","w":"` + "\xff" + `"}` + "\n" + rec + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			session := storetest.Session(t, "s")
			n, err := s.Import(ctx, session, strings.NewReader(tt.data))
			require.NoError(t, err)
			var out bytes.Buffer
			_, err = s.Export(ctx, &out, session)
			require.NoError(t, err)
			assert.Equal(t, tt.data, out.String())

			want, err := transcript.Read(strings.NewReader(tt.data), postgres.Name(session), transcript.ReadOptions{})
			require.NoError(t, err)
			got, err := s.Load(ctx, session, transcript.ReadOptions{})
			require.NoError(t, err)
			assert.Equal(t, want, got)
			assert.Equal(t, n, got.End)

			again, err := s.Import(ctx, session, strings.NewReader(tt.data))
			require.NoError(t, err, "importing the same file again")
			assert.Equal(t, n, again)

			// An append, then the same append to a file with the same bytes.
			r := storetest.Record(session, "z", "after")
			_, err = s.Append(ctx, session, n, r)
			require.NoError(t, err)
			path := filepath.Join(t.TempDir(), "f.jsonl")
			require.NoError(t, os.WriteFile(path, []byte(tt.data), 0o644))
			require.NoError(t, transcript.AppendFile(path, transcript.AppendOptions{}, r))
			file, err := os.ReadFile(path)
			require.NoError(t, err)
			out.Reset()
			_, err = s.Export(ctx, &out, session)
			require.NoError(t, err)
			assert.Equal(t, string(file), out.String())
		})
	}
	_, err := s.Export(ctx, &bytes.Buffer{}, storetest.Session(t, "missing"))
	assert.ErrorIs(t, err, fs.ErrNotExist)
	_, err = s.Import(ctx, storetest.Session(t, "conflict"), strings.NewReader(rec+"\n"))
	require.NoError(t, err)
}

// TestHostileInput: session ids PostgreSQL cannot key fail with an error naming the field;
// a 10 MB record round-trips byte for byte; tool results under hostile ids are stored apart.
func TestHostileInput(t *testing.T) {
	ctx := t.Context()
	s := openStore(t)
	bad := []struct{ id, msg string }{
		{"", "session id: empty"},
		{"nul\x00byte", "session id: a NUL byte at offset 3"},
		{"bad\xffutf8", "session id: not valid UTF-8"},
		{strings.Repeat("x", postgres.MaxSessionID+1), "session id: 1025 bytes, longer than the limit of 1024"},
	}
	for _, b := range bad {
		_, err := s.Append(ctx, b.id, 0, storetest.Record(b.id, "u", "x"))
		require.Error(t, err)
		assert.Contains(t, err.Error(), b.msg)
		_, err = s.Load(ctx, b.id, transcript.ReadOptions{})
		assert.ErrorContains(t, err, b.msg)
	}

	session := storetest.Session(t, "big")
	big := storetest.Record(session, "big", strings.Repeat("0123456789abcdef", 10<<20/16))
	end, err := s.Append(ctx, session, 0, big, storetest.Record(session, "next", "small"))
	require.NoError(t, err)
	require.Equal(t, 2, end)
	tr, err := s.Load(ctx, session, transcript.ReadOptions{Strict: true})
	require.NoError(t, err)
	require.Len(t, tr.Records, 2)
	want, err := big.MarshalLine()
	require.NoError(t, err)
	got, err := tr.Records[0].MarshalLine()
	require.NoError(t, err)
	assert.True(t, bytes.Equal(want, got), "the 10 MB record")
	end, err = s.Append(ctx, session, 0, big, storetest.Record(session, "next", "small"))
	require.NoError(t, err, "a retry of the 10 MB batch")
	assert.Equal(t, 2, end)

	_, err = s.Load(ctx, session, transcript.ReadOptions{MaxLineBytes: 1 << 20, Strict: true})
	var le *transcript.LineError
	require.ErrorAs(t, err, &le, "a line over the reader's cap")
	assert.Equal(t, postgres.Name(session), le.File)
	assert.Equal(t, 1, le.Line)
	assert.ErrorIs(t, err, transcript.ErrLineTooLong)

	refs := map[string]bool{}
	for i, id := range []string{"toolu_01", "'; DROP TABLE agentctx_results; --", "../../x", strings.Repeat("i", 1<<20)} {
		contents := [][]byte{[]byte("one"), []byte("two")}
		if i == 0 {
			contents = append(contents, bytes.Repeat([]byte("z"), 10<<20))
		}
		for _, content := range contents {
			ref, err := s.Put(ctx, id, content)
			require.NoError(t, err)
			assert.False(t, refs[ref], "a ref for two contents: %s", ref)
			refs[ref] = true
			again, err := s.Put(ctx, id, content)
			require.NoError(t, err)
			assert.Equal(t, ref, again, "idempotent")
			back, err := s.Result(ctx, ref)
			require.NoError(t, err)
			assert.True(t, bytes.Equal(content, back))
		}
	}
	_, err = s.Result(ctx, "postgres:nothing")
	assert.ErrorIs(t, err, fs.ErrNotExist)
}

// TestLoadMissing: a session with no line is fs.ErrNotExist, as a missing file is.
func TestLoadMissing(t *testing.T) {
	s := openStore(t)
	_, err := s.Load(t.Context(), storetest.Session(t, "none"), transcript.ReadOptions{})
	assert.ErrorIs(t, err, fs.ErrNotExist)
	assert.ErrorContains(t, err, "has no line in the database")
	assert.False(t, errors.Is(err, transcript.ErrConflict))
}

// TestMigrateInvalidBoundaryIndex leaves an invalid index under the boundary index's name, as
// a hand-run CREATE INDEX CONCURRENTLY that failed does, and checks that the step that builds
// the index drops it and builds it again, valid.
func TestMigrateInvalidBoundaryIndex(t *testing.T) {
	ctx := t.Context()
	s, _, _ := schemaStore(t, true)
	var err error

	// Back to the schema before the step, with two boundaries of one session, and a unique
	// index of the name built concurrently: it fails on them and stays, invalid.
	for _, q := range []string{
		`DELETE FROM agentctx_schema_migrations WHERE version = 4`,
		`DROP INDEX agentctx_lines_boundary`,
		`INSERT INTO agentctx_lines (session, seq, line) VALUES ('s', 1, '{"subtype":"compact_boundary"}'), ('s', 2, '{"subtype":"compact_boundary"}')`,
	} {
		_, err = s.Pool().Exec(ctx, q)
		require.NoError(t, err, q)
	}
	_, err = s.Pool().Exec(ctx, `CREATE UNIQUE INDEX CONCURRENTLY agentctx_lines_boundary ON agentctx_lines (session)
		WHERE position('"compact_boundary"'::bytea IN line) > 0`)
	require.Error(t, err, "a unique index over two boundaries of one session")
	index := func() (valid, unique bool) {
		t.Helper()
		err := s.Pool().QueryRow(ctx, `SELECT indisvalid, indisunique FROM pg_index WHERE indexrelid = to_regclass('agentctx_lines_boundary')`).Scan(&valid, &unique)
		require.NoError(t, err)
		return valid, unique
	}
	valid, unique := index()
	require.False(t, valid, "the failed build left an invalid index")
	require.True(t, unique)

	applied, err := s.Migrate(ctx)
	require.NoError(t, err)
	assert.Equal(t, []int{4}, applied)
	valid, unique = index()
	assert.True(t, valid, "the step built the index again")
	assert.False(t, unique, "the step's own index")
}

// TestMigrateDuringBoundaryIndexBuild starts a hand-run CREATE INDEX CONCURRENTLY of the
// boundary index and holds it waiting on a writer's open transaction: the step that builds
// the index fails, naming the build, instead of dropping the index being built; once the
// build is done, the step finds the index and records itself.
func TestMigrateDuringBoundaryIndexBuild(t *testing.T) {
	ctx := t.Context()
	s, _, _ := schemaStore(t, true)
	var err error
	for _, q := range []string{`DELETE FROM agentctx_schema_migrations WHERE version = 4`, `DROP INDEX agentctx_lines_boundary`} {
		_, err = s.Pool().Exec(ctx, q)
		require.NoError(t, err, q)
	}

	writer, err := s.Pool().Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = writer.Rollback(context.WithoutCancel(ctx)) }()
	_, err = writer.Exec(ctx, `INSERT INTO agentctx_lines (session, seq, line) VALUES ('s', 1, '{"subtype":"compact_boundary"}')`)
	require.NoError(t, err)
	built := make(chan error, 1)
	go func() {
		_, err := s.Pool().Exec(ctx, `CREATE INDEX CONCURRENTLY agentctx_lines_boundary ON agentctx_lines (session, seq)
			WHERE position('"compact_boundary"'::bytea IN line) > 0`)
		built <- err
	}()
	require.Eventually(t, func() bool {
		var n int
		err := s.Pool().QueryRow(ctx, `SELECT count(*) FROM pg_stat_progress_create_index WHERE index_relid = to_regclass('agentctx_lines_boundary')`).Scan(&n)
		return err == nil && n == 1
	}, time.Minute, 10*time.Millisecond, "the build waits on the writer")

	_, err = s.Migrate(ctx)
	require.ErrorContains(t, err, "is being built")
	require.NoError(t, writer.Commit(ctx))
	require.NoError(t, <-built)
	applied, err := s.Migrate(ctx)
	require.NoError(t, err)
	assert.Equal(t, []int{4}, applied)
	var valid bool
	require.NoError(t, s.Pool().QueryRow(ctx, `SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass('agentctx_lines_boundary')`).Scan(&valid))
	assert.True(t, valid)
}
