package agentctx

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestModelsLookup(t *testing.T) {
	ms := DefaultModels()
	for _, tt := range []struct {
		name      string
		want      string
		window    int
		maxOutput int
		minCache  int
		server    bool
	}{
		{"claude-opus-4-7", "claude-opus-4-7", 200_000, 64_000, 4096, true},
		{"claude-opus-4-6", "claude-opus-4-6", 200_000, 128_000, 4096, true},
		{"claude-opus-4-5-20251101", "claude-opus-4-5", 200_000, 64_000, 4096, false},
		{"claude-opus-4-1-20250805", "claude-opus-4-1", 200_000, 32_000, 1024, false},
		{"claude-opus-4-20250514", "claude-opus-4", 200_000, 32_000, 1024, false},
		{"claude-sonnet-4-6", "claude-sonnet-4-6", 200_000, 64_000, 2048, true},
		{"claude-sonnet-4-5-20250929", "claude-sonnet-4-5", 200_000, 64_000, 1024, false},
		{"claude-sonnet-4-20250514", "claude-sonnet-4", 200_000, 64_000, 1024, false},
		{"claude-haiku-4-5-20251001", "claude-haiku-4-5", 200_000, 64_000, 4096, false},
		{"claude-3-7-sonnet-20250219", "claude-3-7-sonnet", 200_000, 64_000, 1024, false},
		{"claude-3-7-sonnet-latest", "claude-3-7-sonnet", 200_000, 64_000, 1024, false},
		{"claude-3-5-haiku-20241022", "claude-3-5-haiku", 200_000, 8_192, 2048, false},
		{"claude-opus-4-1@20250805", "claude-opus-4-1", 200_000, 32_000, 1024, false},
		{"us.anthropic.claude-sonnet-4-5-20250929-v1:0", "claude-sonnet-4-5", 200_000, 64_000, 1024, false},
		{"anthropic/claude-haiku-4-5", "claude-haiku-4-5", 200_000, 64_000, 4096, false},
		{"claude-sonnet-4-5-20250929[1m]", "claude-sonnet-4-5", 1_000_000, 64_000, 1024, false},
		{"claude-sonnet-4-50", "claude-sonnet-4", 200_000, 64_000, 1024, false}, // "4-5" needs a separator after it
	} {
		t.Run(tt.name, func(t *testing.T) {
			m, ok := ms.Lookup(tt.name)
			assert.True(t, ok)
			assert.Equal(t, Model{Name: tt.want, ContextWindow: tt.window, MaxOutput: tt.maxOutput, MinCacheTokens: tt.minCache, ServerCompaction: tt.server}, m)
		})
	}
	for _, name := range []string{"", "gpt-5.5", "claude", "claude-opus", "claude-opus-4x", "sonnet", "<synthetic>"} {
		_, ok := ms.Lookup(name)
		assert.False(t, ok, "%q", name)
	}
}

func TestDefaultModelsIsACopy(t *testing.T) {
	a := DefaultModels()
	a["claude-sonnet-4-5"] = Model{Name: "claude-sonnet-4-5", ContextWindow: 1_000_000, MaxOutput: 64_000}
	a["my-model"] = Model{Name: "my-model", ContextWindow: 32_000, MaxOutput: 4_000}
	m, ok := a.Lookup("claude-sonnet-4-5-20250929")
	assert.True(t, ok)
	assert.Equal(t, 1_000_000, m.ContextWindow, "callers can override entries")
	m, ok = a.Lookup("my-model-v2")
	assert.True(t, ok)
	assert.Equal(t, 4_000, m.MaxOutput)

	b := DefaultModels()
	m, _ = b.Lookup("claude-sonnet-4-5")
	assert.Equal(t, 200_000, m.ContextWindow, "DefaultModels returns a fresh table")
	_, ok = b.Lookup("my-model")
	assert.False(t, ok)

	c := b.Clone()
	delete(c, "claude-opus-4")
	_, ok = b.Lookup("claude-opus-4-20250514")
	assert.True(t, ok, "Clone is independent")
}

func TestModelAutoCompactThreshold(t *testing.T) {
	for _, tt := range []struct{ window, maxOutput, want int }{
		{200_000, 64_000, 167_000},
		{200_000, 32_000, 167_000},
		{200_000, 20_000, 167_000},
		{200_000, 8_192, 178_808},
		{1_000_000, 128_000, 967_000},
		{30_000, 64_000, 18_750}, // small windows scale the reserves (DefaultLevels)
		{0, 0, 0},
	} {
		assert.Equal(t, tt.want, AutoCompactThreshold(tt.window, tt.maxOutput), "%d/%d", tt.window, tt.maxOutput)
	}
	m, _ := DefaultModels().Lookup("claude-3-5-haiku")
	assert.Equal(t, 178_808, m.AutoCompactThreshold())
}
