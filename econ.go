package agentctx

import (
	"cmp"
	"fmt"
	"math"
	"time"

	"github.com/agentctx/agentctx/transcript"
)

// Anthropic's prompt cache prices, as multiples of the base input price: a read costs a tenth,
// a write with the default 5-minute time to live 1.25×, with the 1-hour one 2×.
const (
	defaultReadPrice  = 0.1
	defaultWrite5m    = 1.25
	defaultWrite1h    = 2.0
	shortTTL          = 5 * time.Minute
	longTTL           = time.Hour
	maxTurnsAhead     = 50
	defaultTurnsAhead = 10
)

// CacheCost is the cache economics of one decision that changes the provider's cached
// prefix, as the policy reckoned it when it made or deferred the decision (see
// [CacheConfig]): figures in tokens, costs in base-input-token equivalents (a token of
// uncached input costs 1).
type CacheCost struct {
	// Decision names it: "compaction", "fold" (a collapse producer's commit) or
	// "microcompact" (a time-based clearing).
	Decision string
	// Made is false when the decision was deferred: the prefix is warm and the gain is under
	// the floor. Reason says why it was made or deferred.
	Made   bool
	Reason string
	// Cold reports that the cached prefix had expired (Idle over TTL) or caching is off: the
	// request rewrites it whatever the decision, which then costs no extra write. Idle is the
	// time since the last response's record (−1: no response yet); TTL the time to live in
	// effect.
	Cold bool
	Idle time.Duration
	TTL  time.Duration
	// Freed is the tokens the decision takes out of the request; Rewritten the tokens of the
	// cached prefix it makes the provider write again (the part kept after the first change,
	// plus what the decision writes in place of what it took out).
	Freed, Rewritten int
	// TurnsAhead is the estimate of the requests that will send the freed tokens no more
	// before the next compaction rewrites everything anyway: the room left under the
	// auto-compact threshold after the decision, divided by the view's mean growth per
	// response, between 1 and 50 (10 when the view holds no response).
	TurnsAhead int
	// Cost is the extra the bust costs: Rewritten × (write price − read price), 0 when cold.
	// Gain is what the freed tokens save: Freed × read price × TurnsAhead. MinGain is the
	// floor on Freed for a warm advisory decision: Rewritten × [CacheConfig.MinGain] (or the
	// default ratio).
	Cost, Gain float64
	MinGain    int
}

// String describes c in a line.
func (c CacheCost) String() string {
	temp := "warm"
	if c.Cold {
		temp = "cold"
	}
	verb := "deferred"
	if c.Made {
		verb = "made"
	}
	return fmt.Sprintf("%s %s, prefix %s (idle %s, ttl %s): frees %d, rewrites %d; cost %.0f, gain %.0f over %d turns, floor %d: %s",
		c.Decision, verb, temp, c.Idle.Round(time.Second), c.TTL, c.Freed, c.Rewritten, c.Cost, c.Gain, c.TurnsAhead, c.MinGain, c.Reason)
}

// ttlAuto is the CacheConfig.TTL that chooses the time to live from the session's gaps.
const ttlAuto = "auto"

// ttl is the markers' time to live under a fixed TTL (5 minutes for "auto": see ttlAt).
func (c CacheConfig) ttl() time.Duration {
	if c.TTL == "1h" {
		return longTTL
	}
	return shortTTL
}

// ttlAt is the markers' time to live in effect on t: the configured one, or with "auto" the
// one the latest [transcript.SubtypeCacheTTL] decision of t's thread chose (5 minutes before
// any). Memoized on the turn.
func ttlAt(t *turn, c CacheConfig) time.Duration {
	if c.TTL != ttlAuto {
		return c.ttl()
	}
	if t.ttl == 0 {
		t.ttl = shortTTL
		if d := lastTTLDecision(t); d != nil && d.TTL == "1h" {
			t.ttl = longTTL
		}
	}
	return t.ttl
}

