package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/agentctx/agentctx/internal/providererr"
	"github.com/agentctx/agentctx/internal/transport"
	"github.com/agentctx/agentctx/provider"
	sdk "github.com/anthropics/anthropic-sdk-go/v2"
)

// Error is a failed turn, classified for recovery: what [Client.Send], [Client.Turn] and
// [github.com/agentctx/agentctx/summarize.Summarizer] return for any failure. [provider.ClassOf] reads its class.
type Error struct {
	// Class says what the failure means for the conversation (see [provider.ErrorClass]).
	Class provider.ErrorClass
	// StatusCode is the HTTP status of the provider's answer: 200 for an error event of a
	// stream, 0 when there was no answer (a transport failure).
	StatusCode int
	// Type is the provider's error type, e.g. "overloaded_error"; Code its
	// error.details.error_code, when it gave one.
	Type, Code string
	// Message is the provider's explanation, or the transport error's.
	Message string
	// RequestID is the provider's request id, for support.
	RequestID string
	// RetryAfter is how long the provider asked the caller to wait (retry-after or
	// retry-after-ms); zero when it did not say.
	RetryAfter time.Duration
	// Paths are the positions of the media blocks a [provider.ClassMediaRejected] error
	// names, as the provider writes them: "messages.3.content.1", or
	// "messages.3.content.0.content.1" for a block inside a tool_result.
	Paths []string
	// PromptTooLong holds the provider's figures for a [provider.ClassPromptTooLong] error:
	// Tokens the prompt's size, Limit the most it may hold (when the provider counted
	// max_tokens in, the window less max_tokens), Window the window when known.
	PromptTooLong *provider.PromptTooLongError
	// Media says which media a [provider.ClassMediaRejected] error refused: Paths, and the
	// size or count limit its message names, for [agentctx.Pipeline.Recover].
	Media *provider.MediaRejectedError
	// Err is the underlying error: the SDK's *sdk.Error, a transport error, the context's.
	Err error
}

// Error describes the failure.
func (e *Error) Error() string {
	return providererr.Description{Adapter: "agentctx/anthropic", Class: e.Class, StatusCode: e.StatusCode,
		Kind: e.Type, Message: e.Message, RequestID: e.RequestID}.String()
}

// ErrorClass returns e.Class.
func (e *Error) ErrorClass() provider.ErrorClass { return e.Class }

// Unwrap returns the underlying error and, for a prompt that is too long, the
// [*provider.PromptTooLongError] with the figures; for rejected media, the
// [*provider.MediaRejectedError].
func (e *Error) Unwrap() []error { return providererr.Unwrap(e.Err, e.PromptTooLong, e.Media) }

// Is makes errors.Is(err, provider.ErrRequestTooLarge) hold for a request-too-large error
// (a prompt-too-long one holds its [*provider.PromptTooLongError]).
func (e *Error) Is(target error) bool { return providererr.IsRequestTooLarge(e.Class, target) }

// Classify returns err as an [*Error] with its class, or nil for nil; ctx is the context
// the failed call ran under, which tells a caller's deadline (fatal) from a per-attempt
// timeout of the SDK (retryable). An error that already is an [*Error] is returned as is.
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
	return &Error{Class: transport.Class(ctx, err), Message: err.Error(), Err: err}
}

// The provider's prompt-too-long messages: the prompt alone, and the prompt with max_tokens.
var (
	promptTooLongRE = regexp.MustCompile(`prompt is too long: (\d+) tokens > (\d+) maximum`)
	inputAndMaxRE   = regexp.MustCompile("input length and `max_tokens` exceed context limit: (\\d+) \\+ (\\d+) > (\\d+)")
)

// classifyAPI classifies an error answer of the API.
func classifyAPI(ae *sdk.Error) *Error {
	e := &Error{StatusCode: ae.StatusCode, Type: string(ae.Type()), Code: string(ae.ErrorCode()), Message: ae.Message, RequestID: ae.RequestID, Err: ae}
	if ae.Response != nil {
		e.RetryAfter = transport.RetryAfter(ae.Response.Header)
	}
	if e.Type == "" {
		e.Type, e.Message = errorBody(ae.RawJSON(), e.Message)
	}
	switch {
	case e.StatusCode == http.StatusRequestEntityTooLarge || e.Type == "request_too_large" || e.Code == string(sdk.ErrorCodeRequestBodyTooLargeAfterDecoding):
		e.Class = provider.ClassRequestTooLarge
	case e.StatusCode == http.StatusTooManyRequests || e.StatusCode == 529 || e.StatusCode >= 500 ||
		e.Type == "rate_limit_error" || e.Type == "overloaded_error" || e.Type == "api_error" || e.Type == "timeout_error":
		e.Class = provider.ClassRetryable
	case e.StatusCode == http.StatusBadRequest || e.Type == "invalid_request_error":
		e.Class = classifyInvalid(e, ae.RawJSON())
	case e.StatusCode == http.StatusNotFound || e.Type == "not_found_error":
		e.Class = provider.ClassInvalidRequest
	default:
		e.Class = provider.ClassFatal
	}
	return e
}

