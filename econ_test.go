package agentctx

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTemperature: the cached prefix is cold when the time since the last response's record
// exceeds the TTL in effect ("" and "5m": 5 minutes, "1h": an hour) or caching is off, warm
// otherwise and before any response; the same records, config and clock give the same answer.
func TestTemperature(t *testing.T) {
	k := newTK()
	k.user("look at the parser")
	k.assistant(text("Looking."))
	last := k.at(0)
	for _, tc := range []struct {
		name  string
		cache CacheConfig
		idle  time.Duration
		cold  bool
	}{
		{"default ttl, 4 minutes", CacheConfig{}, 4 * time.Minute, false},
		{"default ttl, exactly 5 minutes", CacheConfig{}, 5 * time.Minute, false},
		{"default ttl, 6 minutes", CacheConfig{}, 6 * time.Minute, true},
		{"5m, 6 minutes", CacheConfig{TTL: "5m"}, 6 * time.Minute, true},
		{"1h, 59 minutes", CacheConfig{TTL: "1h"}, 59 * time.Minute, false},
		{"1h, 61 minutes", CacheConfig{TTL: "1h"}, 61 * time.Minute, true},
		{"caching off", CacheConfig{Disable: true}, time.Second, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tu := &turn{now: last.Add(tc.idle), items: itemsOf(t, k)}
			tp := temperatureOf(tu, tc.cache)
			assert.Equal(t, tc.cold, tp.cold)
			assert.Equal(t, tc.idle, tp.idle, "the idle time runs from the response's record")
			assert.Equal(t, tp, temperatureOf(tu, tc.cache), "a pure function")
		})
	}
	fresh := newTK()
	fresh.user("hello")
	tp := temperatureOf(&turn{now: fresh.at(time.Hour), items: itemsOf(t, fresh)}, CacheConfig{})
	assert.False(t, tp.cold, "no response yet: the fixed prefix may be cached")
	assert.Equal(t, time.Duration(-1), tp.idle)
}

// itemsOf is the view of k's records as a turn holds it.
func itemsOf(t *testing.T, k *tk) []item {
	t.Helper()
	p := newTestPipeline(t, Config{}, k.at(0))
	res, err := p.build(t.Context(), &Input{Records: k.recs})
	require.NoError(t, err)
	return res.items
}

// TestCachePrices: the relative prices default to Anthropic's (read 0.1, write 1.25 for 5
// minutes and 2 for an hour), a configured price wins, and the floor is (write − read) ÷
// (read × turns ahead) unless MinGain sets it or, negative, removes it.
func TestCachePrices(t *testing.T) {
	for _, tc := range []struct {
		name        string
		cache       CacheConfig
		ttl         time.Duration
		read, write float64
		turns       int
		floor       float64
	}{
		{"anthropic 5m", CacheConfig{}, shortTTL, 0.1, 1.25, 10, 1.15},
		{"anthropic 1h", CacheConfig{TTL: "1h"}, longTTL, 0.1, 2, 10, 1.9},
		{"more turns ahead, a lower floor", CacheConfig{}, shortTTL, 0.1, 1.25, 50, 0.23},
		{"openai: half price reads, no write premium", CacheConfig{ReadPrice: 0.5, WritePrice: 1}, shortTTL, 0.5, 1, 10, 0.1},
		{"a set floor", CacheConfig{MinGain: 3}, shortTTL, 0.1, 1.25, 10, 3},
		{"no floor", CacheConfig{MinGain: -1}, shortTTL, 0.1, 1.25, 10, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.ttl, tc.cache.ttl())
			assert.InDelta(t, tc.read, tc.cache.readPrice(), 1e-9)
			assert.InDelta(t, tc.write, tc.cache.writePrice(tc.ttl), 1e-9)
			assert.InDelta(t, tc.floor, tc.cache.minGainRatio(tc.ttl, tc.turns), 1e-9)
		})
	}
	for _, bad := range []CacheConfig{{ReadPrice: -0.1}, {WritePrice: math.NaN()}, {MinGain: math.Inf(1)}} {
		_, err := New(Config{ContextWindow: 100_000, Cache: bad})
		assert.ErrorContains(t, err, "agentctx: Cache.", "%+v", bad)
	}
}
