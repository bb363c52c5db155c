package agentctx

import (
	"context"
	"testing"

	"github.com/agentctx/agentctx/provider"
	"github.com/agentctx/agentctx/transcript"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Pinned records before a provider compaction survive it as they survive the library's own:
// the view starts at the compaction block, and the pinned text follows the answer that
// holds it, after that answer's tool results, so the block still opens the request and every
// tool_use still meets its result first.
func TestProviderCompactionKeepsPins(t *testing.T) {
	tests := []struct {
		name string
		// calls: the answer that compacted also calls a tool.
		calls bool
	}{
		{name: "answer ends the turn"},
		{name: "answer calls a tool", calls: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			k := newTK()
			rule := k.user("Never touch the vendor directory.")
			k.assistant(text("Understood."))
			k.readTurns(2)
			p := newTestPipeline(t, Config{Validate: true}, k.at(0))
			pin, err := p.Pin(k.recs, []string{rule.UUID}, "a standing rule", k.at(0))
			require.NoError(t, err)
			k.decision(pin)
			k.user("Now add the tests.")
			blocks := []transcript.Block{unknown(compactionJSON), text("Writing the tests now.")}
			if tc.calls {
				blocks = append(blocks, toolUse("toolu_c", "Read"))
			}
			k.answer(transcript.Usage{InputTokens: 190_000, OutputTokens: 200}, nil, blocks...)
			if tc.calls {
				k.results(result("toolu_c", "the test file"))
			} else {
				k.user("Go on.")
			}
			res, err := p.Prepare(context.Background(), Input{Records: k.recs})
			require.NoError(t, err)
			msgs := res.Request.Messages
			require.Len(t, msgs, 2)
			got, err := transcript.MarshalBlock(msgs[0].Content[0])
			require.NoError(t, err)
			assert.Equal(t, compactionJSON, string(got), "the block still opens the request")
			body := string(requestBytes(t, res.Request))
			assert.NotContains(t, body, "question 0", "nothing else before the compaction is sent")
			last := msgs[1].Content
			if tc.calls {
				_, ok := last[0].(*transcript.ToolResult)
				assert.True(t, ok, "the tool result comes first")
			}
			assert.Contains(t, transcript.TextOf(last), "Never touch the vendor directory.")
			assert.NoError(t, provider.Validate(res.Request, provider.ValidateOptions{}))

			// The next turn sends the same prefix: the pinned text stays where it was.
			k.answer(transcriptUsage(5_000), nil, text("Done."))
			k.user("Thanks.")
			next, err := p.Prepare(context.Background(), Input{Records: k.recs})
			require.NoError(t, err)
			require.Greater(t, len(next.Request.Messages), 2)
			assert.Equal(t, transcript.TextOf(last), transcript.TextOf(next.Request.Messages[1].Content))
		})
	}
}
