package simulate_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/simulate"
	"github.com/agentctx/agentctx/transcript"
)

// A recorded session of two requests replayed under the default policy: the second request
// reads the first from the prompt cache, and the real usage stands beside the simulated one.
func Example() {
	// The first prompt carries a long document: a prefix shorter than the model's minimum
	// cacheable length (1,024 tokens for Sonnet 4.5) is never cached.
	doc := strings.Repeat("Caches keep what was said, so it need not be read again. ", 60)
	session := `{"type":"user","uuid":"u1","parentUuid":null,"timestamp":"2026-03-01T10:00:00Z","message":{"role":"user","content":"` + doc + `Write a haiku about caches."}}
{"type":"assistant","uuid":"a1","parentUuid":"u1","timestamp":"2026-03-01T10:00:04Z","message":{"id":"msg_1","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"Warm bytes wait in line."}],"usage":{"input_tokens":4,"cache_creation_input_tokens":1148,"output_tokens":9}}}
{"type":"user","uuid":"u2","parentUuid":"a1","timestamp":"2026-03-01T10:01:00Z","message":{"role":"user","content":"Another one, shorter."}}
{"type":"assistant","uuid":"a2","parentUuid":"u2","timestamp":"2026-03-01T10:01:03Z","message":{"id":"msg_2","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"Hit."}],"usage":{"input_tokens":4,"cache_read_input_tokens":1148,"cache_creation_input_tokens":22,"output_tokens":3}}}
`
	tr, err := transcript.Read(strings.NewReader(session), "session.jsonl", transcript.ReadOptions{})
	if err != nil {
		panic(err)
	}
	cfg := agentctx.Config{Model: "claude-sonnet-4-5", Tokens: agentctx.EstimateCounter{}}
	sim, err := simulate.Run(context.Background(), tr.Records, cfg, simulate.Options{})
	if err != nil {
		panic(err)
	}
	for _, t := range sim.Turns {
		fmt.Printf("turn %d: input %d = read %d + write %d + uncached %d; real read %d\n",
			t.Turn, t.InputTokens, t.CacheRead, t.CacheWrite5m, t.Uncached, t.Real.CacheRead)
	}
	fmt.Printf("simulated $%.6f, real $%.6f\n", sim.Totals.Cost, sim.Real.Cost)
	// Output:
	// turn 1: input 1152 = read 0 + write 1152 + uncached 0; real read 0
	// turn 2: input 1173 = read 1152 + write 21 + uncached 0; real read 1148
	// simulated $0.004924, real $0.004936
}
