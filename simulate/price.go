package simulate

import (
	"fmt"
	"maps"
	"math"

	"github.com/agentctx/agentctx"
)

// Price is what a model's tokens cost, in US dollars per million tokens. The zero Price makes
// every token free.
type Price struct {
	// Input is the price of input tokens that neither read nor write the prompt cache.
	Input float64 `json:"input"`
	// CacheWrite5m and CacheWrite1h are the prices of input tokens written to the prompt
	// cache with a 5-minute and a 1-hour time to live.
	CacheWrite5m float64 `json:"cache_write_5m"`
	CacheWrite1h float64 `json:"cache_write_1h"`
	// CacheRead is the price of input tokens read from the prompt cache (a hit, which also
	// refreshes the entry's time to live).
	CacheRead float64 `json:"cache_read"`
	// Output is the price of output tokens.
	Output float64 `json:"output"`
}

// Cost returns the price of tokens, in US dollars: uncached input, cache writes of each time
// to live, cache reads and output.
func (p Price) Cost(uncached, write5m, write1h, read, output int) float64 {
	return (float64(uncached)*p.Input + float64(write5m)*p.CacheWrite5m + float64(write1h)*p.CacheWrite1h +
		float64(read)*p.CacheRead + float64(output)*p.Output) / 1e6
}

func (p Price) validate(name string) error {
	for _, f := range []struct {
		field string
		v     float64
	}{{"Input", p.Input}, {"CacheWrite5m", p.CacheWrite5m}, {"CacheWrite1h", p.CacheWrite1h}, {"CacheRead", p.CacheRead}, {"Output", p.Output}} {
		if !(f.v >= 0) || math.IsInf(f.v, 1) { // NaN fails the first test
			return fmt.Errorf("simulate: price of %q: %s %v is not a finite price of zero or more", name, f.field, f.v)
		}
	}
	return nil
}

// Prices maps a model id prefix to its price, with the keys and the matching rule of
// [agentctx.Models]: [Prices.Lookup] resolves dated and provider-prefixed ids by longest
// prefix. Like Models it is an ordinary map that callers copy from [DefaultPrices] and change.
type Prices map[string]Price

// DefaultPrices returns a new table of the list prices of the models in
// [agentctx.DefaultModels], as the Anthropic pricing page gives them in late 2026 (standard
// rates: no batch discount, no long-context or regional surcharge). A cache write costs 1.25
// times the input price with a 5-minute time to live and twice with 1 hour; a cache read a
// tenth.
func DefaultPrices() Prices {
	tier := func(in, out float64) Price {
		return Price{Input: in, CacheWrite5m: in * 1.25, CacheWrite1h: in * 2, CacheRead: in / 10, Output: out}
	}
	opus, opusOld, sonnet, haiku := tier(5, 25), tier(15, 75), tier(3, 15), tier(1, 5)
	return Prices{
		"claude-opus-4-7":   opus,
		"claude-opus-4-6":   opus,
		"claude-opus-4-5":   opus,
		"claude-opus-4-1":   opusOld,
		"claude-opus-4":     opusOld,
		"claude-sonnet-4-6": sonnet,
		"claude-sonnet-4-5": sonnet,
		"claude-sonnet-4":   sonnet,
		"claude-3-7-sonnet": sonnet,
		"claude-haiku-4-5":  haiku,
		"claude-3-5-haiku":  tier(0.8, 4),
	}
}

// Clone returns a copy of ps that can be changed independently.
func (ps Prices) Clone() Prices { return maps.Clone(ps) }

// Lookup returns the price of the named model, matched as [agentctx.Models.Lookup] matches (the
// "[1m]" suffix is ignored: the table holds standard rates).
func (ps Prices) Lookup(name string) (Price, bool) {
	ms := make(agentctx.Models, len(ps))
	for k := range ps {
		ms[k] = agentctx.Model{Name: k}
	}
	m, ok := ms.Lookup(name)
	if !ok {
		return Price{}, false
	}
	return ps[m.Name], true
}
