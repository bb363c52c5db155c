package postgres_test

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/storetest"
	"github.com/agentctx/agentctx/internal/testkit"
	"github.com/agentctx/agentctx/internal/testkit/compacted"
	"github.com/agentctx/agentctx/postgres"
	"github.com/agentctx/agentctx/summarize"
	"github.com/agentctx/agentctx/transcript"
)

// TestLoadFromCut checks that a session the library compacted many times loads from its
// latest boundary's kept head on when the boundary carries its history — fewer records, the
// same End and line numbers, the request of a whole load at each of several lengths — and
// that a session whose boundaries carry none loads whole.
func TestLoadFromCut(t *testing.T) {
	ctx := t.Context()
	s := openStore(t)
	records, compactions, err := compacted.Replay(ctx, testkit.Generate(400, testkit.Options{Seed: 5}), 30_000)
	require.NoError(t, err)
	require.Greater(t, compactions, 3)
	request := func(recs []transcript.Record, window int) []byte {
		now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
		p, err := agentctx.New(agentctx.Config{Model: "claude-sonnet-4-5", ContextWindow: window, Tokens: agentctx.EstimateCounter{},
			Compact: agentctx.CompactConfig{Summarizer: summarize.Extractive{}}, Budget: agentctx.BudgetConfig{Store: &agentctx.MapStore{}},
			Now: func() time.Time { return now }})
		require.NoError(t, err)
		res, err := p.Prepare(ctx, agentctx.Input{Records: recs})
		require.NoError(t, err)
		b, err := res.Request.MarshalJSON()
		require.NoError(t, err)
		return b
	}
	cuts := 0
	// Boundaries with their histories, without, and with an earlier release's (version 1),
	// which a load from the cut cannot use: the last two are loaded whole, without a read of
	// the tail first.
	for _, kind := range []string{"history", "none", "version 1"} {
		history := kind == "history"
		recs := records
		if !history {
			recs = slices.Clone(records)
			for i := range recs {
				if h := recs[i].History; h != nil && kind == "version 1" {
					old := *h
					old.Version = 1
					recs[i].History = &old
				} else {
					recs[i].History = nil
				}
			}
		}
		session := storetest.Session(t, "cut")
		stored := 0
		for end := len(recs) / 4; stored < len(recs); end = min(len(recs), end+len(recs)/4) {
			n, err := s.Append(ctx, session, stored, recs[stored:end]...)
			require.NoError(t, err)
			stored = n
			whole, err := s.Load(ctx, session, transcript.ReadOptions{})
			require.NoError(t, err)
			cut, err := s.Load(ctx, session, transcript.ReadOptions{TailMinBytes: 1})
			require.NoError(t, err)
			assert.Equal(t, whole.End, cut.End)
			if !history {
				assert.Nil(t, cut.Tail, "%d records, %s: a whole load", stored, kind)
				assert.Equal(t, whole.Records, cut.Records)
				head, err := postgres.CutHead(s, session)
				require.NoError(t, err)
				assert.Zero(t, head, "%d records, %s: no tail read first", stored, kind)
				continue
			}
			require.NotNil(t, cut.Tail, "%d records", stored)
			cuts++
			assert.True(t, cut.Tail.Digest)
			assert.Less(t, len(cut.Records), len(whole.Records))
			for i, r := range cut.Records[cut.Tail.History:] {
				assert.Equal(t, whole.Records[r.Line-1].UUID, r.UUID, "record %d: line %d", i, r.Line)
			}
			for _, w := range []int{0, 30_000} {
				assert.True(t, bytes.Equal(request(whole.Records, w), request(cut.Records, w)), "%d records, window %d: the request from the cut", stored, w)
			}
		}
	}
	assert.Positive(t, cuts)
}

// TestBoundaryIndex checks that the query finding a session's latest compact boundaries reads
// the partial index of boundary rows, in the plan made for its values and in the generic plan
// a cached statement may switch to, so that a session without a boundary costs an index
// probe instead of a read of every row before its whole load.
func TestBoundaryIndex(t *testing.T) {
	ctx := t.Context()
	s := openStore(t)
	session := storetest.Session(t, "index")
	_, err := s.Append(ctx, session, 0, testkit.Generate(20, testkit.Options{Seed: 1})...)
	require.NoError(t, err)
	tx, err := s.Pool().Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	// Without sequential scans the planner chooses between the indexes alone, whatever the
	// table's size: the primary key read backwards with a filter, or the boundary index.
	_, err = tx.Exec(ctx, `SET LOCAL enable_seqscan = off`)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `PREPARE boundaries AS `+postgres.BoundarySQL)
	require.NoError(t, err)
	for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
		_, err = tx.Exec(ctx, `SET LOCAL plan_cache_mode = `+mode)
		require.NoError(t, err)
		rows, err := tx.Query(ctx, `EXPLAIN EXECUTE boundaries('`+session+`', 16)`, pgx.QueryExecModeSimpleProtocol)
		require.NoError(t, err)
		plan, err := pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(t, err)
		assert.Contains(t, strings.Join(plan, "\n"), "agentctx_lines_boundary", mode)
	}
}
