package simulate_test

import (
	"flag"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/simulate"
	"github.com/agentctx/agentctx/transcript"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var replayCost = flag.Bool("replaycost", false, "TestReplayCost: replay every corpus session with usage under the policy and print what it cost beside the real cost")

// TestReplayCost answers, on every Claude Code session of the corpus whose responses carry
// usage, what the default policy would have cost: each session replayed with --replay policy,
// the fixed prefix estimated from its first usage, figures in provider tokens, each turn priced
// at its response's model and the session's own thinking setting, as `agentctx simulate --replay policy` runs it; then the
// policy's cost over the real one per session (median and quartiles), and the cache-read
// shares; no prefix break goes unexplained. Run with
//
//	go test -run TestReplayCost -v -timeout 60m ./simulate -args -replaycost
//
// (BENCHMARKS.md holds the table); it skips without the flag or the corpus.
func TestReplayCost(t *testing.T) {
	if !*replayCost {
		t.Skip("pass -replaycost: it replays the whole corpus")
	}
	var (
		ratios, prefixes, cals []float64
		raw, hour, file, long  []float64 // first prompt − first request; the cost ratio with 1-hour entries, replaying the file, of sessions of 10 turns or more
		auto                   []float64 // the cost ratio with ttl "auto"
		sumAuto                float64   // the policy's cost with ttl "auto", all sessions
		readPolicy, readReal   []float64
		sum                    struct{ policy, real simulate.Totals }
		sessions               int
	)
	for _, f := range corpusFiles(t, 1) {
		if !strings.Contains(f, "claude-code") {
			continue
		}
		tr, err := transcript.ReadFile(f, transcript.ReadOptions{})
		require.NoError(t, err)
		cfg := agentctx.Config{Model: sessionModel(tr.Records), Compact: agentctx.CompactConfig{Rehydrate: agentctx.RehydrateConfig{DisableFiles: true}}}
		sim, err := simulate.Run(t.Context(), tr.Records, cfg, simulate.Options{Replay: simulate.ReplayPolicy,
			EstimatePrefix: true, Calibrate: true, SessionThinking: true, ResponseModels: true})
		require.NoError(t, err, f)
		assert.Zero(t, sim.Totals.Unexplained, "%s: the prefix invariant holds under --replay policy", f)
		r := sim.Real
		if r == nil || r.Cost == 0 || sim.Totals.Cost == 0 {
			continue
		}
		sessions++
		p := &sim.Totals
		ratios = append(ratios, p.Cost/r.Cost)
		if len(sim.Turns) >= 10 {
			long = append(long, p.Cost/r.Cost)
		}
		raw = append(raw, float64(sim.FixedPrefix.FirstPrompt-sim.FixedPrefix.FirstRequest))
		for _, v := range []struct {
			to   *[]float64
			mode string
			ttl  string
		}{{&hour, simulate.ReplayPolicy, "1h"}, {&file, simulate.ReplayFile, ""}, {&auto, simulate.ReplayPolicy, "auto"}} {
			c := cfg
			c.Cache.TTL = v.ttl
			other, err := simulate.Run(t.Context(), tr.Records, c, simulate.Options{Replay: v.mode, EstimatePrefix: true, Calibrate: true, SessionThinking: true, ResponseModels: true})
			require.NoError(t, err, f)
			*v.to = append(*v.to, other.Totals.Cost/other.Real.Cost)
			if v.ttl == "auto" {
				sumAuto += other.Totals.Cost
				assert.Zero(t, other.Totals.Unexplained, "%s: the prefix invariant holds with ttl auto", f)
			}
		}
		prefixes = append(prefixes, float64(sim.FixedPrefix.Tokens)*sim.Calibration.Ratio)
		cals = append(cals, sim.Calibration.Ratio)
		readPolicy = append(readPolicy, share(p))
		readReal = append(readReal, share(r))
		for _, pair := range []struct{ to, from *simulate.Totals }{{&sum.policy, p}, {&sum.real, r}} {
			pair.to.Turns += pair.from.Turns
			pair.to.Cost += pair.from.Cost
			pair.to.InputTokens += pair.from.InputTokens
			pair.to.CacheRead += pair.from.CacheRead
			pair.to.CacheWrite5m += pair.from.CacheWrite5m + pair.from.CacheWrite1h
			pair.to.Uncached += pair.from.Uncached
			pair.to.Compactions += pair.from.Compactions
			pair.to.Misses += pair.from.Misses
		}
		t.Logf("%-60s %4d turns  prefix %6d  ratio %.3f  thinking %-5t  policy $%8.4f  real $%8.4f  ×%.3f  read %.2f/%.2f  compactions %d/%d  misses %d/%d",
			filepath.Base(f), len(sim.Turns), sim.FixedPrefix.Tokens, sim.Calibration.Ratio, sim.Thinking != nil, p.Cost, r.Cost, p.Cost/r.Cost,
			share(p), share(r), p.Compactions, r.Compactions, p.Misses, r.Misses)
	}
	if sessions == 0 {
		t.Skip("no corpus session carries usage")
	}
	t.Logf("%d sessions", sessions)
	t.Logf("policy cost ÷ real cost: %s; all sessions together %.3f", quartiles(ratios), sum.policy.Cost/sum.real.Cost)
	t.Logf("the same, %d sessions of 10 turns or more: %s", len(long), quartiles(long))
	t.Logf("the same with [cache] ttl = \"1h\": %s; replaying the file (--replay file): %s", quartiles(hour), quartiles(file))
	t.Logf("the same with [cache] ttl = \"auto\": %s; all sessions together %.3f ($%.2f)", quartiles(auto), sumAuto/sum.real.Cost, sumAuto)
	t.Logf("first reported prompt − first request counted: %s", quartiles(raw))
	t.Logf("cache-read share, policy: %s; real: %s", quartiles(readPolicy), quartiles(readReal))
	t.Logf("fixed prefix (provider tokens): %s; calibration ratio: %s", quartiles(prefixes), quartiles(cals))
	for _, side := range []struct {
		name string
		t    simulate.Totals
	}{{"policy", sum.policy}, {"real", sum.real}} {
		t.Logf("%-6s $%.2f  input %d  read %d (%.1f %%)  write %d  uncached %d  compactions %d  misses %d", side.name, side.t.Cost,
			side.t.InputTokens, side.t.CacheRead, 100*share(&side.t), side.t.CacheWrite5m, side.t.Uncached, side.t.Compactions, side.t.Misses)
	}
}

// share is the part of the input read from the cache.
func share(t *simulate.Totals) float64 {
	if t.InputTokens == 0 {
		return 0
	}
	return float64(t.CacheRead) / float64(t.InputTokens)
}

// quartiles formats the median and quartiles of xs.
func quartiles(xs []float64) string {
	s := slices.Clone(xs)
	slices.Sort(s)
	at := func(q float64) float64 { return s[int(q*float64(len(s)-1)+0.5)] }
	return fmt.Sprintf("median %.3f (quartiles %.3f–%.3f)", at(0.5), at(0.25), at(0.75))
}

// sessionModel is the session's last model the model table knows, as the simulate command
// picks it, else claude-sonnet-4-5.
func sessionModel(records []transcript.Record) string {
	models := agentctx.DefaultModels()
	for i := len(records) - 1; i >= 0; i-- {
		if r := &records[i]; r.Type == transcript.TypeAssistant && r.Message != nil {
			if _, ok := models.Lookup(r.Message.Model); ok {
				return r.Message.Model
			}
		}
	}
	return "claude-sonnet-4-5"
}
