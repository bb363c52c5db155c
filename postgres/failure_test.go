package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentctx/agentctx/internal/storetest"
	"github.com/agentctx/agentctx/postgres"
	"github.com/agentctx/agentctx/transcript"
)

// clearError reports whether err is an error a writer may retry after a failure of the
// server or the connection, and fails the test unless it says where it happened: the package
// and the session.
func clearError(t *testing.T) func(error) bool {
	return func(err error) bool {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return false
		}
		msg := err.Error()
		assert.True(t, strings.HasPrefix(msg, "postgres: ") && strings.Contains(msg, "session"), "an unclear error: %v", err)
		return true
	}
}

// TestWriterKilled: a writer's transaction holds the next line of a session when its backend
// is killed. Nothing of it is stored, a Store append waiting for the same line goes on once
// it is gone, and the session holds exactly the acknowledged records.
func TestWriterKilled(t *testing.T) {
	ctx := t.Context()
	s := openStore(t)
	session := storetest.Session(t, "s")
	end, err := s.Append(ctx, session, 0, storetest.Record(session, "u1", "first"))
	require.NoError(t, err)

	victim, err := pgx.Connect(ctx, serverURL(t))
	require.NoError(t, err)
	defer victim.Close(context.Background())
	tx, err := victim.Begin(ctx)
	require.NoError(t, err)
	line := `{"type":"user","uuid":"killed","message":{"role":"user","content":"never committed"}}`
	_, err = tx.Exec(ctx, `INSERT INTO agentctx_lines (session, seq, uuid, line) VALUES ($1, $2, $3, $4)`, session, end+1, []byte("killed"), []byte(line))
	require.NoError(t, err)

	waiting := make(chan error, 1)
	go func() {
		_, err := s.Append(ctx, session, end, storetest.Record(session, "u2", "second"))
		waiting <- err
	}()
	// The append blocks on the victim's uncommitted key until the victim is gone.
	require.Eventually(t, func() bool {
		var n int
		err := s.Pool().QueryRow(ctx, `SELECT count(*) FROM pg_locks WHERE NOT granted`).Scan(&n)
		return err == nil && n > 0
	}, 30*time.Second, 10*time.Millisecond, "the second append waits for the victim's lock")

	_, err = s.Pool().Exec(ctx, `SELECT pg_terminate_backend($1)`, victim.PgConn().PID())
	require.NoError(t, err)
	require.NoError(t, <-waiting, "the waiting append succeeds once the victim is gone")
	_, err = tx.Exec(ctx, `SELECT 1`)
	assert.Error(t, err, "the victim's connection is gone")

	tr, err := s.Load(ctx, session, transcript.ReadOptions{Strict: true})
	require.NoError(t, err)
	assert.Len(t, tr.Records, 2)
	assert.Equal(t, "u2", tr.Records[1].UUID, "nothing of the killed writer")
}

// TestAppendDeadline cuts appends of a 512 KB record short with deadlines from a microsecond
// on, doubling: each fails with a deadline error naming the session, or succeeds; the
// same append retried without a deadline then succeeds, and the record is stored once.
func TestAppendDeadline(t *testing.T) {
	ctx := t.Context()
	s := openStore(t)
	session := storetest.Session(t, "s")
	end, cut := 0, 0
	const n = 20
	for i := range n {
		r := storetest.Record(session, fmt.Sprintf("u%02d", i), strings.Repeat(fmt.Sprint(i%10), 512<<10))
		dctx, cancel := context.WithTimeout(ctx, time.Duration(1<<i)*time.Microsecond)
		got, err := s.Append(dctx, session, end, r)
		cancel()
		if err != nil {
			cut++
			assert.True(t, errors.Is(err, context.DeadlineExceeded) || pgconn.Timeout(err), "append %d: %v", i, err)
			assert.Contains(t, err.Error(), "postgres: append to session")
			got, err = s.Append(ctx, session, end, r)
			require.NoError(t, err, "append %d retried", i)
		}
		require.Equal(t, end+1, got, "append %d", i)
		end = got
	}
	t.Logf("%d of %d appends cut short by their deadline", cut, n)
	assert.Positive(t, cut)
	tr, err := s.Load(ctx, session, transcript.ReadOptions{Strict: true})
	require.NoError(t, err)
	require.Len(t, tr.Records, n)
	for i, r := range tr.Records {
		assert.Equal(t, fmt.Sprintf("u%02d", i), r.UUID)
	}
}

