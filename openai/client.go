package openai

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"

	"github.com/agentctx/agentctx/provider"
	"github.com/agentctx/agentctx/session"
	"github.com/agentctx/agentctx/transcript"
	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
)

// Client sends agentctx requests through the caller's configured SDK client: its API key,
// base URL (an OpenAI-compatible server's: vLLM, Ollama, llama.cpp), HTTP client, retry
// policy and middleware apply to every turn. A Client holds no per-conversation state and is
// safe for concurrent use, as the SDK client is.
type Client struct {
	chat      *sdk.ChatCompletionService
	responses *responses.ResponseService
}

// NewClient wraps c, typically made with sdk.NewClient(option.WithBaseURL(…),
// option.WithMaxRetries(…), …). The Client uses c.Chat.Completions and c.Responses; c must
// outlive it.
func NewClient(c *sdk.Client) *Client {
	return &Client{chat: &c.Chat.Completions, responses: &c.Responses}
}

// Send sends req as one Chat Completions turn — the API every compatible server serves —
// and returns the answer as an assistant record carries it ([MessageFromChat]). The request
// is converted with [ChatParams]; the drops it lists are not returned (call ChatParams to
// see them). With [Options.Stream] the turn streams (usage included) and the chunks are
// assembled into the same answer; a stream that ends before the choice's finish_reason is
// a retryable error. When the answer names no model, the message carries the requested one.
//
// Errors are [*Error] values with their class ([provider.ClassOf]): the SDK's (a prompt over
// the window holds an [*provider.PromptTooLongError] with the server's figures, so that
// [session.Session.Recover] compacts), an error object in a successful answer or in the
// stream, and a malformed answer (see MessageFromChat).
func (c *Client) Send(ctx context.Context, req provider.Request, opts Options) (*transcript.Message, error) {
	p, _, err := ChatParams(req, opts)
	if err != nil {
		return nil, &Error{Class: provider.ClassFatal, Message: err.Error(), Err: err}
	}
	cc, err := chatCompletion(ctx, c.chat, p, opts.Stream, opts.RequestOptions)
	if err != nil {
		return nil, err
	}
	m, err := MessageFromChat(cc)
	if err != nil {
		return nil, err
	}
	if m.Model == "" {
		m.Model = string(p.Model)
	}
	return m, nil
}

// Turn sends req with [Client.Send] and appends the answer to sess as an assistant record
// ([session.Session.Assistant]), which it returns. Nothing is appended when the turn fails.
func (c *Client) Turn(ctx context.Context, sess *session.Session, req provider.Request, opts Options) (transcript.Record, error) {
	m, err := c.Send(ctx, req, opts)
	if err != nil {
		return transcript.Record{}, err
	}
	return sess.Assistant(m)
}

// SendResponses sends req as one stateless Responses API turn (converted with
// [ResponsesParams]: the whole conversation as input, store off) and returns the answer as
// an assistant record carries it ([MessageFromResponse]). With [Options.Stream] the turn
// streams and the answer is the response the stream's last event (response.completed,
// response.incomplete or response.failed) carries; a stream that ends without one is a
// retryable error. Errors are classified as [Client.Send]'s are.
func (c *Client) SendResponses(ctx context.Context, req provider.Request, opts Options) (*transcript.Message, error) {
	p, _, err := ResponsesParams(req, opts)
	if err != nil {
		return nil, &Error{Class: provider.ClassFatal, Message: err.Error(), Err: err}
	}
	var r *responses.Response
	if opts.Stream {
		r, err = c.streamResponse(ctx, p, opts.RequestOptions)
	} else {
		r, err = c.response(ctx, p, opts.RequestOptions)
	}
	if err != nil {
		return nil, err
	}
	m, err := MessageFromResponse(r)
	if err != nil {
		return nil, err
	}
	if m.Model == "" {
		m.Model = string(p.Model)
	}
	return m, nil
}

// TurnResponses sends req with [Client.SendResponses] and appends the answer to sess as an
// assistant record, which it returns. Nothing is appended when the turn fails.
func (c *Client) TurnResponses(ctx context.Context, sess *session.Session, req provider.Request, opts Options) (transcript.Record, error) {
	m, err := c.SendResponses(ctx, req, opts)
	if err != nil {
		return transcript.Record{}, err
	}
	return sess.Assistant(m)
}

