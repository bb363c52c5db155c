package host_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/host"
	"github.com/agentctx/agentctx/provider"
	"github.com/agentctx/agentctx/transcript"
	"github.com/stretchr/testify/require"
)

// copyStore returns a MemoryStore holding recs.
func copyStore(t *testing.T, recs []transcript.Record) *host.MemoryStore {
	t.Helper()
	s := &host.MemoryStore{}
	require.NoError(t, s.Append(context.Background(), "conv-m", recs...))
	return s
}

// TestMemoSameReplay: a Conversation with a Memo replays what one without it replays, after
// the messages grew and after each change that makes it build the replay again: an edit, a
// deletion, an insertion in the middle, a reordering, a store changed underneath and a lost
// store; after the host rebuilt its messages from its rows with the same content, and with
// an edit under the same id (a prompt, a call's input, a replaced tool result, a time, a
// usage); and the turn after the change, whose messages, rebuilt, grew again, too.
func TestMemoSameReplay(t *testing.T) {
	text := func(s string) *transcript.Message {
		return &transcript.Message{Role: transcript.RoleUser, Content: []transcript.Block{&transcript.Text{Text: s}}}
	}
	tests := []struct {
		name   string
		change func(t *testing.T, msgs []host.Message, stored []transcript.Record) ([]host.Message, host.DecisionStore)
		lost   bool
		// dropped: the change makes a stored turn inapplicable (Result.Dropped).
		dropped bool
	}{
		{"grown", func(t *testing.T, msgs []host.Message, stored []transcript.Record) ([]host.Message, host.DecisionStore) {
			return append(msgs, host.Message{ID: "row-new", Message: text("one more thing")}), copyStore(t, stored)
		}, false, false},
		{"edited", func(t *testing.T, msgs []host.Message, stored []transcript.Record) ([]host.Message, host.DecisionStore) {
			msgs[10].Message = &transcript.Message{Role: transcript.RoleUser, Content: []transcript.Block{transcript.TextResult("toolu_02", "rewritten")}}
			return msgs, copyStore(t, stored)
		}, false, true},
		{"deleted", func(t *testing.T, msgs []host.Message, stored []transcript.Record) ([]host.Message, host.DecisionStore) {
			return slices.Delete(msgs, 12, 13), copyStore(t, stored)
		}, false, false},
		{"inserted in the middle", func(t *testing.T, msgs []host.Message, stored []transcript.Record) ([]host.Message, host.DecisionStore) {
			return slices.Insert(msgs, 6, host.Message{ID: "row-aside", Message: text("an aside")}), copyStore(t, stored)
		}, false, false},
		{"reordered", func(t *testing.T, msgs []host.Message, stored []transcript.Record) ([]host.Message, host.DecisionStore) {
			msgs[12], msgs[16] = msgs[16], msgs[12]
			return msgs, copyStore(t, stored)
		}, false, false},
		{"store changed underneath", func(t *testing.T, msgs []host.Message, stored []transcript.Record) ([]host.Message, host.DecisionStore) {
			// Another store holding the first half of the turns' decisions only.
			var marks []int
			for i, r := range stored {
				if r.Subtype == host.SubtypeTurn {
					marks = append(marks, i)
				}
			}
			require.Greater(t, len(marks), 2)
			return msgs, copyStore(t, stored[:marks[len(marks)/2]])
		}, false, false},
		{"store rewritten in place", func(t *testing.T, msgs []host.Message, stored []transcript.Record) ([]host.Message, host.DecisionStore) {
			recs := slices.Clone(stored)
			i := slices.IndexFunc(recs, func(r transcript.Record) bool { return r.Subtype == transcript.SubtypeToolResultBudget })
			require.GreaterOrEqual(t, i, 0)
			recs[i].UUID = "00000000-0000-4000-8000-000000000001"
			return msgs, copyStore(t, recs)
		}, false, false},
		{"lost store", func(t *testing.T, msgs []host.Message, stored []transcript.Record) ([]host.Message, host.DecisionStore) {
			return msgs, &host.MemoryStore{}
		}, true, false},
		// A host that reads its rows each turn: new messages with the same content, and its
		// edits, which keep the message's id.
		{"rebuilt", func(t *testing.T, msgs []host.Message, stored []transcript.Record) ([]host.Message, host.DecisionStore) {
			return rebuilt(t, msgs), copyStore(t, stored)
		}, false, false},
		{"rebuilt, a prompt edited in place", func(t *testing.T, msgs []host.Message, stored []transcript.Record) ([]host.Message, host.DecisionStore) {
			msgs = rebuilt(t, msgs)
			msgs[12].Message.Content[0].(*transcript.Text).Text = "Step 3: inspect the log of shard 4."
			return msgs, copyStore(t, stored)
		}, false, false},
		{"rebuilt, a call's input changed", func(t *testing.T, msgs []host.Message, stored []transcript.Record) ([]host.Message, host.DecisionStore) {
			msgs = rebuilt(t, msgs)
			msgs[9].Message.Content[0].(*transcript.ToolUse).Input = json.RawMessage(`{"shard":20}`)
			return msgs, copyStore(t, stored)
		}, false, true},
		{"rebuilt, a replaced tool result changed", func(t *testing.T, msgs []host.Message, stored []transcript.Record) ([]host.Message, host.DecisionStore) {
			msgs = rebuilt(t, msgs)
			tr := msgs[10].Message.Content[0].(*transcript.ToolResult)
			tr.Content[0].(*transcript.Text).Text += "one more line\n"
			return msgs, copyStore(t, stored)
		}, false, true},
		{"rebuilt, a time changed", func(t *testing.T, msgs []host.Message, stored []transcript.Record) ([]host.Message, host.DecisionStore) {
			msgs = rebuilt(t, msgs)
			msgs[12].Time = msgs[12].Time.Add(time.Second)
			return msgs, copyStore(t, stored)
		}, false, false},
		{"rebuilt, a usage learned", func(t *testing.T, msgs []host.Message, stored []transcript.Record) ([]host.Message, host.DecisionStore) {
			msgs = rebuilt(t, msgs)
			msgs[15].Message.Usage = &transcript.Usage{InputTokens: 9_000, OutputTokens: 20}
			return msgs, copyStore(t, stored)
		}, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			root := t.TempDir()
			store := &host.MemoryStore{}
			hc := &hostConv{c: host.Conversation{ID: "conv-m", Store: store, Memo: &host.Memo{}}}
			script(t, ctx, 0, 12, []conv{hc}, []*agentctx.Pipeline{newPipeline(t, root)})
			stored, err := store.Load(ctx, "conv-m")
			require.NoError(t, err)
			require.Positive(t, countSubtypes(stored)[transcript.SubtypeToolResultBudget])

			msgs, next := tt.change(t, slices.Clone(hc.msgs), stored)
			memo := host.Conversation{ID: "conv-m", Store: next, Memo: hc.c.Memo}
			bare := host.Conversation{ID: "conv-m", Store: next}
			for step := range 2 {
				want, err := bare.Replay(ctx, msgs)
				require.NoError(t, err)
				got, err := memo.Replay(ctx, msgs)
				require.NoError(t, err)
				require.Equal(t, want, got, "step %d", step)
				require.Equal(t, tt.lost && step == 0, got.Lost)

				wantRes, err := bare.Prepare(ctx, newPipeline(t, root), msgs, agentctx.Input{Tools: []provider.Tool{readLog}})
				require.NoError(t, err)
				gotRes, err := memo.Prepare(ctx, newPipeline(t, root), msgs, agentctx.Input{Tools: []provider.Tool{readLog}})
				require.NoError(t, err)
				wantBody, err := wantRes.Request.MarshalJSON()
				require.NoError(t, err)
				gotBody, err := gotRes.Request.MarshalJSON()
				require.NoError(t, err)
				require.Equal(t, string(wantBody), string(gotBody), "step %d", step)
				require.Equal(t, wantRes.Dropped, gotRes.Dropped)
				require.Equal(t, tt.dropped, len(gotRes.Dropped) > 0, "step %d: %v", step, gotRes.Dropped)
				// The next turn's messages, read again as a host reading its rows does.
				msgs = append(rebuilt(t, msgs), host.Message{ID: "row-after", Message: text("and after the change")})
			}
		})
	}
}

