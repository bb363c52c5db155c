package agentctx

import (
	"fmt"
	"testing"
	"time"

	"github.com/agentctx/agentctx/transcript"
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
	sim, _ := Simulate(t.Context(), simSession(2), Config{Model: "claude-sonnet-4-5", Tokens: EstimateCounter{}}, SimOptions{})
	u := sim.Turns[0]
	if u.InputTokens >= 1024 || u.CacheWrite5m != 0 || u.Uncached != u.InputTokens {
		t.Errorf("%d-token prompt, below Sonnet 4.5's 1,024 minimum: write %d, uncached %d", u.InputTokens, u.CacheWrite5m, u.Uncached)
	}
}

// TestSimCacheEveryHitRefreshed: a read refreshes every entry the request uses, not only
// the longest: the system prompt's entry, read by each request, outlives its first 5 minutes.
func TestSimCacheEveryHitRefreshed(t *testing.T) {
	p, _ := New(Config{Model: "claude-sonnet-4-5", Tokens: EstimateCounter{}, Cache: CacheConfig{SystemMarker: true}})
	sys, recs, pc := []*transcript.Text{{Text: fmt.Sprint(make([]int, 200))}}, simSession(8), newPromptCache(p.counter, 0)
	for k := 1; k <= 7; k++ { // requests every 2 minutes, each extending the last
		res, _ := p.Prepare(t.Context(), Input{Records: recs[:2*k-1], System: sys})
		pc.send(&res.Request, simT0.Add(time.Duration(2*k)*time.Minute), 0)
	}
	other := []transcript.Record{{Type: transcript.TypeUser, UUID: "99999999-0000-4000-8000-000000000001", Message: &transcript.Message{Role: transcript.RoleUser, Content: []transcript.Block{&transcript.Text{Text: "summary"}}}}}
	res, _ := p.Prepare(t.Context(), Input{Records: other, System: sys})
	if use := pc.send(&res.Request, simT0.Add(15*time.Minute), 0); use.read < p.counter.Block(sys[0]) {
		t.Errorf("system prompt used a minute ago by a request breakpointed on it: read %d", use.read)
	}
}

// TestSimCacheThinkingInvalidates: changing the thinking budget invalidates the cached
// messages.
func TestSimCacheThinkingInvalidates(t *testing.T) {
	p, _ := New(Config{Model: "claude-sonnet-4-5", Tokens: EstimateCounter{}})
	res, _ := p.Prepare(t.Context(), Input{Records: simSession(3)[:5]})
	pc, a, b := newPromptCache(p.counter, 0), res.Request, res.Request
	a.Thinking, b.Thinking = &ThinkingParam{Type: "enabled", BudgetTokens: 4000}, &ThinkingParam{Type: "enabled", BudgetTokens: 2000}
	pc.send(&a, simT0, 0)
	if use := pc.send(&b, simT0.Add(time.Second), 0); use.read != 0 {
		t.Errorf("thinking budget changed: messages prefix read %d of %d", use.read, res.Report.InputTokens)
	}
}

// TestSimulateTimeUTC: a turn's time is UTC whatever offset the file wrote.
func TestSimulateTimeUTC(t *testing.T) {
	recs := simSession(1)
	recs[0].Timestamp = "2026-03-01T12:00:00+02:00"
	sim, _ := Simulate(t.Context(), recs, Config{Model: "claude-sonnet-4-5", Tokens: EstimateCounter{}}, SimOptions{})
	if b, _ := sim.Turns[0].Time.MarshalJSON(); string(b) != `"2026-03-01T10:00:00Z"` {
		t.Errorf("turn time %s, docs say UTC", b)
	}
}

// TestSimCacheDigestMemoBounded: the digest memo holds the blocks of the last two requests,
// not of every request.
func TestSimCacheDigestMemoBounded(t *testing.T) {
	p, _ := New(Config{Model: "claude-sonnet-4-5", Tokens: EstimateCounter{}})
	recs, pc := simSession(60), newPromptCache(p.counter, 0)
	for k := 1; k <= 60; k++ {
		res, _ := p.Prepare(t.Context(), Input{Records: recs[:2*k-1]})
		pc.send(&res.Request, simT0, 0)
	}
	if len(pc.digests) > 2*len(recs) {
		t.Errorf("memo holds %d blocks for a %d-block session", len(pc.digests), len(recs))
	}
}
