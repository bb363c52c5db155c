package agentctx

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/agentctx/agentctx/provider"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// New names the field of a negative context window, as it does a negative MaxOutputTokens,
// instead of saying the window is unknown for the model.
func TestNewNegativeWindow(t *testing.T) {
	for _, model := range []string{"", "claude-sonnet-4-5", "gpt-9"} {
		_, err := New(Config{Model: model, ContextWindow: -5, Tokens: EstimateCounter{}})
		assert.EqualError(t, err, "agentctx: ContextWindow -5 is negative", model)
	}
	_, err := New(Config{ContextWindow: 200_000, MaxOutputTokens: -5, Tokens: EstimateCounter{}})
	assert.EqualError(t, err, "agentctx: MaxOutputTokens -5 is negative")
}

// New refuses a NaN or infinite ratio or fraction of the pressure config: NaN compares false
// with both bounds, so only its own check stops it.
func TestNewPressureNaN(t *testing.T) {
	for _, v := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		for name, cfg := range map[string]PressureConfig{
			"Ratio":              {Ratio: v},
			"DefaultRatio":       {DefaultRatio: v},
			"Warning.Fraction":   {Warning: Limit{Fraction: v}},
			"Error.Fraction":     {Error: Limit{Fraction: v}},
			"Threshold.Fraction": {Threshold: Limit{Fraction: v}},
			"Blocking.Fraction":  {Blocking: Limit{Fraction: v}},
		} {
			_, err := New(Config{ContextWindow: 200_000, Tokens: EstimateCounter{}, Pressure: cfg})
			want := fmt.Sprintf("agentctx: Pressure.%s %v is not in [0.5, 2]", name, v)
			if strings.HasSuffix(name, "Fraction") {
				want = fmt.Sprintf("agentctx: Pressure.%s %v is not in (0, 1]", name, v)
			}
			assert.EqualError(t, err, want)
		}
	}
}

// New refuses a negative figure in the model table's entry for the model, naming it, where it
// called the window unknown, blamed a MaxOutputTokens of 0 or took a negative minimum cacheable
// prefix; and a negative thinking budget whatever the thinking type.
func TestNewNegativeModelFigures(t *testing.T) {
	entry := func(m Model) Models { return Models{"m": m} }
	for _, tt := range []struct {
		cfg  Config
		want string
	}{
		{Config{Model: "m-1", Models: entry(Model{ContextWindow: -1, MaxOutput: 10})}, `agentctx: the Models entry for model "m-1" has a negative ContextWindow -1`},
		{Config{Model: "m", Models: entry(Model{ContextWindow: 1000, MaxOutput: -1})}, `agentctx: the Models entry for model "m" has a negative MaxOutput -1`},
		{Config{Model: "m", ContextWindow: 1000, MaxOutputTokens: 100, Models: entry(Model{MaxOutput: -1})}, `agentctx: the Models entry for model "m" has a negative MaxOutput -1`},
		{Config{Model: "m", Models: entry(Model{ContextWindow: 1000, MaxOutput: 10, MinCacheTokens: -1})}, `agentctx: the Models entry for model "m" has a negative MinCacheTokens -1`},
		{Config{ContextWindow: 1000, Thinking: &provider.Thinking{Type: "adaptive", BudgetTokens: -1}}, "agentctx: Thinking.BudgetTokens -1 is negative"},
		{Config{ContextWindow: 1000, Thinking: &provider.Thinking{Type: "disabled", BudgetTokens: -1}}, "agentctx: Thinking.BudgetTokens -1 is negative"},
	} {
		tt.cfg.Tokens = EstimateCounter{}
		_, err := New(tt.cfg)
		assert.EqualError(t, err, tt.want)
	}
	_, err := New(Config{Model: "m", Models: entry(Model{ContextWindow: 1000, MaxOutput: 10}), Tokens: EstimateCounter{}})
	assert.NoError(t, err)
}

// Each negative rehydration bound is named, and an unknown thinking type is refused by New
// rather than sent.
func TestNewNamesRehydrateBoundsAndThinkingType(t *testing.T) {
	_, err := New(Config{ContextWindow: 10_000, Compact: CompactConfig{Rehydrate: RehydrateConfig{MaxFileTokens: -1, MaxSkillsTokens: -2}}})
	require.Error(t, err)
	assert.ErrorContains(t, err, "Compact.Rehydrate.MaxFileTokens -1 is negative")
	assert.ErrorContains(t, err, "Compact.Rehydrate.MaxSkillsTokens -2 is negative")
	_, err = New(Config{ContextWindow: 10_000, Thinking: &provider.Thinking{Type: "enabld", BudgetTokens: 2048}})
	assert.ErrorContains(t, err, `Thinking.Type "enabld" is not enabled, disabled or adaptive`)
	for _, typ := range []string{"enabled", "disabled", "adaptive"} {
		th := &provider.Thinking{Type: typ}
		if typ == "enabled" {
			th.BudgetTokens = 2048
		}
		_, err := New(Config{ContextWindow: 100_000, Thinking: th})
		assert.NoError(t, err, typ)
	}
}
