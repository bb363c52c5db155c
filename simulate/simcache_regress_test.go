package simulate

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/provider"
	"github.com/agentctx/agentctx/transcript"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var simT0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// simSession is a conversation of n exchanges, a minute apart, of one short text each.
func simSession(n int) (recs []transcript.Record) {
	for i := range 2 * n {
		role := []transcript.Role{transcript.RoleUser, transcript.RoleAssistant}[i%2]
		r := transcript.Record{Type: transcript.RecordType(role), UUID: fmt.Sprintf("00000000-0000-4000-8000-%012d", i+1),
			Timestamp: simT0.Add(time.Duration(i) * time.Minute).Format(time.RFC3339),
			Message:   &transcript.Message{Role: role, ID: fmt.Sprint("msg_", i), Content: []transcript.Block{&transcript.Text{Text: fmt.Sprint("text ", i)}}}}
		if i > 0 {
			r.ParentUUID = recs[i-1].UUID
		}
		recs = append(recs, r)
	}
	return recs
}

// TestSimCacheMinCacheable: a prompt shorter than the model's minimum cacheable prefix is
// uncached input, never a cache write.
func TestSimCacheMinCacheable(t *testing.T) {
	sim, _ := Run(t.Context(), simSession(2), agentctx.Config{Model: "claude-sonnet-4-5", Tokens: agentctx.EstimateCounter{}}, Options{})
	u := sim.Turns[0]
	if u.InputTokens >= 1024 || u.CacheWrite5m != 0 || u.Uncached != u.InputTokens {
		t.Errorf("%d-token prompt, below Sonnet 4.5's 1,024 minimum: write %d, uncached %d", u.InputTokens, u.CacheWrite5m, u.Uncached)
	}
}

// TestSimCacheEveryHitRefreshed: a read refreshes every entry the request uses, not only
// the longest: the system prompt's entry, read by each request, outlives its first 5 minutes.
func TestSimCacheEveryHitRefreshed(t *testing.T) {
	p, _ := agentctx.New(agentctx.Config{Model: "claude-sonnet-4-5", Tokens: agentctx.EstimateCounter{}, Cache: agentctx.CacheConfig{SystemMarker: true}})
	sys, recs, pc := []*transcript.Text{{Text: fmt.Sprint(make([]int, 200))}}, simSession(8), newPromptCache(p.Counter(), 0)
	for k := 1; k <= 7; k++ { // requests every 2 minutes, each extending the last
		res, _ := p.Prepare(t.Context(), agentctx.Input{Records: recs[:2*k-1], System: sys})
		pc.send(&res.Request, simT0.Add(time.Duration(2*k)*time.Minute), 0)
	}
	other := []transcript.Record{{Type: transcript.TypeUser, UUID: "99999999-0000-4000-8000-000000000001", Message: &transcript.Message{Role: transcript.RoleUser, Content: []transcript.Block{&transcript.Text{Text: "summary"}}}}}
	res, _ := p.Prepare(t.Context(), agentctx.Input{Records: other, System: sys})
	if use := pc.send(&res.Request, simT0.Add(15*time.Minute), 0); use.read < p.Counter().Block(sys[0]) {
		t.Errorf("system prompt used a minute ago by a request breakpointed on it: read %d", use.read)
	}
}

// TestSimCacheThinkingInvalidates: changing the thinking budget invalidates the cached
// messages.
func TestSimCacheThinkingInvalidates(t *testing.T) {
	p, _ := agentctx.New(agentctx.Config{Model: "claude-sonnet-4-5", Tokens: agentctx.EstimateCounter{}})
	res, _ := p.Prepare(t.Context(), agentctx.Input{Records: simSession(3)[:5]})
	pc, a, b := newPromptCache(p.Counter(), 0), res.Request, res.Request
	a.Thinking, b.Thinking = &provider.Thinking{Type: "enabled", BudgetTokens: 4000}, &provider.Thinking{Type: "enabled", BudgetTokens: 2000}
	pc.send(&a, simT0, 0)
	if use := pc.send(&b, simT0.Add(time.Second), 0); use.read != 0 {
		t.Errorf("thinking budget changed: messages prefix read %d of %d", use.read, res.Report.InputTokens)
	}
}

// TestSimulateTimeUTC: a turn's time is UTC whatever offset the file wrote.
func TestSimulateTimeUTC(t *testing.T) {
	recs := simSession(1)
	recs[0].Timestamp = "2026-03-01T12:00:00+02:00"
	sim, _ := Run(t.Context(), recs, agentctx.Config{Model: "claude-sonnet-4-5", Tokens: agentctx.EstimateCounter{}}, Options{})
	if b, _ := sim.Turns[0].Time.MarshalJSON(); string(b) != `"2026-03-01T10:00:00Z"` {
		t.Errorf("turn time %s, docs say UTC", b)
	}
}

// TestSimCacheDigestMemoBounded: the digest memo holds the blocks of the last two requests,
// not of every request.
func TestSimCacheDigestMemoBounded(t *testing.T) {
	p, _ := agentctx.New(agentctx.Config{Model: "claude-sonnet-4-5", Tokens: agentctx.EstimateCounter{}})
	recs, pc := simSession(60), newPromptCache(p.Counter(), 0)
	for k := 1; k <= 60; k++ {
		res, _ := p.Prepare(t.Context(), agentctx.Input{Records: recs[:2*k-1]})
		pc.send(&res.Request, simT0, 0)
	}
	if len(pc.digests) > 2*len(recs) {
		t.Errorf("memo holds %d blocks for a %d-block session", len(pc.digests), len(recs))
	}
}

// TestSimCacheMinimumPrefixEdge: a breakpoint on a prefix of exactly the model's minimum
// cacheable size writes an entry; one token shorter, it does not.
func TestSimCacheMinimumPrefixEdge(t *testing.T) {
	p, err := agentctx.New(agentctx.Config{Model: "claude-sonnet-4-5", Tokens: agentctx.EstimateCounter{}})
	require.NoError(t, err)
	req := provider.Request{Model: "claude-sonnet-4-5", MaxTokens: 100, Messages: []provider.Message{{Role: transcript.RoleUser, Content: []transcript.Block{
		&transcript.Text{Text: strings.Repeat("a cacheable prefix ", 160), CacheControl: transcript.Ephemeral()}}}}}
	pos := newPromptCache(p.Counter(), 0).positions(&req)
	size := pos[lastMarker(pos)].tokens
	for _, tc := range []struct {
		min    int
		writes bool
	}{{size, true}, {size + 1, false}} {
		use := newPromptCache(p.Counter(), tc.min).send(&req, simT0, 0)
		assert.Equal(t, tc.writes, use.write5m > 0, "a %d-token prefix with a minimum of %d", size, tc.min)
	}
}
