package liveloop

import (
	"context"
	"fmt"
	"net/http"

	"github.com/agentctx/agentctx/anthropic"
	"github.com/agentctx/agentctx/provider"
	"github.com/agentctx/agentctx/session"
	"github.com/agentctx/agentctx/summarize"
	"github.com/agentctx/agentctx/transcript"
	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
)

// The adapters a scenario can run on.
const (
	// AdapterAnthropic sends turns through the anthropic package on the Anthropic SDK, to a
	// fake of the Messages API.
	AdapterAnthropic = "anthropic"
	// AdapterOpenAI sends turns through the openai package's Chat Completions client, to a
	// fake of a vLLM server.
	AdapterOpenAI = "openai"
)

// Adapter is the provider glue of a runtime: it sends a turn's request and appends the
// answer to the session, and offers the provider's model summarizer.
type Adapter interface {
	// Turn sends req and appends the answer to sess as an assistant record, which it
	// returns; nothing is appended when it fails.
	Turn(ctx context.Context, sess *session.Session, req provider.Request) (transcript.Record, error)
	// Truncated reports whether an answer stopped at its output cap.
	Truncated(m *transcript.Message) bool
	// Summarizer is the summarizer that asks the provider's model for the summary.
	Summarizer() summarize.Summarizer
}

// newAdapter returns the adapter name on the fake server at baseURL, with the server's
// handler for the wire protocol the adapter speaks.
func newAdapter(name, baseURL string) (Adapter, error) {
	switch name {
	case AdapterAnthropic:
		c := sdk.NewClient(option.WithoutEnvironmentDefaults(), option.WithAPIKey("liveloop-key"), option.WithBaseURL(baseURL), option.WithMaxRetries(0))
		return anthropicAdapter{c: anthropic.NewClient(&c)}, nil
	case AdapterOpenAI:
		return newOpenAIAdapter(baseURL + "/v1")
	}
	return nil, fmt.Errorf("liveloop: unknown adapter %q", name)
}

// newHandler returns the fake server's handler for the adapter's wire protocol.
func newHandler(name string, pv *fakeProvider) http.Handler {
	if name == AdapterOpenAI {
		return newOpenAIServer(pv)
	}
	return newAnthropicServer(pv)
}

// idPrefix returns the prefix of the tool call ids the provider of the adapter writes.
func idPrefix(name string) string {
	if name == AdapterOpenAI {
		return "call_"
	}
	return "toolu_"
}

// anthropicAdapter is [Adapter] on the anthropic package.
type anthropicAdapter struct {
	c *anthropic.Client
}

func (a anthropicAdapter) Turn(ctx context.Context, sess *session.Session, req provider.Request) (transcript.Record, error) {
	return a.c.Turn(ctx, sess, req, anthropic.Options{})
}

func (a anthropicAdapter) Truncated(m *transcript.Message) bool { return m.Truncated() }

func (a anthropicAdapter) Summarizer() summarize.Summarizer { return anthropic.Summarizer{Client: a.c} }
