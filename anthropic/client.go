package anthropic

import (
	"context"
	"fmt"
	"io"
	"slices"

	"github.com/agentctx/agentctx/provider"
	"github.com/agentctx/agentctx/session"
	"github.com/agentctx/agentctx/transcript"
	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
)

// Client sends agentctx requests through the caller's configured SDK client: its API key,
// base URL, HTTP client, retry policy and middleware apply to every turn. A Client holds no
// per-conversation state and is safe for concurrent use, as the SDK client is.
type Client struct {
	messages *sdk.MessageService
}

// NewClient wraps c, typically made with sdk.NewClient(option.WithMaxRetries(…), …). The
// Client uses c.Messages; c must outlive it.
func NewClient(c *sdk.Client) *Client {
	return &Client{messages: &c.Messages}
}

// Send sends req as one turn and returns the assistant message the provider answered, as
// an assistant record carries it (see [transcript.DecodeResponse]): its content blocks, stop
// reason and usage with the cache figures, and every field of the answer the library does
// not model, unchanged. An answer with no content blocks is returned as it is: it is the
// model's turn, and its usage anchors the next request's token count.
//
// The turn streams when opts.Stream or opts.OnEvent says so, or when the SDK would refuse
// it non-streaming (its check of max_tokens against the ten-minute non-streaming limit,
// which a model's full max_tokens fails); the streamed events are accumulated into the same
// message. Errors are [*Error] values with their class.
func (c *Client) Send(ctx context.Context, req provider.Request, opts Options) (*transcript.Message, error) {
	params, err := Params(req, opts)
	if err != nil {
		return nil, &Error{Class: provider.ClassFatal, Message: err.Error(), Err: err}
	}
	ropts := slices.Concat(BetaOptions(req), opts.RequestOptions)
	var raw []byte
	if c.mustStream(params, opts, ropts) {
		raw, err = c.stream(ctx, params, opts.OnEvent, ropts)
	} else {
		// The answer's bytes are decoded here, not by the SDK: a body that is not a message
		// is the provider's fault (fatal), a body cut off in transit is the network's
		// (retryable), and the record keeps every field of the answer as it came.
		_, err = c.messages.New(ctx, params, append(ropts, option.WithResponseBodyInto(&raw))...)
	}
	if err != nil {
		return nil, Classify(ctx, err)
	}
	return decodeAnswer(raw)
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

// mustStream reports whether the turn is sent streaming: asked for, or required by the SDK,
// whose non-streaming path refuses a max_tokens it estimates could run past its limit.
func (c *Client) mustStream(p sdk.MessageNewParams, opts Options, ropts []option.RequestOption) bool {
	if opts.Stream || opts.OnEvent != nil {
		return true
	}
	_, err := sdk.CalculateNonStreamingTimeout(int(p.MaxTokens), p.Model, slices.Concat(c.messages.Options, ropts))
	return err != nil
}

// stream sends the turn streaming and returns the accumulated message's JSON.
func (c *Client) stream(ctx context.Context, p sdk.MessageNewParams, onEvent func(sdk.MessageStreamEventUnion), ropts []option.RequestOption) ([]byte, error) {
	s := c.messages.NewStreaming(ctx, p, ropts...)
	defer s.Close()
	var acc sdk.Message
	var compactions compactionDeltas
	stopped := false
	for s.Next() {
		ev := s.Current()
		if onEvent != nil {
			onEvent(ev)
		}
		if err := acc.Accumulate(ev); err != nil {
			return nil, err
		}
		compactions.take(ev)
		stopped = stopped || ev.Type == "message_stop"
	}
	if err := s.Err(); err != nil {
		return nil, err
	}
	if !stopped {
		// A stream cut off before its end is a transport failure: retryable.
		return nil, fmt.Errorf("the stream ended before its message_stop event: %w", io.ErrUnexpectedEOF)
	}
	return compactions.apply([]byte(acc.RawJSON()))
}

// classifyAPIError classifies an error object found in a successful answer.
func classifyAPIError(ae *transcript.APIError) *Error {
	e := &Error{StatusCode: 200, Type: ae.Type, Message: ae.Message, Err: ae}
	switch ae.Type {
	case "overloaded_error", "rate_limit_error", "api_error", "timeout_error":
		e.Class = provider.ClassRetryable
	case "request_too_large":
		e.Class = provider.ClassRequestTooLarge
	case "invalid_request_error":
		e.Class = classifyInvalid(e, "")
	default:
		e.Class = provider.ClassFatal
	}
	return e
}
