package agentctx_test

import (
	"os"
	"testing"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/testkit"
	"github.com/agentctx/agentctx/summarize"
	"github.com/agentctx/agentctx/transcript"
)

// peerSessionEnv names the transcript file BenchmarkPeer reads; bench/peer/run sets it.
const peerSessionEnv = "AGENTCTX_PEER_SESSION"

// BenchmarkPeer is agentctx's side of the LangChain peer comparison (bench/peer, issue 12): a
// steady turn on the Claude Code session in the file $AGENTCTX_PEER_SESSION, the same file the
// Node peer trims. Each op is Prepare and Request.MarshalJSON of one new exchange on a warm
// Pipeline (default tiktoken counter), in two settings:
//
//   - whole: a window so large nothing compacts, so the request holds the whole history (the
//     conservative comparison: agentctx sends more than the 200k tokens LangChain keeps);
//   - window=200k: a 200,000-token window with the extractive summarizer; the session is
//     compacted once before timing (when it overflows) and the steady turn runs on the
//     compacted records, what an agent with a 200k budget sends each turn.
//
// Without the variable the benchmark is skipped.
func BenchmarkPeer(b *testing.B) {
	path := os.Getenv(peerSessionEnv)
	if path == "" {
		b.Skipf("%s is not set: bench/peer/run sets it to the session file both sides read", peerSessionEnv)
	}
	tr, err := transcript.ReadFile(path, transcript.ReadOptions{})
	if err != nil {
		b.Fatal(err)
	}
	tc := agentctx.DefaultTokenCounter()
	for _, s := range []struct {
		name string
		cfg  agentctx.Config
	}{
		{"whole", agentctx.Config{ContextWindow: 40_000_000}},
		{"window=200k", agentctx.Config{ContextWindow: 200_000,
			Compact: agentctx.CompactConfig{Summarizer: summarize.Extractive{}}}},
	} {
		b.Run(s.name, func(b *testing.B) {
			cfg := s.cfg
			cfg.Model = "claude-sonnet-4-5"
			cfg.Tokens = tc
			cfg.Budget = agentctx.BudgetConfig{Store: &agentctx.MapStore{}}
			cfg.Now = func() time.Time { return benchNow }
			p, err := agentctx.New(cfg)
			if err != nil {
				b.Fatal(err)
			}
			// The first Prepare compacts when the session overflows the window; its records
			// join the transcript, as the caller appends them, and every turn after is steady.
			res, err := p.Prepare(b.Context(), agentctx.Input{Records: tr.Records})
			if err != nil {
				b.Fatal(err)
			}
			compacted := 0.0
			if res.Report.Compaction != nil {
				compacted = 1
			}
			recs := append(append(make([]transcript.Record, 0, len(tr.Records)+len(res.Append)+1), tr.Records...), res.Append...)
			leaf := res.Leaf
			next := func(i int) agentctx.Input {
				return agentctx.Input{Records: append(recs, testkit.Prompt("peer", i, leaf))}
			}
			// One untimed turn warms the memos on the records the timed turns build on.
			benchSteadyTurn(b, p, next)
			b.ReportMetric(compacted, "compacted")
		})
	}
}
