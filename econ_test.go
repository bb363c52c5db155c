package agentctx

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentctx/agentctx/summarize"
	"github.com/agentctx/agentctx/transcript"

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

// TestColdEarly: at the warning level and under the threshold, a cold prefix (idle past the
// TTL) compacts at once, or folds with a producer, since the request rewrites the prefix
// anyway; a warm one waits for the threshold (and a fold under it, weighed, is deferred when
// it frees too little per token rewritten, made without a floor); under the warning level
// nothing happens either way; the reckoning is in Report.CacheCosts.
func TestColdEarly(t *testing.T) {
	k := foldSession(10, 1800)
	last := k.at(0)
	for _, tc := range []struct {
		name      string
		idle      time.Duration
		fold      bool
		cache     CacheConfig
		compacted bool
		folded    bool
		costs     []string // decision made or deferred, cold or warm
	}{
		{name: "warm waits for the threshold", idle: time.Minute},
		{name: "cold compacts at the warning level", idle: 10 * time.Minute, compacted: true, costs: []string{"compaction made cold"}},
		{name: "cold past an hour, 1h TTL", idle: 61 * time.Minute, cache: CacheConfig{TTL: "1h"}, compacted: true, costs: []string{"compaction made cold"}},
		{name: "warm under the 1h TTL", idle: 30 * time.Minute, cache: CacheConfig{TTL: "1h"}},
		{name: "caching off is cold", idle: time.Minute, cache: CacheConfig{Disable: true}, compacted: true, costs: []string{"compaction made cold"}},
		{name: "cold folds with a producer", idle: 10 * time.Minute, fold: true, folded: true, costs: []string{"fold made cold"}},
		{name: "warm, the producer's fold is deferred", idle: time.Minute, fold: true, costs: []string{"fold deferred warm"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{ContextWindow: 12_000, Tokens: EstimateCounter{}, Budget: BudgetConfig{Store: &MapStore{}},
				Compact: CompactConfig{Summarizer: summarize.Extractive{}}, Cache: tc.cache, Microcompact: MicrocompactConfig{Disable: true}}
			if tc.fold {
				cfg.Collapse.Producer = FoldOldest{}
				cfg.Collapse.CommitFraction = 0.8 // under the warning level's pressure here
			}
			p := newTestPipeline(t, cfg, last.Add(tc.idle))
			res, err := p.Prepare(t.Context(), Input{Records: k.recs})
			require.NoError(t, err)
			compacted := res.Report.Compaction != nil && res.Report.Compaction.Outcome == CompactCompacted
			assert.Equal(t, tc.compacted, compacted)
			folded := slices.ContainsFunc(res.Append, func(r transcript.Record) bool { return r.Subtype == transcript.SubtypeCollapseCommit })
			assert.Equal(t, tc.folded, folded)
			var got []string
			for _, c := range res.Report.CacheCosts {
				made, temp := "deferred", "warm"
				if c.Made {
					made = "made"
				}
				if c.Cold {
					temp = "cold"
					assert.Zero(t, c.Cost, "a cold rewrite costs no extra write")
				}
				got = append(got, c.Decision+" "+made+" "+temp)
				assert.Positive(t, c.Freed, c.String())
				assert.Positive(t, c.Rewritten, c.String())
			}
			assert.Equal(t, tc.costs, got)
		})
	}
	off, err := newTestPipeline(t, Config{ContextWindow: 12_000, Tokens: EstimateCounter{}, Compact: CompactConfig{Summarizer: summarize.Extractive{}}},
		last.Add(10*time.Minute)).Prepare(t.Context(), Input{Records: foldSession(4, 1800).recs})
	require.NoError(t, err)
	assert.Nil(t, off.Report.Compaction, "under the warning level a cold prefix is no reason to compact")
}

// ttlSession is a session of len(gaps)+1 rounds whose responses report prompts of size
// tokens growing by growth, each response gaps[i] after the one before.
func ttlSession(size, growth int, gaps ...time.Duration) *tk {
	k := newTK()
	at := time.Duration(0)
	for i := range len(gaps) + 1 {
		if i > 0 {
			at += gaps[i-1]
		}
		k.user(fmt.Sprintf("round %d", i))
		r := k.assistant(text(fmt.Sprintf("answer %d", i)))
		r.Timestamp = transcript.Timestamp(k.t0.Add(at))
		r.Message.Usage = &transcript.Usage{InputTokens: 10, CacheReadInputTokens: size + i*growth - 10}
	}
	return k
}

