package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/agentctx/agentctx/transcript"
)

// boundaryRows bounds the latest rows naming a compact boundary that loadCut decodes to find
// the latest one of the main thread (others name it in their text, or are a side thread's).
const boundaryRows = 16

// loadCut loads session from the kept head of its latest compact boundary of the main thread
// on, when that boundary carries a history that checks (see [transcript.ReadCut]); it returns
// nil, nil when the session is to be loaded whole. The queries share one snapshot.
func (s *Store) loadCut(ctx context.Context, session string, opts transcript.ReadOptions) (*transcript.File, error) {
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, fmt.Errorf("postgres: load session %s: %w", strconv.Quote(session), err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	head, err := cutHead(ctx, tx, session)
	if err != nil || head == 0 {
		return nil, err
	}
	lr, err := openLines(ctx, tx, session, head)
	if err != nil {
		return nil, fmt.Errorf("postgres: load session %s: %w", strconv.Quote(session), err)
	}
	defer lr.rows.Close()
	tr, err := transcript.ReadCut(lr, Name(session), int(head-1), opts)
	if lr.err != nil {
		return nil, fmt.Errorf("postgres: load session %s: %w", strconv.Quote(session), lr.err)
	}
	if err != nil {
		return nil, nil // no tail after all: the whole load reads it, and reports its errors
	}
	tr.End = int(lr.seq)
	return tr, nil
}

// boundarySQL selects the latest rows of session $1 naming a compact boundary, at most $2,
// through the partial index agentctx_lines_boundary: its predicate is the index's, word for
// word (a parameter in its place would keep the planner from proving the index applies), so
// a session without a boundary costs an index probe, not a read of its rows.
const boundarySQL = `SELECT seq, line FROM agentctx_lines WHERE session = $1 AND position('"compact_boundary"'::bytea IN line) > 0 ORDER BY seq DESC LIMIT $2`

// cutHead returns the line of the kept head of session's latest compact boundary of the main
// thread when that boundary carries a history of this version, or 0. The history is checked
// whole once, by [transcript.ReadCut]; one of another version (an earlier release's) would
// fail that check after the tail was read, so it costs no read of the tail.
func cutHead(ctx context.Context, q querier, session string) (int64, error) {
	rows, err := q.Query(ctx, boundarySQL, session, boundaryRows)
	if err != nil {
		return 0, fmt.Errorf("postgres: load session %s: %w", strconv.Quote(session), err)
	}
	type line struct {
		Seq  int64
		Line []byte
	}
	lines, err := pgx.CollectRows(rows, pgx.RowToStructByPos[line])
	if err != nil {
		return 0, fmt.Errorf("postgres: load session %s: %w", strconv.Quote(session), err)
	}
	for _, l := range lines {
		var r transcript.Record
		if r.UnmarshalJSON(l.Line) != nil || !r.IsCompactBoundary() || r.IsSidechain {
			continue
		}
		if r.History == nil || r.History.Version != transcript.HistoryVersion {
			return 0, nil
		}
		m := r.CompactMetadata
		if m == nil || m.PreservedSegment == nil {
			return l.Seq, nil
		}
		var head int64
		err := q.QueryRow(ctx, `SELECT seq FROM agentctx_lines WHERE session = $1 AND uuid = $2 AND seq < $3 ORDER BY seq DESC LIMIT 1`,
			session, []byte(m.PreservedSegment.HeadUUID), l.Seq).Scan(&head)
		if errors.Is(err, pgx.ErrNoRows) {
			return 0, nil
		}
		if err != nil {
			return 0, fmt.Errorf("postgres: load session %s: %w", strconv.Quote(session), err)
		}
		return head, nil
	}
	return 0, nil
}
