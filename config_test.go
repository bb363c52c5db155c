package agentctx

import (
	"testing"

	"github.com/stretchr/testify/assert"
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
