package postgres

import (
	"bytes"
	"context"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/agentctx/agentctx/transcript"
)

// DecisionStore keeps the decision records of a host that keeps its messages in its own store
// (a github.com/agentctx/agentctx/host.DecisionStore) in the table agentctx_decisions, one row
// per record holding its line's exact bytes. It is safe for concurrent use.
type DecisionStore struct {
	s *Store
}

// Decisions returns the DecisionStore on the Store's pool.
func (s *Store) Decisions() DecisionStore { return DecisionStore{s: s} }

// Load reads session's records in the order appended, in one query, decoded as
// [transcript.Read] decodes a file named "postgres:decisions:" and the quoted session id.
// A session with no record has none, and no error.
func (d DecisionStore) Load(ctx context.Context, session string) ([]transcript.Record, error) {
	if err := checkSession(session); err != nil {
		return nil, fmt.Errorf("postgres: load decisions: %w", err)
	}
	rows, err := d.s.pool.Query(ctx, `SELECT line FROM agentctx_decisions WHERE session = $1 ORDER BY seq`, session)
	if err != nil {
		return nil, fmt.Errorf("postgres: load the decisions of session %s: %w", strconv.Quote(session), err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
	if err != nil {
		return nil, fmt.Errorf("postgres: load the decisions of session %s: %w", strconv.Quote(session), err)
	}
	if len(lines) == 0 {
		return nil, nil
	}
	f, err := transcript.Read(bytes.NewReader(append(bytes.Join(lines, []byte("\n")), '\n')), "postgres:decisions:"+strconv.Quote(session), transcript.ReadOptions{})
	if err != nil {
		return nil, err
	}
	return f.Records, nil
}

// Append stores records after session's others, in one transaction that holds the session's
// advisory lock, so that two appends to one session never interleave or collide: all or none.
func (d DecisionStore) Append(ctx context.Context, session string, records ...transcript.Record) error {
	if err := checkSession(session); err != nil {
		return fmt.Errorf("postgres: append decisions: %w", err)
	}
	if len(records) == 0 {
		return nil
	}
	lines := make([][]byte, len(records))
	for i := range records {
		line, err := records[i].MarshalLine()
		if err != nil {
			return fmt.Errorf("postgres: append decisions to session %s: record %d: %w", strconv.Quote(session), i, err)
		}
		lines[i] = line
	}
	err := pgx.BeginFunc(ctx, d.s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, session); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO agentctx_decisions (session, seq, line)
SELECT $1, (SELECT coalesce(max(seq), 0) FROM agentctx_decisions WHERE session = $1) + l.ord, l.line
FROM unnest($2::bytea[]) WITH ORDINALITY AS l(line, ord)`, session, lines)
		return err
	})
	if err != nil {
		return fmt.Errorf("postgres: append decisions to session %s: %w", strconv.Quote(session), err)
	}
	return nil
}