// lastTTLDecision is the latest cache TTL decision of t's thread, or nil.
func lastTTLDecision(t *turn) (d *transcript.CacheTTLDecision) {
	t.chain.Scan().Each(t.in.Records, transcript.ScanCacheTTL, func(_ int, r *transcript.Record) {
		if r.Type == transcript.TypeSystem && r.Subtype == transcript.SubtypeCacheTTL && r.CacheTTL != nil && !transcript.OtherThread(r, t.chain.Leaf) {
			d = r.CacheTTL
		}
	})
	return d
}

// decideTTL is the time to live t's markers carry under "auto", as a CacheConfig.TTL value:
// the one in effect, or a new choice, whose decision record it appends. A fork (Input.
// SkipCacheWrite) and a view without a leaf keep the one in effect.
func decideTTL(t *turn, c CacheConfig) string {
	name := func(d time.Duration) string {
		if d == longTTL {
			return "1h"
		}
		return "" // the provider's default, 5 minutes: the bytes of the default config
	}
	cur := ttlAt(t, c)
	if t.in.SkipCacheWrite || t.chain.Leaf == nil || t.report == nil {
		return name(cur)
	}
	d := t.chain.Scan().ChooseCacheTTL(t.in.Records, t.chain.Leaf, c.readPrice(), c.writePrice(shortTTL), c.writePrice(longTTL))
	next := shortTTL
	if d.TTL == "1h" {
		next = longTTL
	}
	if next == cur {
		return name(cur)
	}
	rec := t.newDecision(transcript.SubtypeCacheTTL, "ttl\x00"+d.TTL+"\x00"+t.chain.Leaf.UUID,
		fmt.Sprintf("Cache TTL %s: %d idle gaps of 5 to 60 minutes would cost %.0f in 5-minute rewrites, 1-hour writes %.0f more", d.TTL, d.Gaps, d.Rewrites5m, d.Premium1h))
	rec.CacheTTL = &d
	t.appended = append(t.appended, rec)
	t.ttl = next
	t.report.stage("cache").add(Action{Kind: ActionMarker, Record: rec.UUID, Detail: fmt.Sprintf("cache ttl %s from here on (auto): %d gaps of 5 to 60 minutes, 5-minute rewrites %.0f vs 1-hour premium %.0f", d.TTL, d.Gaps, d.Rewrites5m, d.Premium1h)})
	return name(next)
}

// readPrice is a cache read's price, relative to the base input price.
func (c CacheConfig) readPrice() float64 { return cmp.Or(c.ReadPrice, defaultReadPrice) }

// writePrice is a cache write's price at time to live ttl, relative to the base input price.
func (c CacheConfig) writePrice(ttl time.Duration) float64 {
	if c.WritePrice != 0 {
		return c.WritePrice
	}
	if ttl == longTTL {
		return defaultWrite1h
	}
	return defaultWrite5m
}

// minGainRatio is the least tokens a warm advisory decision must free per token it rewrites:
// MinGain, or (write − read) ÷ (read × turnsAhead), the ratio at which the reads the freed
// tokens save over the turns ahead pay for the rewrite; 0 (no floor) for a negative MinGain.
func (c CacheConfig) minGainRatio(ttl time.Duration, turnsAhead int) float64 {
	switch {
	case c.MinGain < 0:
		return 0
	case c.MinGain > 0:
		return c.MinGain
	}
	r := c.readPrice()
	return max(0, c.writePrice(ttl)-r) / (r * float64(max(turnsAhead, 1)))
}

// temperature is the state of the provider's cached prefix at a turn: a pure function of the
// view's records, the config and the turn's clock.
type temperature struct {
	cold bool
	idle time.Duration // since the last response's record; −1 without one
	ttl  time.Duration
}

// temperatureOf returns t's temperature under c: cold when caching is off or the time since
// the view's last dated response exceeds the time to live in effect. A view without a
// response is warm: the provider may hold its fixed prefix from an earlier session.
func temperatureOf(t *turn, c CacheConfig) temperature {
	tp := temperature{idle: -1, ttl: ttlAt(t, c)}
	if gap, last := idleGap(t); last >= 0 {
		tp.idle = gap
		tp.cold = gap > tp.ttl
	}
	tp.cold = tp.cold || c.Disable
	return tp
}

