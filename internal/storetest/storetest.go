// Package storetest checks an [transcript.Store] against the interface's contract:
// positioned appends, typed conflicts, idempotent retries, ordering under concurrent writers
// and hostile session ids. The root package runs it on a DirStore, agentctx/postgres on a
// PostgreSQL server.
package storetest

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentctx/agentctx/transcript"
)

// Options sizes the checks. The zero value is a small run for a local store.
type Options struct {
	// Writers is the number of concurrent writers in TestConcurrent. Zero: 8.
	Writers int
	// Sessions is the number of sessions they share. Zero: 20.
	Sessions int
	// Appends is the number of acknowledged appends the writers make in all. Zero: 400.
	Appends int
	// Timeout bounds TestConcurrent. Zero: two minutes.
	Timeout time.Duration
	// MaxSessionID is the longest session id the store accepts, in bytes; a longer one must
	// fail with an error naming the session id field. Zero: any length is accepted.
	MaxSessionID int
	// Transient, when set, names the errors TestConcurrent's writers retry, repeating the
	// same Append or Load, instead of failing: the errors of a dropped connection or a
	// restarting server. Nil: every error but a conflict fails the test.
	Transient func(error) bool
	// During, when set, runs while TestConcurrent's writers write (it drops connections,
	// restarts the server); its context ends when they have made their appends, and it
	// must return then.
	During func(ctx context.Context) error
	// Text returns the prompt of writer w's n-th record. Nil: a short line.
	Text func(w, n int) string
}

// Run runs every check on the store.
func Run(t *testing.T, store transcript.Store, o Options) {
	t.Run("Positions", func(t *testing.T) { TestPositions(t, store) })
	t.Run("Retry", func(t *testing.T) { TestRetry(t, store) })
	t.Run("Hostile", func(t *testing.T) { TestHostile(t, store, o) })
	t.Run("Concurrent", func(t *testing.T) { TestConcurrent(t, store, o) })
}

// Session returns a session id unique to this run, so that runs against a shared database
// do not meet.
func Session(t testing.TB, name string) string {
	return fmt.Sprintf("%s-%s-%s", strings.ReplaceAll(t.Name(), "/", "."), name, rand.Text()[:8])
}

// Record returns a user record with the given uuid and prompt text.
func Record(session, uuid, text string) transcript.Record {
	return transcript.Record{Type: transcript.TypeUser, UUID: uuid, SessionID: session, Timestamp: "2026-01-02T03:04:05.000Z",
		Message: &transcript.Message{Role: transcript.RoleUser, StringContent: true, Content: []transcript.Block{&transcript.Text{Text: text}}}}
}

// uuids returns the uuids of a transcript's records in order.
func uuids(tr *transcript.File) []string {
	out := make([]string, len(tr.Records))
	for i, r := range tr.Records {
		out[i] = r.UUID
	}
	return out
}

// TestPositions checks Load and positioned Append on one session: a missing session, the
// first append, appends after the end, a stale position, a position past the end, a negative
// one and an empty batch.
func TestPositions(t *testing.T, store transcript.Store) {
	ctx := t.Context()
	s := Session(t, "s")
	_, err := store.Load(ctx, s, transcript.ReadOptions{})
	require.ErrorIs(t, err, os.ErrNotExist, "a session with no line")

	r1, r2, r3 := Record(s, "u1", "one"), Record(s, "u2", "two"), Record(s, "u3", "three")
	steps := []struct {
		name    string
		after   int
		records []transcript.Record
		end     int // want: 0 when a conflict is wanted
		conEnd  int // the conflict's End
	}{
		{"first", 0, []transcript.Record{r1}, 1, 0},
		{"batch after the end", 1, []transcript.Record{r2, r3}, 3, 0},
		{"stale position", 1, []transcript.Record{Record(s, "u4", "four")}, 0, 3},
		{"past the end", 7, []transcript.Record{Record(s, "u4", "four")}, 0, 3},
		{"new session position on an old session", 0, []transcript.Record{Record(s, "u4", "four")}, 0, 3},
		{"empty batch", 3, nil, 3, 0},
	}
	for _, st := range steps {
		end, err := store.Append(ctx, s, st.after, st.records...)
		if st.end == 0 {
			ce, ok := errors.AsType[*transcript.ConflictError](err)
			require.True(t, ok, "%s: want a *ConflictError, got %v", st.name, err)
			assert.ErrorIs(t, err, transcript.ErrConflict, st.name)
			assert.Equal(t, transcript.ConflictError{Session: s, After: st.after, End: st.conEnd}, *ce, st.name)
			continue
		}
		require.NoError(t, err, st.name)
		assert.Equal(t, st.end, end, st.name)
	}
	_, err = store.Append(ctx, s, -1, Record(s, "u5", "five"))
	assert.Error(t, err, "a negative position")

	tr, err := store.Load(ctx, s, transcript.ReadOptions{Strict: true})
	require.NoError(t, err)
	assert.Equal(t, []string{"u1", "u2", "u3"}, uuids(tr))
	assert.Equal(t, []int{1, 2, 3}, tr.Lines)
	assert.Equal(t, 3, tr.End)
	for i, r := range []transcript.Record{r1, r2, r3} {
		want, err := r.MarshalLine()
		require.NoError(t, err)
		got, err := tr.Records[i].MarshalLine()
		require.NoError(t, err)
		assert.Equal(t, string(want), string(got), "record %d", i)
	}
}

