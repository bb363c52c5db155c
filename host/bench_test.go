package host_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/host"
	"github.com/agentctx/agentctx/session"
)

// BenchmarkTurn measures one more turn of a 100-turn conversation (400 messages, with its
// replacements and compactions): through a host Conversation, which derives the records and
// replays the decisions each turn, and through a session.Session, its floor.
func BenchmarkTurn(b *testing.B) {
	ctx := context.Background()
	root := b.TempDir()
	store := &host.MemoryStore{}
	hc := &hostConv{c: host.Conversation{ID: "bench", Store: store}}
	sc := &sessionConv{t: b}
	sc.s = session.New(session.Options{ID: "bench", Now: func() time.Time { return sc.now }})
	hp, sp := newPipeline(b, root), newPipeline(b, root)
	script(b, ctx, 0, 100, []conv{hc, sc}, []*agentctx.Pipeline{hp, sp})
	b.Run("host", func(b *testing.B) {
		for b.Loop() {
			if _, err := hc.prepare(ctx, hp); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("session", func(b *testing.B) {
		for b.Loop() {
			if _, err := sc.prepare(ctx, sp); err != nil {
				b.Fatal(err)
			}
		}
	})
}
