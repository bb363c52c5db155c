package host_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/host"
	"github.com/agentctx/agentctx/provider"
	"github.com/agentctx/agentctx/session"
	"github.com/agentctx/agentctx/transcript"
	"github.com/stretchr/testify/require"
)

// countSubtypes counts the records of each subtype among recs.
func countSubtypes(recs []transcript.Record) map[transcript.Subtype]int {
	n := map[transcript.Subtype]int{}
	for _, r := range recs {
		n[r.Subtype]++
	}
	return n
}

// TestSameBytesAsSession: a host that keeps its messages and lets a Conversation keep the
// decisions sends, turn after turn, the bytes a session.Session sends for the same
// conversation, through budget replacements and compactions; with a Memo too.
func TestSameBytesAsSession(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	sess := &sessionConv{t: t}
	sess.s = session.New(session.Options{ID: "conv-1", Now: func() time.Time { return sess.now }})
	store := &host.MemoryStore{}
	hc := &hostConv{c: host.Conversation{ID: "conv-1", Store: store}}
	memo := &hostConv{c: host.Conversation{ID: "conv-1", Store: &host.MemoryStore{}, Memo: &host.Memo{}}}
	rows := script(t, ctx, 0, 30, []conv{sess, hc, memo}, []*agentctx.Pipeline{newPipeline(t, root), newPipeline(t, root), newPipeline(t, root)})
	for i, row := range rows {
		require.Equal(t, string(row[0]), string(row[1]), "request %d", i)
		require.Equal(t, string(row[0]), string(row[2]), "request %d, with a Memo", i)
	}
	stored, err := store.Load(ctx, "conv-1")
	require.NoError(t, err)
	n := countSubtypes(stored)
	require.Positive(t, n[transcript.SubtypeToolResultBudget], "the script replaces tool results")
	require.Positive(t, n[transcript.SubtypeCompactBoundary], "the script compacts")
	t.Logf("%d requests; stored: %v", len(rows), n)
	require.Empty(t, hc.last.Dropped)
	require.False(t, hc.last.Lost)
}

// TestResumeSameBytes: a new process — a new Conversation and a new Pipeline on the decisions
// a FileStore kept — sends the bytes the live conversation sends.
func TestResumeSameBytes(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	live := &hostConv{c: host.Conversation{ID: "conv-r", Store: &host.MemoryStore{}}}
	want := script(t, ctx, 0, 24, []conv{live}, []*agentctx.Pipeline{newPipeline(t, root)})

	store := host.FileStore{Root: t.TempDir()}
	first := &hostConv{c: host.Conversation{ID: "conv-r", Store: store}}
	script(t, ctx, 0, 14, []conv{first}, []*agentctx.Pipeline{newPipeline(t, root)})
	resumed := &hostConv{c: host.Conversation{ID: "conv-r", Store: store, Memo: &host.Memo{}}}
	got := script(t, ctx, 14, 24, []conv{resumed}, []*agentctx.Pipeline{newPipeline(t, root)})
	require.Len(t, got, 20)
	for i, row := range got {
		require.Equal(t, string(want[28+i][0]), string(row[0]), "request %d after the resume", i)
	}
	stored, err := store.Load(ctx, "conv-r")
	require.NoError(t, err)
	require.Positive(t, countSubtypes(stored)[transcript.SubtypeCompactBoundary], "the resumed stretch replays a compaction")
}

// TestSameMessagesSameDecisions: the same messages and stored decisions give the same bytes
// on any Pipeline, and a turn that replays them decides nothing new.
func TestSameMessagesSameDecisions(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	store := &host.MemoryStore{}
	hc := &hostConv{c: host.Conversation{ID: "conv-s", Store: store}}
	script(t, ctx, 0, 20, []conv{hc}, []*agentctx.Pipeline{newPipeline(t, root)})
	before, err := store.Load(ctx, "conv-s")
	require.NoError(t, err)
	var bodies []string
	for range 2 {
		res, err := hc.c.Prepare(ctx, newPipeline(t, root), hc.msgs, agentctx.Input{Tools: []provider.Tool{readLog}})
		require.NoError(t, err)
		require.Empty(t, res.Append)
		b, err := res.Request.MarshalJSON()
		require.NoError(t, err)
		bodies = append(bodies, string(b))
	}
	require.Equal(t, bodies[0], bodies[1])
	after, err := store.Load(ctx, "conv-s")
	require.NoError(t, err)
	require.Len(t, after, len(before))
}
