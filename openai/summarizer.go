package openai

import (
	"context"
	"encoding/json"
	"errors"
	"slices"

	"github.com/agentctx/agentctx"
	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// Summarizer is an [agentctx.Summarizer] over Chat Completions: it converts the library's
// summary request ([agentctx.SummaryRequest.Request]) with [ChatParams] and returns the
// text of the answer with its usage. Any OpenAI-compatible server works — vLLM, Ollama,
// llama.cpp — through the SDK client's base URL:
//
//	c := openai.NewClient(option.WithBaseURL("http://localhost:11434/v1"), option.WithAPIKey("ollama"))
//	s := agentctxopenai.Summarizer{Client: &c, Options: agentctxopenai.Options{Model: "qwen3:8b"}}
//
// A prompt over the server's window gives an [*Error] holding an
// [*agentctx.PromptTooLongError] with the figures the server reported, so that the pipeline
// leaves out the oldest rounds and asks again. It is safe for concurrent use.
type Summarizer struct {
	// Client sends the request; it carries the server's base URL, key and retry policy. It
	// must be set.
	Client *sdk.Client
	// Options are the summary request's options; Options.Model names the server's model
	// (empty: the conversation's model, which only an Anthropic-compatible server knows).
	Options Options
	// Stream sends the request streaming and accumulates the answer, for servers or
	// proxies that cut long non-streaming requests.
	Stream bool
}

// Summarize sends the converted summary request and returns the answer's text.
func (s Summarizer) Summarize(ctx context.Context, req agentctx.SummaryRequest) (agentctx.Summary, error) {
	p, _, err := ChatParams(req.Request, s.Options)
	if err != nil {
		return agentctx.Summary{}, &Error{Class: agentctx.ClassFatal, Message: err.Error(), Err: err}
	}
	var cc *sdk.ChatCompletion
	if s.Stream {
		cc, err = s.stream(ctx, p)
	} else {
		cc, err = s.send(ctx, p)
	}
	if err != nil {
		return agentctx.Summary{}, Classify(ctx, err)
	}
	if len(cc.Choices) == 0 {
		err := errors.New("the answer has no choices")
		return agentctx.Summary{}, &Error{Class: agentctx.ClassFatal, StatusCode: 200, Message: err.Error(), Err: err}
	}
	by := cc.Model
	if by == "" {
		by = string(p.Model)
	}
	return agentctx.Summary{Text: cc.Choices[0].Message.Content, Usage: usage(cc.Usage), By: by}, nil
}

// send sends the request and decodes the answer here, not in the SDK: a body that is not a
// completion is the server's fault (fatal), a body cut off in transit the network's
// (retryable).
func (s Summarizer) send(ctx context.Context, p sdk.ChatCompletionNewParams) (*sdk.ChatCompletion, error) {
	var raw []byte
	if _, err := s.Client.Chat.Completions.New(ctx, p, append(slices.Clip(s.Options.RequestOptions), option.WithResponseBodyInto(&raw))...); err != nil {
		return nil, err
	}
	cc := new(sdk.ChatCompletion)
	if err := json.Unmarshal(raw, cc); err != nil {
		return nil, &Error{Class: agentctx.ClassFatal, StatusCode: 200, Message: "the answer is not a chat completion: " + err.Error(), Err: err}
	}
	return cc, nil
}

func (s Summarizer) stream(ctx context.Context, p sdk.ChatCompletionNewParams) (*sdk.ChatCompletion, error) {
	p.StreamOptions = sdk.ChatCompletionStreamOptionsParam{IncludeUsage: sdk.Bool(true)}
	st := s.Client.Chat.Completions.NewStreaming(ctx, p, s.Options.RequestOptions...)
	defer st.Close()
	var acc sdk.ChatCompletionAccumulator
	for st.Next() {
		acc.AddChunk(st.Current())
	}
	if err := st.Err(); err != nil {
		return nil, err
	}
	return &acc.ChatCompletion, nil
}

// usage converts Chat Completions usage: the cached part of the prompt is the cache read,
// the rest the input.
func usage(u sdk.CompletionUsage) *agentctx.Usage {
	cached := int(u.PromptTokensDetails.CachedTokens)
	return &agentctx.Usage{
		InputTokens:          max(0, int(u.PromptTokens)-cached),
		CacheReadInputTokens: cached,
		OutputTokens:         int(u.CompletionTokens),
	}
}
