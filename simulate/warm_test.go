package simulate_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/simulate"
	"github.com/agentctx/agentctx/transcript"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// warmSession is a generated three-turn session whose first response read firstRead tokens
// from the cache, its first request sent after wait.
func warmSession(firstRead int, wait time.Duration) []transcript.Record {
	t0 := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	var recs []transcript.Record
	add := func(role transcript.Role, text string, at time.Duration, read int) {
		r := transcript.Record{Type: transcript.RecordType(role), UUID: fmt.Sprintf("00000000-0000-4000-8000-%012d", len(recs)+1),
			SessionID: "22222222-2222-4222-8222-222222222222", Timestamp: t0.Add(at).Format(time.RFC3339Nano),
			Message: &transcript.Message{Role: role, Content: []transcript.Block{&transcript.Text{Text: text}}}}
		if len(recs) > 0 {
			r.ParentUUID = recs[len(recs)-1].UUID
		}
		if role == transcript.RoleAssistant {
			r.Message.ID, r.Message.Model = fmt.Sprintf("msg_%d", len(recs)), "claude-sonnet-4-5"
			r.Message.Usage = &transcript.Usage{InputTokens: 10, CacheReadInputTokens: read, OutputTokens: 5}
		}
		recs = append(recs, r)
	}
	add(transcript.RoleUser, "Hello.", 0, 0)
	add(transcript.RoleUser, strings.Repeat("The parser reads sections, keys and values. ", 120)+"Write it.", wait, 0)
	add(transcript.RoleAssistant, "Here is a parser.", wait+20*time.Second, firstRead)
	add(transcript.RoleUser, "Now add tests.", wait+time.Minute, 0)
	add(transcript.RoleAssistant, "Tests added.", wait+80*time.Second, 0)
	add(transcript.RoleUser, "And a benchmark.", wait+2*time.Minute, 0)
	add(transcript.RoleAssistant, "Benchmark added.", wait+150*time.Second, 0)
	return recs
}

// TestWarmStart: with a fixed prefix of 3,000 tokens (the session calls no tool: the system
// prompt is the whole prefix), a first response that read from the cache starts the replay
// with the part of the prefix that read covers already cached at the first request's time (the
// whole prefix when it read more, the system prompt split in two when it read part of it), in
// both replay modes; a first response that read nothing, or no fixed prefix, starts cold; a
// first request sent longer after the file's first record than the entry's time to live still
// reads it, with either TTL: the first response read it, so it was alive when it was sent.
func TestWarmStart(t *testing.T) {
	const prefix = 3000
	for _, tc := range []struct {
		name      string
		read      int
		wait      time.Duration
		ttl       string
		system    int // Options.SystemTokens
		warm      int // Result.WarmPrefix; -1: the whole prefix
		firstRead bool
	}{
		{name: "cold", read: 0, wait: 10 * time.Second, system: prefix},
		{name: "whole", read: 50_000, wait: 10 * time.Second, system: prefix, warm: -1, firstRead: true},
		{name: "part", read: 2000, wait: 10 * time.Second, system: prefix, warm: 2000, firstRead: true},
		{name: "no fixed prefix", read: 50_000, wait: 10 * time.Second},
		{name: "late", read: 50_000, wait: 6 * time.Minute, system: prefix, warm: -1, firstRead: true},
		{name: "late 1h", read: 50_000, wait: 6 * time.Minute, ttl: "1h", system: prefix, warm: -1, firstRead: true},
	} {
		for _, mode := range []string{simulate.ReplayPolicy, simulate.ReplayFile} {
			t.Run(tc.name+"/"+mode, func(t *testing.T) {
				cfg := agentctx.Config{Model: "claude-sonnet-4-5", Tokens: agentctx.EstimateCounter{}, Cache: agentctx.CacheConfig{TTL: tc.ttl}}
				sim, err := simulate.Run(t.Context(), warmSession(tc.read, tc.wait), cfg, simulate.Options{Replay: mode, SystemTokens: tc.system})
				require.NoError(t, err)
				checkSimulation(t, sim, tc.name)
				require.Len(t, sim.Turns, 3)
				if tc.system > 0 {
					require.NotNil(t, sim.FixedPrefix)
					assert.Equal(t, tc.system, sim.FixedPrefix.Tokens, "splitting the prompt keeps its size")
				}
				first := sim.Turns[0]
				switch {
				case tc.warm == 0:
					assert.Zero(t, sim.WarmPrefix)
				case tc.warm < 0:
					assert.Equal(t, tc.system, sim.WarmPrefix, "the whole system prompt")
				default:
					assert.Equal(t, tc.warm, sim.WarmPrefix, "the prefix the first read covers, to the token")
				}
				if tc.firstRead {
					assert.Equal(t, sim.WarmPrefix, first.CacheRead, "the first request reads the seeded prefix")
					assert.Equal(t, first.InputTokens-sim.WarmPrefix, first.CacheWrite5m+first.CacheWrite1h)
				} else {
					assert.Zero(t, first.CacheRead, "the first request starts cold")
				}
				assert.Equal(t, first.InputTokens, sim.Turns[1].CacheRead, "the second request reads the first either way")
			})
		}
	}
}
