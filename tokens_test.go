package agentctx

import (
	"strings"
	"testing"

	"github.com/agentctx/agentctx/tiktoken"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTokenCounterFunc(t *testing.T) {
	var tc TokenCounter = TokenCounterFunc(func(s string) int { return len(s) })
	assert.Equal(t, 5, tc.CountTokens("hello"))
}

func TestEstimateTokens(t *testing.T) {
	for _, tt := range []struct {
		text string
		want int
	}{
		{"", 0},
		{"a", 1},
		{"abc", 1},
		{"abcd", 2},
		{strings.Repeat("x", 300), 100},
		{"héllo", 2}, // bytes, not runes: 6 bytes
	} {
		assert.Equal(t, tt.want, EstimateTokens(tt.text), "%q", tt.text)
		assert.Equal(t, tt.want, EstimateCounter{}.CountTokens(tt.text), "%q", tt.text)
	}
}

// TestDefaultTokenCounter checks that the default counter is cl100k_base, built once per
// process: every call returns the same Encoding.
func TestDefaultTokenCounter(t *testing.T) {
	def, ok := DefaultTokenCounter().(*tiktoken.Encoding)
	require.True(t, ok, "the default counter is a tiktoken.Encoding")
	assert.Same(t, def, DefaultTokenCounter(), "cl100k is built once per process")
	assert.Same(t, def, NewCounter(nil).TokenCounter())
	assert.Equal(t, tiktoken.CL100K, def.Name())
	assert.Equal(t, 2, def.CountTokens("hello world"))
}
