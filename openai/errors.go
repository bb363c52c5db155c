package openai

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/agentctx/agentctx/internal/providererr"
	"github.com/agentctx/agentctx/internal/transport"
	"github.com/agentctx/agentctx/provider"
	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"
)

// Error is a failed call, classified for recovery: what [github.com/agentctx/agentctx/summarize.Summarizer] returns for any
// failure, and what [Classify] makes of the SDK's errors. [provider.ClassOf] reads its
// class.
type Error struct {
	// Class says what the failure means for the conversation (see [provider.ErrorClass]).
	Class provider.ErrorClass
	// StatusCode is the HTTP status of the answer; 0 when there was none.
	StatusCode int
	// Type, Code and Param are the error object's fields, e.g. "invalid_request_error",
	// "context_length_exceeded", "messages".
	Type, Code, Param string
	// Message is the provider's explanation, or the transport error's.
	Message string
	// RetryAfter is how long the provider asked the caller to wait; zero when it did not say.
	RetryAfter time.Duration
	// PromptTooLong holds the figures of a [provider.ClassPromptTooLong] error, as far as
	// the message or the body gives them.
	PromptTooLong *provider.PromptTooLongError
	// Media is set for a [provider.ClassMediaRejected] error: OpenAI names no block, so
	// [agentctx.Pipeline.Recover] strips the media of the latest message that holds any.
	Media *provider.MediaRejectedError
	// Err is the underlying error: the SDK's *sdk.Error, a transport error, the context's.
	Err error
}

// Error describes the failure.
func (e *Error) Error() string {
	return providererr.Description{Adapter: "agentctx/openai", Class: e.Class, StatusCode: e.StatusCode,
		Kind: cmp.Or(e.Code, e.Type), Message: e.Message}.String()
}

// ErrorClass returns e.Class.
func (e *Error) ErrorClass() provider.ErrorClass { return e.Class }

// Unwrap returns the underlying error and, for a prompt that is too long, the
// [*provider.PromptTooLongError]; for rejected media, the [*provider.MediaRejectedError].
func (e *Error) Unwrap() []error { return providererr.Unwrap(e.Err, e.PromptTooLong, e.Media) }

// Is makes errors.Is(err, provider.ErrRequestTooLarge) hold for a request-too-large error.
func (e *Error) Is(target error) bool { return providererr.IsRequestTooLarge(e.Class, target) }

// Classify returns err as an [*Error] with its class, or nil for nil; ctx is the context
// the failed call ran under. An error that already is an [*Error] is returned as is; an
// error event in the middle of a stream is classified as the error object it carries.
func Classify(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if e, ok := errors.AsType[*Error](err); ok {
		return e
	}
	if ae, ok := errors.AsType[*sdk.Error](err); ok {
		return classifyAPI(ae)
	}
	if se, ok := errors.AsType[*ssestream.StreamError](err); ok {
		// An error event in the middle of a stream: the server's error object.
		if e := answerError(se.Event.Data); e != nil {
			e.Err = err
			return e
		}
	}
	return &Error{Class: transport.Class(ctx, err), Message: err.Error(), Err: err}
}

// The prompt-too-long messages of OpenAI and of the compatible servers that copy them
// (vLLM): the prompt alone, or the prompt with the completion it asked for.
var (
	resultedRE  = regexp.MustCompile(`maximum context length is (\d+) tokens\. However, your messages resulted in (\d+) tokens`)
	requestedRE = regexp.MustCompile(`maximum context length is (\d+) tokens\. However, you requested (\d+) tokens \((\d+) in the messages, (\d+) in the completion\)`)
)

func classifyAPI(ae *sdk.Error) *Error {
	e := &Error{StatusCode: ae.StatusCode, Type: ae.Type, Code: ae.Code, Param: ae.Param, Message: ae.Message, Err: ae}
	var raw []byte
	if ae.Response != nil {
		e.RetryAfter = transport.RetryAfter(ae.Response.Header)
		raw = answerBody(ae.Response)
	}
	if e.Message == "" {
		// vLLM writes its error object at the top level, not under "error".
		var top struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(raw, &top) == nil {
			e.Message = top.Message
		}
	}
	e.classify(e.StatusCode, raw)
	return e
}

// classify sets e's class from status — the answer's HTTP status or, for an error object
// in a successful answer, the status its code stands for — and its fields; raw is the
// answer's body.
func (e *Error) classify(status int, raw []byte) {
	switch {
	case promptTooLong(e, raw):
		e.Class = provider.ClassPromptTooLong
	case status == http.StatusRequestEntityTooLarge:
		e.Class = provider.ClassRequestTooLarge
	case e.Code == "insufficient_quota":
		e.Class = provider.ClassFatal // a 429 no retry fixes: the account is out of credit
	case status == http.StatusTooManyRequests || status >= 500 || status == http.StatusRequestTimeout:
		e.Class = provider.ClassRetryable
	case status == http.StatusBadRequest && mediaError(e):
		e.Class = provider.ClassMediaRejected
		e.Media = &provider.MediaRejectedError{Message: e.Message}
	case status == http.StatusBadRequest || status == http.StatusNotFound || status == http.StatusUnprocessableEntity:
		e.Class = provider.ClassInvalidRequest
	default:
		e.Class = provider.ClassFatal
	}
}