// chatCompletion sends p, streaming or not, and returns the answer; errors are classified.
// The answer's bytes are decoded here, not by the SDK: an error object in a successful
// answer is the server's error, a body that is not a completion the server's fault (fatal),
// a body cut off in transit the network's (retryable).
func chatCompletion(ctx context.Context, svc *sdk.ChatCompletionService, p sdk.ChatCompletionNewParams, stream bool, ropts []option.RequestOption) (*sdk.ChatCompletion, error) {
	if stream {
		return streamChat(ctx, svc, p, ropts)
	}
	var raw []byte
	if _, err := svc.New(ctx, p, append(slices.Clip(ropts), option.WithResponseBodyInto(&raw))...); err != nil {
		return nil, Classify(ctx, err)
	}
	if e := answerError(raw); e != nil {
		return nil, e
	}
	cc := new(sdk.ChatCompletion)
	if err := json.Unmarshal(raw, cc); err != nil {
		return nil, malformed(provider.ClassFatal, "the answer is not a chat completion: "+err.Error(), err)
	}
	return cc, nil
}

// streamChat sends p streaming and assembles the chunks into the completion a
// non-streaming request answers.
func streamChat(ctx context.Context, svc *sdk.ChatCompletionService, p sdk.ChatCompletionNewParams, ropts []option.RequestOption) (*sdk.ChatCompletion, error) {
	p.StreamOptions = sdk.ChatCompletionStreamOptionsParam{IncludeUsage: sdk.Bool(true)}
	st := svc.NewStreaming(ctx, p, ropts...)
	defer st.Close()
	var acc chatAccumulator
	for st.Next() {
		if err := acc.add([]byte(st.Current().RawJSON())); err != nil {
			return nil, malformed(provider.ClassFatal, "a chunk of the stream: "+err.Error(), err)
		}
	}
	if err := st.Err(); err != nil {
		return nil, Classify(ctx, err)
	}
	if acc.finish == "" {
		// A stream cut off before its end is a transport failure: retryable.
		return nil, Classify(ctx, fmt.Errorf("the stream ended before the choice's finish_reason: %w", io.ErrUnexpectedEOF))
	}
	raw, err := acc.completion()
	if err == nil {
		cc := new(sdk.ChatCompletion)
		if err = json.Unmarshal(raw, cc); err == nil {
			return cc, nil
		}
	}
	return nil, malformed(provider.ClassFatal, "the stream does not make a chat completion: "+err.Error(), err)
}

// response sends p and decodes the answer, as chatCompletion does.
func (c *Client) response(ctx context.Context, p responses.ResponseNewParams, ropts []option.RequestOption) (*responses.Response, error) {
	var raw []byte
	if _, err := c.responses.New(ctx, p, append(slices.Clip(ropts), option.WithResponseBodyInto(&raw))...); err != nil {
		return nil, Classify(ctx, err)
	}
	if e := answerError(raw); e != nil {
		return nil, e
	}
	r := new(responses.Response)
	if err := json.Unmarshal(raw, r); err != nil {
		return nil, malformed(provider.ClassFatal, "the answer is not a response: "+err.Error(), err)
	}
	return r, nil
}

// streamResponse sends p streaming and returns the response of the stream's last event.
func (c *Client) streamResponse(ctx context.Context, p responses.ResponseNewParams, ropts []option.RequestOption) (*responses.Response, error) {
	st := c.responses.NewStreaming(ctx, p, ropts...)
	defer st.Close()
	var final *responses.Response
	for st.Next() {
		ev := st.Current()
		switch ev.Type {
		case "response.completed", "response.incomplete", "response.failed":
			r := ev.Response
			final = &r
		case "error":
			if e := answerError([]byte(ev.RawJSON())); e != nil {
				return nil, e
			}
			return nil, malformed(provider.ClassFatal, "the stream sent an error event without a message", nil)
		}
	}
	if err := st.Err(); err != nil {
		return nil, Classify(ctx, err)
	}
	if final == nil {
		return nil, Classify(ctx, fmt.Errorf("the stream ended before its response.completed event: %w", io.ErrUnexpectedEOF))
	}
	return final, nil
}

// maxStreamCalls bounds the tool-call index a stream may name: a sparse index must not make
// the assembly allocate without bound.
const maxStreamCalls = 1024

// chatAccumulator assembles the first choice of a Chat Completions stream.
type chatAccumulator struct {
	id, model          string
	created            int64
	content, reasoning []byte
	refusal            []byte
	calls              []*streamCall
	function           *streamCall // the deprecated function_call
	finish             string
	stopReason         json.RawMessage
	usage              json.RawMessage
}

type streamCall struct {
	id, typ    string
	name, args []byte
}

// chunk is what the assembly reads of a stream's chunk.
type chunk struct {
	ID      string `json:"id"`
	Model   string `json:"model"`
	Created int64  `json:"created"`
	Choices []struct {
		Index int `json:"index"`
		Delta struct {
			Content          string `json:"content"`
			Refusal          string `json:"refusal"`
			ReasoningContent string `json:"reasoning_content"`
			Reasoning        string `json:"reasoning"`
			ToolCalls        []struct {
				Index    *int          `json:"index"`
				ID       string        `json:"id"`
				Type     string        `json:"type"`
				Function chunkFunction `json:"function"`
			} `json:"tool_calls"`
			FunctionCall *chunkFunction `json:"function_call"`
		} `json:"delta"`
		FinishReason string          `json:"finish_reason"`
		StopReason   json.RawMessage `json:"stop_reason"`
	} `json:"choices"`
	Usage json.RawMessage `json:"usage"`
}

type chunkFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// add adds a chunk's deltas of the first choice.
func (a *chatAccumulator) add(raw []byte) error {
	var c chunk
	if err := json.Unmarshal(raw, &c); err != nil {
		return err
	}
	if a.id == "" {
		a.id, a.model, a.created = c.ID, c.Model, c.Created
	}
	if len(c.Usage) > 0 && string(c.Usage) != "null" {
		a.usage = c.Usage
	}
	for _, ch := range c.Choices {
		if ch.Index != 0 {
			continue
		}
		d := ch.Delta
		a.content = append(a.content, d.Content...)
		a.refusal = append(a.refusal, d.Refusal...)
		// Servers that renamed reasoning_content to reasoning may send both for a while.
		a.reasoning = append(a.reasoning, cmp.Or(d.ReasoningContent, d.Reasoning)...)
		for _, tc := range d.ToolCalls {
			call, err := a.call(tc.Index, tc.ID)
			if err != nil {
				return err
			}
			if tc.ID != "" {
				call.id = tc.ID
			}
			if tc.Type != "" {
				call.typ = tc.Type
			}
			call.name = append(call.name, tc.Function.Name...)
			call.args = append(call.args, tc.Function.Arguments...)
		}
		if fc := d.FunctionCall; fc != nil {
			if a.function == nil {
				a.function = new(streamCall)
			}
			a.function.name = append(a.function.name, fc.Name...)
			a.function.args = append(a.function.args, fc.Arguments...)
		}
		if ch.FinishReason != "" {
			a.finish = ch.FinishReason
		}
		if len(ch.StopReason) > 0 && string(ch.StopReason) != "null" {
			a.stopReason = ch.StopReason
		}
	}
	return nil
}

// call returns the call a tool-call delta continues. Its index says which; a delta without
// one (some servers send each call whole, unindexed) starts a new call when it carries an
// id, and continues the last one otherwise. A delta whose id differs from the one its index
// holds starts a new call too.
func (a *chatAccumulator) call(index *int, id string) (*streamCall, error) {
	i := len(a.calls) - 1
	if index != nil {
		i = max(*index, 0) // some servers number a single call -1
	}
	if index == nil && id != "" || i < 0 || i < len(a.calls) && id != "" && a.calls[i].id != "" && a.calls[i].id != id {
		i = len(a.calls)
	}
	if i >= maxStreamCalls {
		return nil, fmt.Errorf("tool call index %d: more than %d calls", i, maxStreamCalls)
	}
	for len(a.calls) <= i {
		a.calls = append(a.calls, new(streamCall))
	}
	return a.calls[i], nil
}

// completion is the assembled answer as a non-streaming request's body.
func (a *chatAccumulator) completion() ([]byte, error) {
	type function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
	type call struct {
		ID       string   `json:"id,omitempty"`
		Type     string   `json:"type"`
		Function function `json:"function"`
	}
	type message struct {
		Role             string    `json:"role"`
		Content          string    `json:"content"`
		Refusal          string    `json:"refusal,omitempty"`
		ReasoningContent string    `json:"reasoning_content,omitempty"`
		ToolCalls        []call    `json:"tool_calls,omitempty"`
		FunctionCall     *function `json:"function_call,omitempty"`
	}
	type choice struct {
		Index        int             `json:"index"`
		Message      message         `json:"message"`
		FinishReason string          `json:"finish_reason"`
		StopReason   json.RawMessage `json:"stop_reason,omitempty"`
	}
	msg := message{Role: "assistant", Content: string(a.content), Refusal: string(a.refusal), ReasoningContent: string(a.reasoning)}
	for _, c := range a.calls {
		if c.id == "" && len(c.name) == 0 && len(c.args) == 0 {
			continue // an index the stream skipped
		}
		msg.ToolCalls = append(msg.ToolCalls, call{ID: c.id, Type: cmp.Or(c.typ, "function"), Function: function{Name: string(c.name), Arguments: string(c.args)}})
	}
	if f := a.function; f != nil {
		msg.FunctionCall = &function{Name: string(f.name), Arguments: string(f.args)}
	}
	body := struct {
		ID      string          `json:"id"`
		Object  string          `json:"object"`
		Created int64           `json:"created"`
		Model   string          `json:"model"`
		Choices []choice        `json:"choices"`
		Usage   json.RawMessage `json:"usage,omitempty"`
	}{a.id, "chat.completion", a.created, a.model, []choice{{Message: msg, FinishReason: a.finish, StopReason: a.stopReason}}, a.usage}
	return json.Marshal(body)
}
