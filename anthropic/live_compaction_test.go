package anthropic_test

import (
	"context"
	"fmt"
	"os"
	"strings"
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

// TestLiveServerCompaction asks the real API to compact (the server strategy, with the
// provider's trigger at the Pipeline's threshold, over 50,000 tokens here) on a conversation
// just over it, records the answer, and sends the next turn, which must start at the
// provider's compaction block and be accepted. It sends about 60,000 input tokens once and a
// summary's worth once; the model is ANTHROPIC_COMPACTION_MODEL, or one the model table says
// compacts on the server.
func TestLiveServerCompaction(t *testing.T) {
	if os.Getenv("ANTHROPIC_API_KEY") == "" {
		t.Skip("ANTHROPIC_API_KEY not set; the server compaction test against the real Anthropic API is skipped")
	}
	model := os.Getenv("ANTHROPIC_COMPACTION_MODEL")
	if model == "" {
		model = "claude-sonnet-4-6"
	}
	p, err := agentctx.New(agentctx.Config{Model: model, ContextWindow: 80_000, MaxOutputTokens: 4_000,
		ProviderContext: agentctx.ProviderContextConfig{Strategy: agentctx.CompactServer}})
	require.NoError(t, err)
	require.True(t, p.ServerCompaction(), "the provider compacts for %s", model)

	levels := p.Levels()
	require.GreaterOrEqual(t, levels.Threshold, 50_000, "the provider's least trigger")
	sess := session.New(session.Options{})
	// Parts of a log, until the conversation passes the threshold (the provider's trigger)
	// and stays under the blocking limit, where the library would compact itself.
	var res agentctx.Result
	for i := 0; ; i++ {
		var b strings.Builder
		for j := range 150 {
			fmt.Fprintf(&b, "Log line %d.%d: the importer read batch %d of the nightly export and wrote %d rows.\n", i, j, i*1000+j, (i*31+j*17)%997)
		}
		_, err := sess.User(fmt.Sprintf("Here is part %d of the import log; remember the batch numbers.\n%s", i, b.String()))
		require.NoError(t, err)
		res, err = sess.Prepare(t.Context(), p, agentctx.Input{})
		require.NoError(t, err)
		if res.Report.Pressure.Tokens >= levels.Threshold {
			break
		}
		_, err = sess.Assistant(&transcript.Message{ID: fmt.Sprintf("msg_%d", i), Type: "message", Role: transcript.RoleAssistant, Model: model,
			Content: []transcript.Block{&transcript.Text{Text: fmt.Sprintf("Noted part %d.", i)}}, StopReason: "end_turn"})
		require.NoError(t, err)
	}
	require.Less(t, res.Report.Pressure.Tokens, levels.Blocking)

	sdkClient := sdk.NewClient()
	c := anthropic.NewClient(&sdkClient)
	send := func(res agentctx.Result) *transcript.Message {
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
		defer cancel()
		m, err := c.Send(ctx, res.Request, anthropic.Options{})
		require.NoError(t, err)
		return m
	}
	require.Nil(t, res.Report.Compaction, "under the server strategy the library leaves it to the provider")
	answer := send(res)
	require.NotEmpty(t, answer.Content)
	require.Equal(t, transcript.CompactionPoint, transcript.CompactionOf(answer.Content[0]), "the answer opens with the provider's compaction")
	_, err = sess.Assistant(answer)
	require.NoError(t, err)

	_, err = sess.User("And batch 4010?")
	require.NoError(t, err)
	next, err := sess.Prepare(t.Context(), p, agentctx.Input{})
	require.NoError(t, err)
	first := next.Request.Messages[0]
	require.NotEmpty(t, first.Content)
	assert.Equal(t, transcript.CompactionPoint, transcript.CompactionOf(first.Content[0]), "the next request starts at the compaction block")
	assert.Less(t, next.Report.InputTokens, res.Report.InputTokens, "nothing before the block is sent again")
	again := send(next)
	assert.NotEmpty(t, again.Content)
}