// TestConnectionDropped runs the concurrent writers while the server kills the store's
// connections, two every 100 milliseconds: writers retry the same append after an error, and every
// acknowledged record is stored once, in order, with nothing else.
func TestConnectionDropped(t *testing.T) {
	app := "agentctx_drop_" + strings.ToLower(storetest.Session(t, "")[len(t.Name())+2:])
	s, err := postgres.Open(t.Context(), serverURL(t)+"&application_name="+app)
	require.NoError(t, err)
	defer s.Close()
	admin := openStore(t)
	killed, appends := 0, 300
	if raceEnabled {
		appends = 100
	}
	storetest.TestConcurrent(t, s, storetest.Options{
		Writers: 16, Sessions: 40, Appends: appends, Timeout: 2 * time.Minute,
		Transient: clearError(t),
		Text: func(w, n int) string {
			if n%10 == 0 {
				return strings.Repeat("big ", 64<<10) // a 256 KB record: longer statements to cut
			}
			return fmt.Sprintf("writer %d, append %d", w, n)
		},
		During: func(ctx context.Context) error {
			for {
				select {
				case <-ctx.Done():
					return nil
				case <-time.After(100 * time.Millisecond):
				}
				var n int
				err := admin.Pool().QueryRow(context.Background(),
					`SELECT count(pg_terminate_backend(pid)) FROM (SELECT pid FROM pg_stat_activity WHERE application_name = $1 LIMIT 2) AS a`, app).Scan(&n)
				if err != nil {
					return err
				}
				killed += n
			}
		},
	})
	t.Logf("%d connections killed", killed)
	assert.Positive(t, killed)
}

// TestServerRestart runs the concurrent writers while the server restarts: the pool
// reconnects, writers retry, and every acknowledged record is stored once, in order. It
// restarts the shared test server, so it runs only when AGENTCTX_POSTGRES_RESTART is set (as
// .ci/run does, alone) and AGENTCTX_POSTGRES_CTL says how to run pg_ctl.
func TestServerRestart(t *testing.T) {
	ctl := os.Getenv("AGENTCTX_POSTGRES_CTL")
	if os.Getenv("AGENTCTX_POSTGRES_RESTART") == "" || ctl == "" {
		t.Skip("AGENTCTX_POSTGRES_RESTART and AGENTCTX_POSTGRES_CTL are not both set: the restart test restarts the server, so it runs alone (.ci/run runs it)")
	}
	s := openStore(t)
	restarts := 0
	storetest.TestConcurrent(t, s, storetest.Options{
		Writers: 16, Sessions: 40, Appends: 1500, Timeout: 3 * time.Minute,
		Transient: clearError(t),
		During: func(ctx context.Context) error {
			for restarts < 2 {
				select {
				case <-ctx.Done():
					return nil
				case <-time.After(300 * time.Millisecond):
				}
				// The restarted server inherits pg_ctl's output: a file, not a pipe that
				// would keep the command from returning.
				out, err := os.CreateTemp(t.TempDir(), "pg_ctl")
				if err != nil {
					return err
				}
				args := append(strings.Fields(ctl), "restart", "-m", "fast", "-w", "-t", "60")
				cmd := exec.Command(args[0], args[1:]...)
				cmd.Stdout, cmd.Stderr = out, out
				err = cmd.Run()
				out.Close()
				if err != nil {
					log, _ := os.ReadFile(out.Name())
					return fmt.Errorf("pg_ctl restart: %v\n%s", err, log)
				}
				restarts++
			}
			return nil
		},
	})
	assert.Equal(t, 2, restarts, "the writers finished before both restarts")
}
