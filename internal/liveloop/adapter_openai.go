package liveloop

import (
	"context"

	"github.com/agentctx/agentctx/openai"
	"github.com/agentctx/agentctx/provider"
	"github.com/agentctx/agentctx/session"
	"github.com/agentctx/agentctx/summarize"
	"github.com/agentctx/agentctx/transcript"
	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// openaiModel is the model name the Chat Completions requests carry, as a vLLM server
// serving an open-weights model is asked for it.
const openaiModel = "qwen3-coder-30b"

// newOpenAIAdapter returns the adapter on the openai package's Chat Completions client, on
// the fake vLLM server at baseURL (its /v1).
func newOpenAIAdapter(baseURL string) (Adapter, error) {
	c := sdk.NewClient(option.WithAPIKey("liveloop-key"), option.WithBaseURL(baseURL), option.WithMaxRetries(0))
	return openaiAdapter{sdk: &c, c: openai.NewClient(&c), opts: openai.Options{Model: openaiModel}}, nil
}

// openaiAdapter is [Adapter] on the openai package.
type openaiAdapter struct {
	sdk  *sdk.Client
	c    *openai.Client
	opts openai.Options
}

func (a openaiAdapter) Turn(ctx context.Context, sess *session.Session, req provider.Request) (transcript.Record, error) {
	return a.c.Turn(ctx, sess, req, a.opts)
}

// Truncated also takes Chat Completions' own finish reason, "length", in case the adapter
// keeps it as the stop reason instead of mapping it onto "max_tokens".
func (a openaiAdapter) Truncated(m *transcript.Message) bool {
	return m.Truncated() || m.StopReason == "length"
}

func (a openaiAdapter) Summarizer() summarize.Summarizer {
	return openai.Summarizer{Client: a.sdk, Options: a.opts}
}