// TestMemoConcurrent: goroutines sharing a Conversation and its Memo replay what a
// Conversation without one does (run with -race).
func TestMemoConcurrent(t *testing.T) {
	ctx := context.Background()
	store := &host.MemoryStore{}
	hc := &hostConv{c: host.Conversation{ID: "conv-m", Store: store, Memo: &host.Memo{}}}
	script(t, ctx, 0, 9, []conv{hc}, []*agentctx.Pipeline{newPipeline(t, t.TempDir())})
	bare := host.Conversation{ID: "conv-m", Store: store}
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for g := range errs {
		wg.Go(func() {
			for k := range 5 {
				msgs := hc.msgs[:len(hc.msgs)-(g+k)%4]
				want, err := bare.Replay(ctx, msgs)
				if err != nil {
					errs[g] = err
					return
				}
				got, err := hc.c.Replay(ctx, msgs)
				if err != nil {
					errs[g] = err
					return
				}
				if !slices.EqualFunc(want.Records, got.Records, func(a, b transcript.Record) bool { return a.UUID == b.UUID && a.ParentUUID == b.ParentUUID }) || want.Leaf != got.Leaf {
					errs[g] = fmt.Errorf("%d messages: the replays differ", len(msgs))
					return
				}
			}
		})
	}
	wg.Wait()
	for g, err := range errs {
		require.NoError(t, err, "goroutine %d", g)
	}
}
