package anthropic_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/anthropic"
	"github.com/agentctx/agentctx/session"
	"github.com/agentctx/agentctx/transcript"
	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// liveModel is the model the live tests use: ANTHROPIC_MODEL, or a small current one.
func liveModel() string {
	if m := os.Getenv("ANTHROPIC_MODEL"); m != "" {
		return m
	}
	return "claude-haiku-4-5"
}

// TestLive sends one prepared turn to the real API, streamed and not, with the SDK client
// configured from the environment as a runtime would.
func TestLive(t *testing.T) {
	if os.Getenv("ANTHROPIC_API_KEY") == "" {
		t.Skip("ANTHROPIC_API_KEY not set; the test against the real Anthropic API is skipped")
	}
	p, err := agentctx.New(agentctx.Config{Model: liveModel(), MaxOutputTokens: 256, Tokens: agentctx.EstimateCounter{}})
	require.NoError(t, err)
	sess := session.New(session.Options{})
	_, err = sess.User("Reply with the single word: ready.")
	require.NoError(t, err)
	res, err := sess.Prepare(t.Context(), p, agentctx.Input{System: []*transcript.Text{{Text: "You answer in one word."}}})
	require.NoError(t, err)

	sdkClient := sdk.NewClient()
	c := anthropic.NewClient(&sdkClient)
	for _, stream := range []bool{false, true} {
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		m, err := c.Send(ctx, res.Request, anthropic.Options{Stream: stream})
		cancel()
		require.NoError(t, err, "stream=%v", stream)
		assert.NotEmpty(t, m.Content, "stream=%v", stream)
		require.NotNil(t, m.Usage)
		assert.Positive(t, m.Usage.ContextTokens(), "stream=%v", stream)
		assert.NotEmpty(t, m.StopReason, "stream=%v", stream)
	}
}
