package anthropic_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/anthropic"
	"github.com/agentctx/agentctx/internal/testkit"
	"github.com/agentctx/agentctx/summarize"
	"github.com/agentctx/agentctx/transcript"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const summaryAnswer = `{"id":"msg_sum","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929",` +
	`"content":[{"type":"text","text":"<analysis>draft</analysis><summary>The user asked for a parser; it is written and tested.</summary>"}],` +
	`"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":30,"cache_read_input_tokens":9000,"output_tokens":20}}`

// A manual compaction through the Anthropic summarizer: the first summary request is refused
// as too long, the pipeline leaves out the oldest rounds by the provider's figures and asks
// again, and the second answer is installed.
func TestSummarizerCompaction(t *testing.T) {
	f := newFakeAPI(t, func(w http.ResponseWriter, _ *http.Request, n int) {
		if n == 0 {
			writeJSON(w, 400, `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}`)
			return
		}
		writeJSON(w, 200, summaryAnswer)
	})
	p, err := agentctx.New(agentctx.Config{
		Model: "claude-sonnet-4-5", Tokens: agentctx.EstimateCounter{},
		Now:     func() time.Time { return time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC) },
		Compact: agentctx.CompactConfig{Summarizer: anthropic.Summarizer{Client: f.client()}},
	})
	require.NoError(t, err)
	res, err := p.Compact(t.Context(), agentctx.Input{Records: testkit.Generate(40, testkit.Options{})}, agentctx.CompactOptions{})
	require.NoError(t, err)
	require.Equal(t, 2, f.requests(), "one refusal, one summary")
	first, second := f.bodies[0]["messages"].([]any), f.bodies[1]["messages"].([]any)
	assert.Less(t, len(second), len(first), "the retry leaves out the oldest rounds")
	if f.bodies[1]["tools"] != nil {
		assert.Equal(t, map[string]any{"type": "none"}, f.bodies[1]["tool_choice"], "the summary turn calls no tool")
	}

	var summary strings.Builder
	for _, r := range res.Append {
		if r.IsCompactSummary && r.Message != nil {
			for _, b := range r.Message.Content {
				if t, ok := b.(*transcript.Text); ok {
					summary.WriteString(t.Text)
				}
			}
		}
	}
	assert.Contains(t, summary.String(), "The user asked for a parser; it is written and tested.")
	assert.NotContains(t, summary.String(), "draft", "the analysis draft is stripped")
}

func TestSummarizerModelAndUsage(t *testing.T) {
	f := newFakeAPI(t, func(w http.ResponseWriter, _ *http.Request, _ int) { writeJSON(w, 200, summaryAnswer) })
	req := summarize.Request{Request: turnRequest(4096)}
	out, err := anthropic.Summarizer{Client: f.client(), Model: "claude-haiku-4-5"}.Summarize(t.Context(), req)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(out.Text, "<analysis>"))
	assert.Equal(t, "claude-sonnet-4-5-20250929", out.By)
	require.NotNil(t, out.Usage)
	assert.Equal(t, 9000, out.Usage.CacheReadInputTokens)
	assert.Equal(t, "claude-haiku-4-5", f.bodies[0]["model"])
}
