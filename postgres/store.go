// Package postgres keeps agentctx transcripts and stored tool results in PostgreSQL, so that
// a fleet of workers can serve any session's next turn: a [Store] is an
// [transcript.Store] and an [agentctx.ResultStore] on a pgx connection pool.
//
// Each line of a transcript is a row holding the line's exact bytes (bytea, never jsonb,
// which would reorder keys and break byte-identical requests), its line number (seq) and its
// record's uuid. A session loaded from the database gives the same [transcript.File] as
// its JSONL file, and [Store.Export] writes back the file that [Store.Import] read, byte for
// byte.
//
// An append is a single INSERT statement: it is stored whole or not at all, and it succeeds
// only if the session still ends at the position the writer read, since two rows cannot
// share a (session, seq) key. The schema is applied by [Store.Migrate], or by hand from
// [Schema].
package postgres

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strconv"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentctx/agentctx/transcript"
)

// MaxSessionID is the longest session id a Store accepts, in bytes. PostgreSQL indexes keys
// of about 2,700 bytes at most; a Claude Code session id is a 36-byte uuid.
const MaxSessionID = 1024

// Store keeps transcripts and tool results in a PostgreSQL database. It is safe for
// concurrent use; every method honours its context's deadline and cancellation through pgx.
type Store struct {
	pool *pgxpool.Pool
	own  bool // Close closes the pool
}

// Open connects a pool to the database at url (a postgres:// URL or a key=value connection
// string, as [pgxpool.ParseConfig] reads it, pool settings such as pool_max_conns included).
// It does not apply the schema: call [Store.Migrate]. Close the Store when done.
func Open(ctx context.Context, url string) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: connect to %s: %w", cfg.ConnConfig.Host, err)
	}
	return &Store{pool: pool, own: true}, nil
}

// New returns a Store on a pool the caller owns (and closes).
func New(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

// Close closes the pool if Open made it.
func (s *Store) Close() {
	if s.own {
		s.pool.Close()
	}
}

// Name returns the name a session's transcript is read under, which errors about its lines
// start with: "postgres:" and the quoted session id.
func Name(session string) string { return "postgres:" + strconv.Quote(session) }

// checkSession returns an error naming the session id field unless PostgreSQL can key it.
func checkSession(session string) error {
	switch {
	case session == "":
		return errors.New("session id: empty")
	case len(session) > MaxSessionID:
		return fmt.Errorf("session id: %d bytes, longer than the limit of %d", len(session), MaxSessionID)
	case !utf8.ValidString(session):
		return errors.New("session id: not valid UTF-8")
	}
	for i := range len(session) {
		if session[i] == 0 {
			return fmt.Errorf("session id: a NUL byte at offset %d (PostgreSQL text cannot hold one)", i)
		}
	}
	return nil
}

// noSession is the error of loading a session that has no line.
type noSession string

func (e noSession) Error() string {
	return fmt.Sprintf("postgres: session %s has no line in the database", strconv.Quote(string(e)))
}

// Is makes a missing session match fs.ErrNotExist, as a missing file does.
func (e noSession) Is(target error) bool { return target == fs.ErrNotExist }

// Load reads session's transcript in line order, in one query (one snapshot: never half of
// a batch), and decodes it as [transcript.Read] decodes a file, named by [Name].
// [transcript.File.End] is the session's last line number. A session with no line is an
// error matching [fs.ErrNotExist].
//
// With opts.TailMinBytes positive, a session whose latest compact boundary of the main
// thread carries its [transcript.History] is loaded from that boundary's kept head on (see
// [transcript.ReadCut]): the rows before it are not fetched, whatever the session's size.
// Any other session is loaded whole.
func (s *Store) Load(ctx context.Context, session string, opts transcript.ReadOptions) (*transcript.File, error) {
	if err := checkSession(session); err != nil {
		return nil, fmt.Errorf("postgres: load: %w", err)
	}
	if opts.TailMinBytes > 0 {
		tr, err := s.loadCut(ctx, session, opts)
		if tr != nil || err != nil {
			return tr, err
		}
	}
	lr, err := s.open(ctx, session, 1)
	if err != nil {
		return nil, fmt.Errorf("postgres: load session %s: %w", strconv.Quote(session), err)
	}
	defer lr.rows.Close()
	tr, err := transcript.Read(lr, Name(session), opts)
	if lr.err != nil { // the query failed: say so, not that the line it cut was bad
		return nil, fmt.Errorf("postgres: load session %s: %w", strconv.Quote(session), lr.err)
	}
	if err != nil {
		return nil, err
	}
	if lr.seq == 0 {
		return nil, noSession(session)
	}
	tr.End = int(lr.seq)
	return tr, nil
}

// open starts the query of a session's lines from line from on.
func (s *Store) open(ctx context.Context, session string, from int64) (*lineReader, error) {
	return openLines(ctx, s.pool, session, from)
}

// openLines starts the query of a session's lines from line from on, on q.
func openLines(ctx context.Context, q querier, session string, from int64) (*lineReader, error) {
	rows, err := q.Query(ctx, `SELECT seq, line, newline FROM agentctx_lines WHERE session = $1 AND seq >= $2 ORDER BY seq`, session, from)
	if err != nil {
		return nil, err
	}
	return &lineReader{rows: rows, seq: from - 1}, nil
}

// lineReader reads a session's rows as the bytes of its JSONL file: each line followed by
// "\n", except a last line stored without one. A line stored without "\n" that is not last
// (a torn line appended after) gets one, as an Appender writes it before its next batch.
type lineReader struct {
	rows    pgx.Rows
	cur     pgtype.DriverBytes // the rest of the current line, valid until the next row
	newline bool               // the current line ends with "\n"
	pending bool               // a "\n" is owed before the next line
	seq     int64              // the last row's seq
	err     error              // a query error, or a gap in the rows
}

func (r *lineReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		if len(r.cur) > 0 {
			c := copy(p[n:], r.cur)
			r.cur, n = r.cur[c:], n+c
			continue
		}
		if r.newline {
			p[n], r.newline = '\n', false
			n++
			continue
		}
		if r.err != nil || !r.next() {
			break
		}
	}
	if n == 0 {
		if r.err != nil {
			return 0, r.err
		}
		return 0, io.EOF
	}
	return n, nil
}