// turnsAhead estimates the requests ahead that the tokens a decision frees at pressure will
// not be sent in, before the auto-compact threshold is reached again (see
// [CacheCost.TurnsAhead]).
func turnsAhead(t *turn, pressure, freed int) int {
	responses := 0
	for i := range t.items {
		if t.items[i].role == transcript.RoleAssistant && t.items[i].rec != nil {
			responses++
		}
	}
	if responses == 0 || pressure <= 0 {
		return defaultTurnsAhead
	}
	growth := float64(pressure) / float64(responses)
	room := float64(t.levels.Threshold - (pressure - freed))
	return min(maxTurnsAhead, max(1, int(math.Round(room/growth))))
}

// cacheCost reckons a decision that frees freed tokens and rewrites rewritten at pressure on
// t under c, and whether it pays: always when cold, else when Freed reaches the floor.
func cacheCost(t *turn, c CacheConfig, decision string, pressure, freed, rewritten int) CacheCost {
	tp := temperatureOf(t, c)
	n := turnsAhead(t, pressure, freed)
	r := c.readPrice()
	cc := CacheCost{Decision: decision, Cold: tp.cold, Idle: tp.idle, TTL: tp.ttl, Freed: freed, Rewritten: rewritten,
		TurnsAhead: n, Gain: float64(freed) * r * float64(n)}
	if tp.cold {
		cc.Made, cc.Reason = true, "the prefix is cold: the request rewrites it anyway"
		return cc
	}
	cc.Cost = float64(rewritten) * max(0, c.writePrice(tp.ttl)-r)
	cc.MinGain = int(math.Ceil(float64(rewritten) * c.minGainRatio(tp.ttl, n)))
	cc.Made = freed >= cc.MinGain
	if cc.Made {
		cc.Reason = fmt.Sprintf("frees %d ≥ the floor %d per bust of a warm prefix", freed, cc.MinGain)
	} else {
		cc.Reason = fmt.Sprintf("frees %d < the floor %d per bust of a warm prefix: deferred until the prefix is cold or the threshold", freed, cc.MinGain)
	}
	return cc
}

// early reports whether t compacts before the threshold because the cached prefix is cold:
// the pressure is at or above the warning level (and under the threshold), no collapse
// producer would fold instead, and the provider would write the whole prefix again anyway.
func (co *compactor) early(t *turn) bool {
	pr := &t.report.Pressure
	if co.folds || co.server || t.reactive || pr.Tokens < pr.Levels.Warning || pr.Tokens >= pr.Levels.Threshold {
		return false
	}
	return temperatureOf(t, co.cache.cfg).cold
}

// earlyCost is the reckoning of a compaction made early on a cold prefix, from its report; t
// is the turn before the compaction.
func (co *compactor) earlyCost(t *turn, c *CompactReport) CacheCost {
	cc := cacheCost(t, co.cache.cfg, "compaction", c.PreTokens, max(0, c.PreTokens-c.PostTokens), c.PostTokens)
	cc.Made = c.Outcome == CompactCompacted
	cc.Reason = fmt.Sprintf("the prefix is cold at the warning level (%d ≥ %d): compacting now costs no extra write; %s", c.PreTokens, t.levels.Warning, c.Outcome)
	return cc
}

// cost reckons the fold of span on t: it frees the span less its summary (reckoned at a
// quarter of it, or the producer's own summary's size) and rewrites the summary and what the
// view keeps after the span.
func (f *folder) cost(t *turn, req FoldRequest, span FoldSpan) CacheCost {
	n, after := 0, 0
	for i := span.From; i < span.To && i < len(req.Tokens); i++ {
		n += req.Tokens[i]
	}
	for i := span.To; i < len(req.Tokens); i++ {
		after += req.Tokens[i]
	}
	summary := n - foldGain(n)
	if span.Summary != "" {
		summary = f.co.counter.Text(span.Summary)
	}
	cc := cacheCost(t, f.co.cache.cfg, "fold", req.Pressure, max(0, n-summary), after+summary)
	if cc.Cold && req.Pressure < f.commitLevel(t.levels) {
		cc.Reason = fmt.Sprintf("the prefix is cold at the warning level (%d ≥ %d): folding now costs no extra write", req.Pressure, t.levels.Warning)
	}
	return cc
}
