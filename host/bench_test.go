package host_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/host"
	"github.com/agentctx/agentctx/session"
)

// BenchmarkTurn measures one more turn of a 100- and a 1,000-turn conversation (400 and
// 4,000 messages, with their replacements and compactions): through a host Conversation with
// a Memo, which extends the last turn's replay, handed the same messages (host) or the
// messages rebuilt with the same content, as a host that reads its rows each turn has them
// (host-rebuilt: the memo compares them with last turn's; the rebuilding is outside the
// timer, and rebuild-only is its cost), and through a session.Session, the floor; at 100
// turns also through a Conversation without a Memo, which derives every message's record and
// replays every decision each turn.
func BenchmarkTurn(b *testing.B) {
	for _, turns := range []int{100, 1_000} {
		b.Run(fmt.Sprintf("turns=%d", turns), func(b *testing.B) {
			ctx := context.Background()
			root := b.TempDir()
			store := &host.MemoryStore{}
			hc := &hostConv{c: host.Conversation{ID: "bench", Store: store, Memo: &host.Memo{}}}
			sc := &sessionConv{t: b}
			sc.s = session.New(session.Options{ID: "bench", Now: func() time.Time { return sc.now }})
			hp, sp := newPipeline(b, root), newPipeline(b, root)
			script(b, ctx, 0, turns, []conv{hc, sc}, []*agentctx.Pipeline{hp, sp})
			b.Run("host", func(b *testing.B) {
				for b.Loop() {
					if _, err := hc.prepare(ctx, hp); err != nil {
						b.Fatal(err)
					}
				}
			})
			// A host that reads its rows every turn hands new messages with the same content:
			// the memo compares them with last turn's, outside the timer they are made.
			rb := &hostConv{c: host.Conversation{ID: "bench", Store: store, Memo: &host.Memo{}}, msgs: rebuilt(b, hc.msgs)}
			rp := newPipeline(b, root)
			if _, err := rb.prepare(ctx, rp); err != nil {
				b.Fatal(err)
			}
			b.Run("host-rebuilt", func(b *testing.B) {
				for b.Loop() {
					b.StopTimer()
					rb.msgs = rebuilt(b, hc.msgs)
					b.StartTimer()
					if _, err := rb.prepare(ctx, rp); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("rebuild-only", func(b *testing.B) {
				for b.Loop() {
					rb.msgs = rebuilt(b, hc.msgs)
				}
			})
			b.Run("session", func(b *testing.B) {
				for b.Loop() {
					if _, err := sc.prepare(ctx, sp); err != nil {
						b.Fatal(err)
					}
				}
			})
			if turns > 100 {
				return
			}
			bare := &hostConv{c: host.Conversation{ID: "bench", Store: store}, msgs: hc.msgs}
			b.Run("host-no-memo", func(b *testing.B) {
				for b.Loop() {
					if _, err := bare.prepare(ctx, hp); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}
