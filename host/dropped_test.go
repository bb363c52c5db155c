package host_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/host"
	"github.com/agentctx/agentctx/provider"
	"github.com/agentctx/agentctx/transcript"
	"github.com/stretchr/testify/require"
)

// budgetFor returns the budget records among recs that decide toolUseID.
func budgetFor(recs []transcript.Record, toolUseID string) []transcript.Record {
	var out []transcript.Record
	for _, r := range recs {
		if r.Subtype == transcript.SubtypeToolResultBudget && strings.Contains(string(r.Content)+string(mustLine(r)), toolUseID) {
			out = append(out, r)
		}
	}
	return out
}

func mustLine(r transcript.Record) []byte {
	b, err := r.MarshalLine()
	if err != nil {
		panic(err)
	}
	return b
}

// TestEditedMessage: the replacement of a tool result the host edited afterwards is reported
// and not applied to the new content, which the request carries as the host has it.
func TestEditedMessage(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	hc := &hostConv{c: host.Conversation{ID: "conv-e", Store: &host.MemoryStore{}}}
	script(t, ctx, 0, 4, []conv{hc}, []*agentctx.Pipeline{newPipeline(t, root)})
	rp, err := hc.c.Replay(ctx, hc.msgs)
	require.NoError(t, err)
	require.Len(t, budgetFor(rp.Records, "toolu_02"), 1, "turn 2's big result was replaced")

	edited := strings.Repeat("shard 2: line rewritten by the host\n", 20)
	require.Equal(t, "row-11", hc.msgs[10].ID)
	hc.msgs[10].Message = &transcript.Message{Role: transcript.RoleUser, Content: []transcript.Block{transcript.TextResult("toolu_02", edited)}}

	rp, err = hc.c.Replay(ctx, hc.msgs)
	require.NoError(t, err)
	require.Len(t, rp.Dropped, 1)
	require.Contains(t, rp.Dropped[0].Reason, `"row-11"`)
	require.Len(t, budgetFor(rp.Dropped[0].Records, "toolu_02"), 1)
	require.Empty(t, budgetFor(rp.Records, "toolu_02"), "the old decision is not applied to the edited result")

	res, err := hc.c.Prepare(ctx, newPipeline(t, root), hc.msgs, agentctx.Input{Tools: []provider.Tool{readLog}})
	require.NoError(t, err)
	require.Len(t, res.Dropped, 1)
	body, err := res.Request.MarshalJSON()
	require.NoError(t, err)
	require.Contains(t, string(body), "rewritten by the host")
	require.NotContains(t, string(body), "shard 2: line ok")
}

// TestDeletedMessages: messages the host deleted take with them the compaction that
// summarized them (reported), while the decisions on messages it kept still apply; the next
// turn is built from the host's messages.
func TestDeletedMessages(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	hc := &hostConv{c: host.Conversation{ID: "conv-d", Store: &host.MemoryStore{}}}
	script(t, ctx, 0, 16, []conv{hc}, []*agentctx.Pipeline{newPipeline(t, root)})
	rp, err := hc.c.Replay(ctx, hc.msgs)
	require.NoError(t, err)
	require.Positive(t, countSubtypes(rp.Records)[transcript.SubtypeCompactBoundary])
	require.Len(t, budgetFor(rp.Records, "toolu_02"), 1)

	require.Equal(t, "row-5", hc.msgs[4].ID)
	hc.msgs = append(hc.msgs[:4:4], hc.msgs[8:]...) // turn 1, rows 5 to 8, deleted

	rp, err = hc.c.Replay(ctx, hc.msgs)
	require.NoError(t, err)
	require.Zero(t, countSubtypes(rp.Records)[transcript.SubtypeCompactBoundary], "no compaction of the old messages is installed")
	require.Len(t, budgetFor(rp.Records, "toolu_02"), 1, "a decision on a message the host kept still applies")
	var dropped []transcript.Record
	for _, d := range rp.Dropped {
		require.NotEmpty(t, d.Reason)
		dropped = append(dropped, d.Records...)
	}
	require.Positive(t, countSubtypes(dropped)[transcript.SubtypeCompactBoundary])

	res, err := hc.c.Prepare(ctx, newPipeline(t, root), hc.msgs, agentctx.Input{Tools: []provider.Tool{readLog}})
	require.NoError(t, err)
	require.NotEmpty(t, res.Dropped)
	require.NoError(t, provider.Validate(res.Request, provider.ValidateOptions{}))
}

// TestLostStore: a conversation whose decision store was lost says so and is built from the
// host's messages; the store then starts anew and the next turn is no longer lost.
func TestLostStore(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	store := host.FileStore{Root: t.TempDir()}
	hc := &hostConv{c: host.Conversation{ID: "conv-l", Store: store}}
	script(t, ctx, 0, 16, []conv{hc}, []*agentctx.Pipeline{newPipeline(t, root)})
	require.False(t, hc.last.Lost)
	require.FileExists(t, store.Path("conv-l"))
	require.NoError(t, os.Remove(store.Path("conv-l")))

	in := agentctx.Input{Tools: []provider.Tool{readLog}}
	res, err := hc.c.Prepare(ctx, newPipeline(t, root), hc.msgs, in)
	require.NoError(t, err)
	require.True(t, res.Lost)
	require.Empty(t, res.Dropped)
	first, err := res.Request.MarshalJSON()
	require.NoError(t, err)

	res, err = hc.c.Prepare(ctx, newPipeline(t, root), hc.msgs, in)
	require.NoError(t, err)
	require.False(t, res.Lost, "the store holds the rebuilt conversation's decisions")
	again, err := res.Request.MarshalJSON()
	require.NoError(t, err)
	require.Equal(t, string(first), string(again))
}