// answerError returns the error object a successful answer holds instead of a completion
// or a response, classified, or nil when there is none: {"error":{...}} (OpenAI, a
// Responses answer that failed, llama.cpp), vLLM's {"object":"error",...} at the top level,
// or {"error":"text"}. An event of a stream is read the same way.
func answerError(raw []byte) *Error {
	var top struct {
		Object  string          `json:"object"`
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Type    string          `json:"type"`
		Code    json.RawMessage `json:"code"`
		Param   json.RawMessage `json:"param"`
	}
	if json.Unmarshal(raw, &top) != nil {
		return nil
	}
	var obj struct {
		Message string          `json:"message"`
		Type    string          `json:"type"`
		Code    json.RawMessage `json:"code"`
		Param   json.RawMessage `json:"param"`
	}
	switch {
	case len(top.Error) > 0 && top.Error[0] == '{':
		if json.Unmarshal(top.Error, &obj) != nil {
			return nil
		}
	case len(top.Error) > 0 && top.Error[0] == '"':
		if json.Unmarshal(top.Error, &obj.Message) != nil {
			return nil
		}
	case top.Object == "error" || top.Type == "error" && top.Message != "":
		// vLLM's error object, or a Responses stream's error event.
		obj.Message, obj.Type, obj.Code, obj.Param = top.Message, top.Type, top.Code, top.Param
	default:
		return nil
	}
	e := &Error{StatusCode: http.StatusOK, Type: obj.Type, Message: obj.Message, Param: jsonString(obj.Param)}
	status, err := strconv.Atoi(string(obj.Code)) // vLLM's code is the HTTP status
	if err != nil {
		e.Code = jsonString(obj.Code)
		status = codeStatus(e.Type, e.Code)
	}
	if e.Message == "" {
		e.Message = "the answer is an error object without a message"
	}
	e.Err = errors.New(e.Message)
	e.classify(status, raw)
	return e
}

// codeStatus is the HTTP status an error object's type or code stands for, when the object
// came in a successful answer or a stream and gives no status of its own; 0 when unknown.
func codeStatus(typ, code string) int {
	switch {
	case code == "rate_limit_exceeded" || typ == "rate_limit_error" || typ == "tokens" || typ == "requests":
		return http.StatusTooManyRequests
	case code == "server_error" || typ == "server_error" || typ == "api_error" || typ == "overloaded_error" || typ == "timeout_error":
		return http.StatusInternalServerError
	case typ == "invalid_request_error" || code == "invalid_prompt" || strings.Contains(code, "image"):
		return http.StatusBadRequest
	}
	return 0
}

// jsonString is a JSON value as text: a string's value, "" for null or nothing, else the
// JSON itself.
func jsonString(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	return string(raw)
}

// promptTooLong recognizes a prompt over the context window and fills in its figures:
// OpenAI's context_length_exceeded, vLLM's message of the same wording, llama.cpp's
// exceed_context_size_error with n_prompt_tokens and n_ctx.
func promptTooLong(e *Error, raw []byte) bool {
	if m := requestedRE.FindStringSubmatch(e.Message); m != nil {
		window, _ := strconv.Atoi(m[1])
		input, _ := strconv.Atoi(m[3])
		completion, _ := strconv.Atoi(m[4])
		e.PromptTooLong = &provider.PromptTooLongError{Tokens: input, Limit: max(0, window-completion), Window: window,
			Reason: "the provider refused the prompt with the completion on top of it"}
		return true
	}
	if m := resultedRE.FindStringSubmatch(e.Message); m != nil {
		window, _ := strconv.Atoi(m[1])
		tokens, _ := strconv.Atoi(m[2])
		e.PromptTooLong = &provider.PromptTooLongError{Tokens: tokens, Limit: window, Window: window, Reason: "the provider refused the prompt"}
		return true
	}
	var body struct {
		Error struct {
			Type          string `json:"type"`
			NPromptTokens int    `json:"n_prompt_tokens"`
			NCtx          int    `json:"n_ctx"`
		} `json:"error"`
	}
	if json.Unmarshal(raw, &body) == nil && body.Error.Type == "exceed_context_size_error" {
		e.PromptTooLong = &provider.PromptTooLongError{Tokens: body.Error.NPromptTokens, Limit: body.Error.NCtx, Window: body.Error.NCtx,
			Reason: "the server refused the prompt"}
		return true
	}
	if e.Code == "context_length_exceeded" {
		e.PromptTooLong = &provider.PromptTooLongError{Reason: "the provider refused the prompt"}
		return true
	}
	return false
}

// answerBody returns the error answer's body (the SDK keeps it readable) and puts it back for the
// caller's own debugging; nil when it cannot be read.
func answerBody(res *http.Response) []byte {
	if res.Body == nil {
		return nil
	}
	raw, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	res.Body = io.NopCloser(bytes.NewReader(raw))
	if err != nil {
		return nil
	}
	return raw
}

// mediaError reports whether a 400 is about an image or a file of the request.
func mediaError(e *Error) bool {
	if strings.Contains(e.Code, "image") || strings.Contains(e.Code, "file") {
		return true
	}
	lower := strings.ToLower(e.Message + " " + e.Param)
	return strings.Contains(lower, "image") || strings.Contains(lower, "pdf")
}
