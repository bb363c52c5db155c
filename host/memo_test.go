package host_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

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
// store; and the turn after the change, whose messages grew again, too.
func TestMemoSameReplay(t *testing.T) {
	text := func(s string) *transcript.Message {
		return &transcript.Message{Role: transcript.RoleUser, Content: []transcript.Block{&transcript.Text{Text: s}}}
	}
	tests := []struct {
		name   string
		change func(t *testing.T, msgs []host.Message, stored []transcript.Record) ([]host.Message, host.DecisionStore)
		lost   bool
	}{
		{"grown", func(t *testing.T, msgs []host.Message, stored []transcript.Record) ([]host.Message, host.DecisionStore) {
			return append(msgs, host.Message{ID: "row-new", Message: text("one more thing")}), copyStore(t, stored)
		}, false},
		{"edited", func(t *testing.T, msgs []host.Message, stored []transcript.Record) ([]host.Message, host.DecisionStore) {
			msgs[10].Message = &transcript.Message{Role: transcript.RoleUser, Content: []transcript.Block{transcript.TextResult("toolu_02", "rewritten")}}
			return msgs, copyStore(t, stored)
		}, false},
		{"deleted", func(t *testing.T, msgs []host.Message, stored []transcript.Record) ([]host.Message, host.DecisionStore) {
			return slices.Delete(msgs, 12, 13), copyStore(t, stored)
		}, false},
		{"inserted in the middle", func(t *testing.T, msgs []host.Message, stored []transcript.Record) ([]host.Message, host.DecisionStore) {
			return slices.Insert(msgs, 6, host.Message{ID: "row-aside", Message: text("an aside")}), copyStore(t, stored)
		}, false},
		{"reordered", func(t *testing.T, msgs []host.Message, stored []transcript.Record) ([]host.Message, host.DecisionStore) {
			msgs[12], msgs[16] = msgs[16], msgs[12]
			return msgs, copyStore(t, stored)
		}, false},
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
		}, false},
		{"store rewritten in place", func(t *testing.T, msgs []host.Message, stored []transcript.Record) ([]host.Message, host.DecisionStore) {
			recs := slices.Clone(stored)
			i := slices.IndexFunc(recs, func(r transcript.Record) bool { return r.Subtype == transcript.SubtypeToolResultBudget })
			require.GreaterOrEqual(t, i, 0)
			recs[i].UUID = "00000000-0000-4000-8000-000000000001"
			return msgs, copyStore(t, recs)
		}, false},
		{"lost store", func(t *testing.T, msgs []host.Message, stored []transcript.Record) ([]host.Message, host.DecisionStore) {
			return msgs, &host.MemoryStore{}
		}, true},
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
				msgs = append(msgs, host.Message{ID: "row-after", Message: text("and after the change")})
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