// TestChooseTTL: the 1-hour TTL is chosen when the gaps of 5 to 60 minutes between responses
// would cost more in 5-minute rewrites (the previous prompt at 1.25 instead of 0.1) than the
// 1-hour premium (0.75 more per token written) costs, else the 5-minute one.
func TestChooseTTL(t *testing.T) {
	const m = time.Minute
	for _, tc := range []struct {
		name       string
		k          *tk
		ttl        string
		gaps       int
		rewrites5m float64
	}{
		{"no gaps", ttlSession(50_000, 2_000, m, 2*m, m), "5m", 0, 0},
		{"a 10-minute gap on a large prefix", ttlSession(50_000, 2_000, m, 10*m, m), "1h", 1, 52_000 * 1.15},
		{"gaps past the hour cost both alike", ttlSession(50_000, 2_000, 2*time.Hour, 3*time.Hour), "5m", 0, 0},
		{"an early gap on a prefix that grew fast after", ttlSession(1_000, 30_000, m, 10*m, m, m), "5m", 1, 31_000 * 1.15},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := CacheConfig{}
			d := transcript.ChooseCacheTTL(tc.k.recs, nil, c.readPrice(), c.writePrice(shortTTL), c.writePrice(longTTL))
			assert.Equal(t, tc.ttl, d.TTL)
			assert.Equal(t, tc.gaps, d.Gaps)
			assert.InDelta(t, tc.rewrites5m, d.Rewrites5m, 1)
			assert.Equal(t, tc.ttl == "1h", d.Rewrites5m > d.Premium1h, "%+v", d)
		})
	}
}

// TestAutoTTL: with TTL "auto", a session whose gaps make the hour pay gets a cache TTL
// decision record and 1-hour markers; appended, the record is read back (no new one, the
// same bytes, also after a round trip through JSONL); a fork keeps the TTL in effect without
// deciding; a session without such gaps keeps the default markers and writes nothing.
func TestAutoTTL(t *testing.T) {
	k := ttlSession(50_000, 2_000, time.Minute, 10*time.Minute, time.Minute)
	k.user("go on")
	now := k.at(0).Add(time.Hour)
	p := newTestPipeline(t, Config{Cache: CacheConfig{TTL: "auto"}, Microcompact: MicrocompactConfig{Disable: true}}, now)
	res, err := p.Prepare(t.Context(), Input{Records: k.recs})
	require.NoError(t, err)
	require.Len(t, res.Append, 1)
	d := res.Append[0]
	assert.Equal(t, transcript.SubtypeCacheTTL, d.Subtype)
	assert.True(t, d.IsDecision())
	require.NotNil(t, d.CacheTTL)
	assert.Equal(t, "1h", d.CacheTTL.TTL)
	marker := func(r Result) string {
		bps := r.Request.CacheBreakpoints()
		require.NotEmpty(t, bps)
		return transcript.CacheControlOf(r.Request.Messages[bps[0].Message].Content[bps[0].Block]).TTL
	}
	assert.Equal(t, "1h", marker(res))
	body, err := res.Request.MarshalJSON()
	require.NoError(t, err)

	k.recs = append(k.recs, res.Append...)
	again, err := p.Prepare(t.Context(), Input{Records: k.recs})
	require.NoError(t, err)
	assert.Empty(t, again.Append, "the choice is read back, not made again")
	b2, err := again.Request.MarshalJSON()
	require.NoError(t, err)
	assert.Equal(t, string(body), string(b2))

	tr, err := transcript.Read(strings.NewReader(k.jsonl(t)), "auto.jsonl", transcript.ReadOptions{})
	require.NoError(t, err)
	resumed, err := p.Prepare(t.Context(), Input{Records: tr.Records})
	require.NoError(t, err)
	b3, err := resumed.Request.MarshalJSON()
	require.NoError(t, err)
	assert.Equal(t, string(body), string(b3), "a resume from the file gives the same bytes")

	fork, err := p.Prepare(t.Context(), Input{Records: k.recs[:len(k.recs)-1], SkipCacheWrite: true})
	require.NoError(t, err)
	assert.Empty(t, fork.Append, "a fork does not decide")

	calm := ttlSession(50_000, 2_000, time.Minute, time.Minute)
	calm.user("go on")
	plain, err := p.Prepare(t.Context(), Input{Records: calm.recs})
	require.NoError(t, err)
	assert.Empty(t, plain.Append)
	assert.Empty(t, marker(plain), "5 minutes is sent as the default, with no ttl field")
}