// TestRetry checks that a batch appended again after it was stored is stored once, whether
// the retry names the position the first attempt named or a later one, and that a batch
// matching only in part is a conflict.
func TestRetry(t *testing.T, store transcript.Store) {
	ctx := t.Context()
	s := Session(t, "s")
	r1, r2, r3 := Record(s, "u1", "one"), Record(s, "u2", "two"), Record(s, "u3", "three")
	cases := []struct {
		name    string
		after   int
		records []transcript.Record
		end     int // 0: a conflict
	}{
		{"first attempt", 0, []transcript.Record{r1, r2}, 2},
		{"retry at the same position", 0, []transcript.Record{r1, r2}, 2},
		{"retry of the batch's tail", 1, []transcript.Record{r2}, 2},
		{"retry of the batch's head", 0, []transcript.Record{r1}, 1},
		{"another writer's batch", 2, []transcript.Record{r3}, 3},
		{"retry after another writer appended", 0, []transcript.Record{r1, r2}, 2},
		{"same uuid, other bytes", 3, []transcript.Record{Record(s, "u3", "three, edited")}, 4},
		{"partly stored", 2, []transcript.Record{r3, Record(s, "u9", "nine")}, 0},
	}
	for _, c := range cases {
		end, err := store.Append(ctx, s, c.after, c.records...)
		if c.end == 0 {
			assert.ErrorIs(t, err, transcript.ErrConflict, c.name)
			continue
		}
		require.NoError(t, err, c.name)
		assert.Equal(t, c.end, end, c.name)
	}
	tr, err := store.Load(ctx, s, transcript.ReadOptions{Strict: true})
	require.NoError(t, err)
	assert.Equal(t, []string{"u1", "u2", "u3", "u3"}, uuids(tr))
}

// hostileIDs are session ids and uuids that try to break out of a query or a path.
var hostileIDs = []string{
	"'; DROP TABLE agentctx_lines; --",
	`" OR 1=1 --`,
	"x'); DELETE FROM agentctx_lines WHERE ('1'='1",
	"../../../../etc/passwd",
	`C:\Windows\system32`,
	"$1",
	"session\nwith\nnewlines",
	"ünïcødé-セッション-🙂",
	"CON",
	" ",
}

// TestHostile checks that session ids and uuids built to inject SQL or escape a directory are
// kept as data: each session holds exactly what was appended to it and nothing else. A huge
// id either works the same or fails with an error naming the session id.
func TestHostile(t *testing.T, store transcript.Store, o Options) {
	ctx := t.Context()
	prefix := Session(t, "")
	ids := append([]string{}, hostileIDs...)
	huge := prefix + strings.Repeat("h", 1<<20)
	for i, id := range ids {
		s := prefix + id
		r := Record(s, id, fmt.Sprintf("hostile %d", i))
		end, err := store.Append(ctx, s, 0, r)
		require.NoError(t, err, "session %q", s)
		require.Equal(t, 1, end)
	}
	for i, id := range ids {
		s := prefix + id
		tr, err := store.Load(ctx, s, transcript.ReadOptions{Strict: true})
		require.NoError(t, err, "session %q", s)
		require.Equal(t, []string{id}, uuids(tr), "session %q", s)
		text := tr.Records[0].Message.Content[0].(*transcript.Text).Text
		assert.Equal(t, fmt.Sprintf("hostile %d", i), text)
	}
	hugeUUID := strings.Repeat("u", 1<<20)
	_, err := store.Append(ctx, huge, 0, Record(huge, hugeUUID, "huge"))
	if o.MaxSessionID > 0 {
		require.Error(t, err, "a session id of %d bytes", len(huge))
		assert.Contains(t, err.Error(), "session id")
		assert.Contains(t, err.Error(), fmt.Sprint(o.MaxSessionID))
		huge = prefix + "huge-uuid"
		_, err = store.Append(ctx, huge, 0, Record(huge, hugeUUID, "huge"))
	}
	require.NoError(t, err)
	tr, err := store.Load(ctx, huge, transcript.ReadOptions{Strict: true})
	require.NoError(t, err)
	assert.Equal(t, []string{hugeUUID}, uuids(tr))
}