// classifyInvalid classifies a 400: a prompt too long, rejected media, or another invalid
// request.
func classifyInvalid(e *Error, raw string) provider.ErrorClass {
	if m := promptTooLongRE.FindStringSubmatch(e.Message); m != nil {
		tokens, _ := strconv.Atoi(m[1])
		limit, _ := strconv.Atoi(m[2])
		e.PromptTooLong = &provider.PromptTooLongError{Tokens: tokens, Limit: limit, Reason: "the provider refused the prompt"}
		return provider.ClassPromptTooLong
	}
	if m := inputAndMaxRE.FindStringSubmatch(e.Message); m != nil {
		input, _ := strconv.Atoi(m[1])
		maxTokens, _ := strconv.Atoi(m[2])
		window, _ := strconv.Atoi(m[3])
		e.PromptTooLong = &provider.PromptTooLongError{Tokens: input, Limit: max(0, window-maxTokens), Window: window,
			Reason: "the provider refused the prompt with max_tokens on top of it"}
		return provider.ClassPromptTooLong
	}
	if e.Code == string(sdk.ErrorCodeImageDimensionsTooLarge) {
		e.Paths = detailPaths(raw)
		e.Media = mediaRejected(e)
		return provider.ClassMediaRejected
	}
	if mediaMessage(e.Message) {
		if p := blockPath(e.Message); p != "" {
			e.Paths = []string{p}
		}
		e.Media = mediaRejected(e)
		return provider.ClassMediaRejected
	}
	return provider.ClassInvalidRequest
}

// The limits a media error's message names: an image's size, and the dimension limit of
// requests with many images.
var (
	imageBytesRE = regexp.MustCompile(`image exceeds \d+ MB maximum: \d+ bytes > (\d+) bytes`)
	manyImagesRE = regexp.MustCompile(`(?i)max allowed size for many-image requests`)
)

// manyImages is the image count above which the provider applies its many-image dimension
// limit (2000 px per side above 20 images, per the vision documentation).
const manyImages = 20

// mediaRejected returns what a media error says of the blocks it refused.
func mediaRejected(e *Error) *provider.MediaRejectedError {
	m := &provider.MediaRejectedError{Paths: e.Paths, Message: e.Message}
	if s := imageBytesRE.FindStringSubmatch(e.Message); s != nil {
		m.MaxBytes, _ = strconv.Atoi(s[1])
	}
	if manyImagesRE.MatchString(e.Message) {
		m.MaxImages = manyImages
	}
	return m
}

// mediaMessage reports whether a 400's message is about an image or a document.
func mediaMessage(msg string) bool {
	lower := strings.ToLower(msg)
	for _, w := range []string{"image", "pdf", "document"} {
		if strings.Contains(lower, w) {
			return true
		}
	}
	return false
}

// blockPath returns the block position a message starts with, e.g.
// "messages.168.content.0.tool_result.content.1.image.source.base64: …" gives
// "messages.168.content.0.content.1"; "" when it names none.
func blockPath(msg string) string {
	head, _, ok := strings.Cut(msg, ":")
	if !ok {
		return ""
	}
	parts := strings.Split(strings.TrimSpace(head), ".")
	if len(parts) < 4 || parts[0] != "messages" || !isIndex(parts[1]) || parts[2] != "content" || !isIndex(parts[3]) {
		return ""
	}
	path := strings.Join(parts[:4], ".")
	rest := parts[4:]
	if len(rest) > 0 && rest[0] == "tool_result" {
		rest = rest[1:]
	}
	if len(rest) >= 2 && rest[0] == "content" && isIndex(rest[1]) {
		path += ".content." + rest[1]
	}
	return path
}

func isIndex(s string) bool {
	_, err := strconv.Atoi(s)
	return err == nil
}

// detailPaths reads error.details.paths of an error body.
func detailPaths(raw string) []string {
	var body struct {
		Error struct {
			Details struct {
				Paths []string `json:"paths"`
			} `json:"details"`
		} `json:"error"`
	}
	if json.Unmarshal([]byte(raw), &body) != nil {
		return nil
	}
	return body.Error.Details.Paths
}

// errorBody reads the type and message of an error body the SDK did not decode (an error
// event of a stream carries them at the top level too).
func errorBody(raw, msg string) (string, string) {
	var body struct {
		Type  string `json:"type"`
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal([]byte(raw), &body) != nil || body.Error.Type == "" {
		return "", msg
	}
	if msg == "" {
		msg = body.Error.Message
	}
	return body.Error.Type, msg
}
