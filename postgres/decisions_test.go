package postgres_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/host"
	"github.com/agentctx/agentctx/postgres"
	"github.com/agentctx/agentctx/transcript"
)

var _ host.DecisionStore = postgres.DecisionStore{}

// TestDecisionStore appends batches to sessions from many writers at once and reads each
// session back whole and in order: every batch once, none interleaved.
func TestDecisionStore(t *testing.T) {
	ctx := t.Context()
	ds := openStore(t).Decisions()
	prefix := rand.Text()[:8]
	empty, err := ds.Load(ctx, prefix+"-none")
	require.NoError(t, err)
	require.Empty(t, empty)

	const writers, batches = 8, 20
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			session := fmt.Sprintf("%s-%d", prefix, w%2)
			for b := range batches {
				recs := []transcript.Record{
					{Type: transcript.TypeSystem, Subtype: host.SubtypeTurn, UUID: fmt.Sprintf("w%d-b%d-0", w, b), SessionID: session},
					{Type: transcript.TypeSystem, Subtype: transcript.SubtypeToolResultBudget, UUID: fmt.Sprintf("w%d-b%d-1", w, b), SessionID: session},
				}
				if err := ds.Append(context.Background(), session, recs...); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	for s := range 2 {
		recs, err := ds.Load(ctx, fmt.Sprintf("%s-%d", prefix, s))
		require.NoError(t, err)
		require.Len(t, recs, writers/2*batches*2)
		for i := 0; i < len(recs); i += 2 {
			require.Equal(t, recs[i].UUID[:len(recs[i].UUID)-1]+"1", recs[i+1].UUID, "record %d follows its batch's first", i+1)
		}
	}
	require.ErrorContains(t, ds.Append(ctx, "", transcript.Record{}), "session id")
}

// TestDecisionStoreResume: a host conversation whose decisions are in PostgreSQL builds, from
// a new Pipeline and the stored decisions, the request the live turn built.
func TestDecisionStoreResume(t *testing.T) {
	ctx := t.Context()
	ds := openStore(t).Decisions()
	newPipeline := func() *agentctx.Pipeline {
		p, err := agentctx.New(agentctx.Config{ContextWindow: 24_000, Tokens: agentctx.EstimateCounter{},
			Budget: agentctx.BudgetConfig{Store: agentctx.FileStore{Root: t.TempDir()}}})
		require.NoError(t, err)
		return p
	}
	msgs := []host.Message{
		{ID: "1", Message: &transcript.Message{Role: transcript.RoleUser, Content: []transcript.Block{&transcript.Text{Text: "Read the log."}}}},
		{ID: "2", Message: &transcript.Message{Role: transcript.RoleAssistant, Content: []transcript.Block{&transcript.ToolUse{ID: "toolu_1", Name: "read_log", Input: []byte(`{}`)}}}},
		{ID: "3", Message: &transcript.Message{Role: transcript.RoleUser, Content: []transcript.Block{transcript.TextResult("toolu_1", strings.Repeat("a log line that repeats\n", 3_000))}}},
	}
	c := host.Conversation{ID: "resume-" + rand.Text()[:8], Store: ds}
	live, err := c.Prepare(ctx, newPipeline(), msgs, agentctx.Input{})
	require.NoError(t, err)
	require.NotEmpty(t, live.Append, "the big result is replaced")
	again, err := host.Conversation{ID: c.ID, Store: ds}.Prepare(ctx, newPipeline(), msgs, agentctx.Input{})
	require.NoError(t, err)
	require.Empty(t, again.Append)
	a, err := live.Request.MarshalJSON()
	require.NoError(t, err)
	b, err := again.Request.MarshalJSON()
	require.NoError(t, err)
	require.Equal(t, string(a), string(b))
}