// TestConcurrent runs o.Writers writers on o.Sessions sessions until they have made o.Appends
// acknowledged appends between them. Each writer keeps the position it last saw of each
// session, appends one record after it, and on a conflict reads the session again and
// retries. Afterwards every acknowledged record is in its session exactly once, at the
// position its append returned, each writer's records of a session are in the order it wrote
// them, and the sessions hold nothing else.
func TestConcurrent(t *testing.T, store transcript.Store, o Options) {
	writers, sessions, appends, timeout := o.Writers, o.Sessions, o.Appends, o.Timeout
	if writers == 0 {
		writers = 8
	}
	if sessions == 0 {
		sessions = 20
	}
	if appends == 0 {
		appends = 400
	}
	if timeout == 0 {
		timeout = 2 * time.Minute
	}
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	ids := make([]string, sessions)
	prefix := Session(t, "")
	for i := range ids {
		ids[i] = fmt.Sprintf("%s%03d", prefix, i)
	}

	type ack struct {
		writer, n, end int
	}
	var (
		mu        sync.Mutex
		acked     = map[string]map[string]ack{} // session → uuid → ack
		conflicts int
		left      = appends
	)
	take := func() bool {
		mu.Lock()
		defer mu.Unlock()
		if left == 0 {
			return false
		}
		left--
		return true
	}
	var (
		wg        sync.WaitGroup
		transient int
	)
	errs := make(chan error, writers+1)
	retry := func(w int, err error) bool {
		if o.Transient == nil || !o.Transient(err) {
			return false
		}
		mu.Lock()
		transient++
		mu.Unlock()
		time.Sleep(time.Duration(1+w%5) * time.Millisecond)
		return ctx.Err() == nil
	}
	text := o.Text
	if text == nil {
		text = func(w, n int) string { return fmt.Sprintf("writer %d, append %d", w, n) }
	}
	during := make(chan error, 1)
	dctx, dcancel := context.WithCancel(ctx)
	defer dcancel()
	if o.During != nil {
		go func() { during <- o.During(dctx) }()
	} else {
		during <- nil
	}
	for w := range writers {
		wg.Go(func() {
			seen := map[string]int{}
			for n := 0; take(); n++ {
				s := ids[(w*7+n*13)%sessions]
				uuid := fmt.Sprintf("w%02d-n%05d", w, n)
				r := Record(s, uuid, text(w, n))
				for {
					end, err := store.Append(ctx, s, seen[s], r)
					if err == nil {
						seen[s] = end
						mu.Lock()
						if acked[s] == nil {
							acked[s] = map[string]ack{}
						}
						acked[s][uuid] = ack{w, n, end}
						mu.Unlock()
						break
					}
					if !errors.Is(err, transcript.ErrConflict) {
						if retry(w, err) {
							continue
						}
						errs <- fmt.Errorf("writer %d: append to %s: %w", w, s, err)
						return
					}
					if _, ok := errors.AsType[*transcript.ConflictError](err); !ok {
						errs <- fmt.Errorf("writer %d: a conflict that is no *ConflictError: %w", w, err)
						return
					}
					mu.Lock()
					conflicts++
					mu.Unlock()
					tr, err := store.Load(ctx, s, transcript.ReadOptions{Strict: true})
					for err != nil && retry(w, err) {
						tr, err = store.Load(ctx, s, transcript.ReadOptions{Strict: true})
					}
					if err != nil {
						errs <- fmt.Errorf("writer %d: load %s: %w", w, s, err)
						return
					}
					seen[s] = tr.End
				}
			}
		})
	}
	wg.Wait()
	dcancel()
	if err := <-during; err != nil {
		errs <- fmt.Errorf("during: %w", err)
	}
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	t.Logf("%d writers, %d sessions: %d appends acknowledged, %d conflicts and %d transient errors retried", writers, sessions, appends, conflicts, transient)
	if o.During != nil {
		assert.Positive(t, transient, "the writers met no error while connections were dropped")
	}

	total := 0
	for _, s := range ids {
		want := acked[s]
		tr, err := store.Load(t.Context(), s, transcript.ReadOptions{Strict: true})
		// A connection the drop phase killed may still sit idle in a pool: its first use
		// fails transiently. A few retries read what is stored; they change nothing in it.
		for try := 0; try < 3 && err != nil && o.Transient != nil && o.Transient(err); try++ {
			tr, err = store.Load(t.Context(), s, transcript.ReadOptions{Strict: true})
		}
		if len(want) == 0 {
			assert.ErrorIs(t, err, os.ErrNotExist, "session %s had no append", s)
			continue
		}
		require.NoError(t, err)
		require.Len(t, tr.Records, len(want), "session %s: records stored vs acknowledged", s)
		last := map[int]int{} // writer → its last n
		for i, r := range tr.Records {
			a, ok := want[r.UUID]
			require.True(t, ok, "session %s line %d: record %s was never acknowledged", s, tr.Lines[i], r.UUID)
			assert.Equal(t, a.end, tr.Lines[i], "session %s: record %s is not where its append said", s, r.UUID)
			if n, ok := last[a.writer]; ok {
				assert.Greater(t, a.n, n, "session %s: writer %d's records out of order", s, a.writer)
			}
			last[a.writer] = a.n
		}
		total += len(tr.Records)
	}
	assert.Equal(t, appends, total, "records stored in all")
}

// Lines returns data's lines as a JSONL reader counts them (a last line without "\n" too).
func Lines(data []byte) [][]byte {
	lines := bytes.SplitAfter(data, []byte("\n"))
	if len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1]
	}
	return lines
}