// next moves to the next row; false at the end or on an error (in r.err).
func (r *lineReader) next() bool {
	if !r.rows.Next() {
		r.err = r.rows.Err()
		return false
	}
	var seq int64
	var nl bool
	if err := r.rows.Scan(&seq, &r.cur, &nl); err != nil {
		r.err = err
		return false
	}
	if seq != r.seq+1 {
		r.err = fmt.Errorf("line %d follows line %d: the rows have a gap", seq, r.seq)
		return false
	}
	r.seq = seq
	if r.pending {
		// The owed "\n" goes before this line: prepend it by emitting it now.
		r.pending = false
		r.cur = append(pgtype.DriverBytes{'\n'}, r.cur...)
	}
	r.newline, r.pending = nl, !nl
	return true
}

// row is one line to insert.
type row struct {
	uuid    []byte // nil: NULL
	line    []byte
	newline bool
}

// Append stores records after line after of session, as [transcript.Store]
// describes: one INSERT of all the batch's rows, which fails on the primary key if another
// writer took the position first, and inserts nothing if after is past the session's end;
// either way the store then looks for an earlier attempt of the same batch (by its first
// record's uuid, or its first line's bytes, among the lines after after) and returns its
// position, or an [*transcript.ConflictError].
//
// An error that is no conflict (a dropped connection, a deadline) may leave the batch stored
// or not, never in part: retry the same Append to learn which, as retries are idempotent.
func (s *Store) Append(ctx context.Context, session string, after int, records ...transcript.Record) (int, error) {
	if err := checkSession(session); err != nil {
		return 0, fmt.Errorf("postgres: append: %w", err)
	}
	if after < 0 {
		return 0, fmt.Errorf("postgres: append to session %s: line %d: a position is a line count, never negative", strconv.Quote(session), after)
	}
	if len(records) == 0 {
		return after, nil
	}
	if after > 0 {
		if err := s.refuseCodex(ctx, session); err != nil {
			return 0, err
		}
	}
	rows := make([]row, len(records))
	for i := range records {
		line, err := records[i].MarshalLine()
		if err != nil {
			return 0, fmt.Errorf("postgres: append to session %s: record %d: %w", strconv.Quote(session), i, err)
		}
		rows[i] = row{line: line, newline: true}
		if u := records[i].UUID; u != "" {
			rows[i].uuid = []byte(u)
		}
	}
	return s.insert(ctx, s.pool, session, after, rows)
}

