package openai

import (
	"context"

	"github.com/agentctx/agentctx/provider"
	"github.com/agentctx/agentctx/summarize"
	"github.com/agentctx/agentctx/transcript"
	sdk "github.com/openai/openai-go/v3"
)

// Summarizer is an [summarize.Summarizer] over Chat Completions: it converts the library's
// summary request ([summarize.Request.Request]) with [ChatParams] and returns the
// text of the answer with its usage. Any OpenAI-compatible server works — vLLM, Ollama,
// llama.cpp — through the SDK client's base URL:
//
//	c := openai.NewClient(option.WithBaseURL("http://localhost:11434/v1"), option.WithAPIKey("ollama"))
//	s := agentctxopenai.Summarizer{Client: &c, Options: agentctxopenai.Options{Model: "qwen3:8b"}}
//
// A prompt over the server's window gives an [*Error] holding an
// [*provider.PromptTooLongError] with the figures the server reported, so that the pipeline
// leaves out the oldest rounds and asks again. It is safe for concurrent use.
type Summarizer struct {
	// Client sends the request; it carries the server's base URL, key and retry policy. It
	// must be set.
	Client *sdk.Client
	// Options are the summary request's options; Options.Model names the server's model
	// (empty: the conversation's model, which only an Anthropic-compatible server knows).
	Options Options
	// Stream sends the request streaming and accumulates the answer, for servers or
	// proxies that cut long non-streaming requests; so does Options.Stream.
	Stream bool
}

// Summarize sends the converted summary request and returns the answer's text.
func (s Summarizer) Summarize(ctx context.Context, req summarize.Request) (summarize.Summary, error) {
	p, _, err := ChatParams(req.Request, s.Options)
	if err != nil {
		return summarize.Summary{}, &Error{Class: provider.ClassFatal, Message: err.Error(), Err: err}
	}
	cc, err := chatCompletion(ctx, &s.Client.Chat.Completions, p, s.Stream || s.Options.Stream, s.Options.RequestOptions)
	if err != nil {
		return summarize.Summary{}, err
	}
	if len(cc.Choices) == 0 {
		return summarize.Summary{}, malformed(provider.ClassFatal, "the answer has no choices", nil)
	}
	by := cc.Model
	if by == "" {
		by = string(p.Model)
	}
	return summarize.Summary{Text: cc.Choices[0].Message.Content, Usage: usage(cc.Usage), By: by}, nil
}

// usage converts Chat Completions usage: the cached part of the prompt is the cache read,
// the rest the input.
func usage(u sdk.CompletionUsage) *transcript.Usage {
	cached := int(u.PromptTokensDetails.CachedTokens)
	return &transcript.Usage{
		InputTokens:          max(0, int(u.PromptTokens)-cached),
		CacheReadInputTokens: cached,
		OutputTokens:         int(u.CompletionTokens),
	}
}