// refuseCodex returns an error matching [transcript.ErrCodexAppend] when session holds an
// imported Codex rollout: the library never writes to a rollout, in a file or here (a line
// of ours would make the exported file unreadable to Codex). It reads the session's first
// lines, as many as [transcript.DetectFormat] looks at.
func (s *Store) refuseCodex(ctx context.Context, session string) error {
	rows, err := s.pool.Query(ctx, `SELECT line FROM agentctx_lines WHERE session = $1 AND seq <= 8 ORDER BY seq`, session)
	if err != nil {
		return fmt.Errorf("postgres: append to session %s: %w", strconv.Quote(session), err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
	if err != nil {
		return fmt.Errorf("postgres: append to session %s: %w", strconv.Quote(session), err)
	}
	if transcript.DetectFormat(append(bytes.Join(lines, []byte("\n")), '\n')) == transcript.FormatCodex {
		return fmt.Errorf("postgres: append to session %s: %w", strconv.Quote(session), transcript.ErrCodexAppend)
	}
	return nil
}

// querier is what insert needs of a pool or a transaction.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// insertSQL inserts rows $3.. after line $2 of session $1, if line $2 exists (or is 0).
const insertSQL = `INSERT INTO agentctx_lines (session, seq, uuid, line, newline)
SELECT $1, $2::bigint + l.ord, l.uuid, l.line, l.newline
FROM unnest($3::bytea[], $4::bytea[], $5::boolean[]) WITH ORDINALITY AS l(uuid, line, newline, ord)
WHERE $2::bigint = 0 OR EXISTS (SELECT 1 FROM agentctx_lines WHERE session = $1 AND seq = $2::bigint)`

// uniqueViolation is PostgreSQL's SQLSTATE for a duplicate key.
const uniqueViolation = "23505"

// insert inserts rows after line after, or resolves the conflict.
func (s *Store) insert(ctx context.Context, q querier, session string, after int, rows []row) (int, error) {
	uuids, lines, nls := make([][]byte, len(rows)), make([][]byte, len(rows)), make([]bool, len(rows))
	for i, r := range rows {
		uuids[i], lines[i], nls[i] = r.uuid, r.line, r.newline
	}
	tag, err := q.Exec(ctx, insertSQL, session, int64(after), uuids, lines, nls)
	var pe *pgconn.PgError
	switch {
	case err == nil && tag.RowsAffected() == int64(len(rows)):
		return after + len(rows), nil
	case err == nil && tag.RowsAffected() == 0, errors.As(err, &pe) && pe.Code == uniqueViolation:
		end, err := s.resolve(ctx, q, session, after, rows)
		if err != nil {
			return 0, fmt.Errorf("postgres: append to session %s after line %d: %w", strconv.Quote(session), after, err)
		}
		return end, nil
	case err == nil:
		return 0, fmt.Errorf("postgres: append to session %s after line %d: %d of %d rows inserted", strconv.Quote(session), after, tag.RowsAffected(), len(rows))
	case pgconn.SafeToRetry(err):
		return 0, fmt.Errorf("postgres: append to session %s after line %d: nothing stored: %w", strconv.Quote(session), after, err)
	default:
		return 0, fmt.Errorf("postgres: append to session %s after line %d: the batch may or may not be stored (never in part); retry the same append to find out: %w", strconv.Quote(session), after, err)
	}
}

// maxCandidates bounds the earlier attempts resolve compares.
const maxCandidates = 16

// resolve is called when rows could not go after line after: it returns the position after
// an earlier attempt of the same rows, or a *ConflictError.
func (s *Store) resolve(ctx context.Context, q querier, session string, after int, rows []row) (int, error) {
	var end int64
	if err := q.QueryRow(ctx, `SELECT coalesce(max(seq), 0) FROM agentctx_lines WHERE session = $1`, session).Scan(&end); err != nil {
		return 0, err
	}
	var cand pgx.Rows
	var err error
	if rows[0].uuid != nil {
		cand, err = q.Query(ctx, `SELECT seq FROM agentctx_lines WHERE session = $1 AND seq > $2 AND uuid = $3 ORDER BY seq LIMIT $4`,
			session, int64(after), rows[0].uuid, maxCandidates)
	} else {
		cand, err = q.Query(ctx, `SELECT seq FROM agentctx_lines WHERE session = $1 AND seq > $2 AND line = $3 ORDER BY seq LIMIT $4`,
			session, int64(after), rows[0].line, maxCandidates)
	}
	if err != nil {
		return 0, err
	}
	seqs, err := pgx.CollectRows(cand, pgx.RowTo[int64])
	if err != nil {
		return 0, err
	}
	for _, first := range seqs {
		last := first + int64(len(rows)) - 1
		if last > end {
			break
		}
		ok, err := s.holds(ctx, q, session, first, rows)
		if err != nil {
			return 0, err
		}
		if ok {
			return int(last), nil
		}
	}
	return 0, &transcript.ConflictError{Session: session, After: after, End: int(end)}
}

// holds reports whether the session's lines from first on are rows' lines, byte for byte.
func (s *Store) holds(ctx context.Context, q querier, session string, first int64, rows []row) (bool, error) {
	res, err := q.Query(ctx, `SELECT line FROM agentctx_lines WHERE session = $1 AND seq >= $2 AND seq < $3 ORDER BY seq`,
		session, first, first+int64(len(rows)))
	if err != nil {
		return false, err
	}
	defer res.Close()
	i := 0
	for res.Next() {
		var line pgtype.DriverBytes
		if err := res.Scan(&line); err != nil {
			return false, err
		}
		if i >= len(rows) || string(line) != string(rows[i].line) {
			return false, nil
		}
		i++
	}
	return i == len(rows), res.Err()
}

// uuidOf returns the uuid of the record a line holds, or nil when it holds none (or is no
// record).
func uuidOf(line []byte) []byte {
	var head struct {
		UUID *string `json:"uuid"`
	}
	if json.Unmarshal(line, &head) != nil || head.UUID == nil || *head.UUID == "" {
		return nil
	}
	return []byte(*head.UUID)
}

// Pool returns the Store's connection pool.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }
