package provider

import (
	"errors"
	"fmt"
	"strings"
)

// ErrPromptTooLong is the sentinel a [*PromptTooLongError] matches with errors.Is.
var ErrPromptTooLong = errors.New("agentctx: prompt too long")

// PromptTooLongError reports a prompt that does not fit. [github.com/agentctx/agentctx.Pipeline.Prepare] returns it when the
// request's pressure figure is at or above the blocking limit (or leaves max_tokens below its
// floor) and compaction is off, failed or could not bring it under; the Result returned with it
// still holds the Report and the records to append (failed compaction attempts among them —
// append them so the circuit breaker counts them). A [github.com/agentctx/summarize.Summarizer] returns it when the provider
// rejected the summary request as too long, with the provider's figures when it gave them.
type PromptTooLongError struct {
	// Tokens is the prompt size: the pressure figure, or the provider's count.
	Tokens int
	// Limit is the most the prompt may hold: the blocking limit, or the provider's maximum.
	// Zero when unknown.
	Limit int
	// Window is the context window; zero when unknown.
	Window int
	// Reason says why the prompt could not be brought under the limit.
	Reason string
}

// Error describes the figures and the reason.
func (e *PromptTooLongError) Error() string {
	var b strings.Builder
	b.WriteString("agentctx: prompt too long")
	if e.Tokens > 0 {
		fmt.Fprintf(&b, ": %d tokens", e.Tokens)
		if e.Limit > 0 {
			fmt.Fprintf(&b, " > %d maximum", e.Limit)
		}
	}
	if e.Window > 0 {
		fmt.Fprintf(&b, " (window %d)", e.Window)
	}
	if e.Reason != "" {
		b.WriteString(": " + e.Reason)
	}
	return b.String()
}

// Is reports whether target is [ErrPromptTooLong].
func (e *PromptTooLongError) Is(target error) bool { return target == ErrPromptTooLong }

// ErrRequestTooLarge is the sentinel a [*RequestTooLargeError] matches with errors.Is.
var ErrRequestTooLarge = errors.New("agentctx: request body too large")

// RequestTooLargeError reports a request whose JSON body is over the provider's size limit
// ([github.com/agentctx/agentctx.PressureConfig.MaxBodyBytes]) however few tokens it holds — base64 images and documents
// weigh far more in bytes than in tokens. [github.com/agentctx/agentctx.Pipeline.Prepare] compacts such a request when it
// can (the summary replaces the media of the history) and returns this error when it cannot
// or the compacted request is still over; the Result returned with it holds the Report and the
// records to append, as with [*PromptTooLongError].
type RequestTooLargeError struct {
	// Bytes is the size of the body, Limit the most it may be.
	Bytes, Limit int
	// Reason says why compaction did not bring it under.
	Reason string
}

func (e *RequestTooLargeError) Error() string {
	return fmt.Sprintf("agentctx: request body too large: %d bytes > %d maximum: %s", e.Bytes, e.Limit, e.Reason)
}

// Is makes errors.Is(err, ErrRequestTooLarge) hold.
func (e *RequestTooLargeError) Is(target error) bool { return target == ErrRequestTooLarge }

// MediaRejectedError is the part of a provider error that says which media it refused: the
// adapters put one in the error tree of a [ClassMediaRejected] error. Paths are the block
// positions in the request when the provider named them; MaxBytes and MaxImages the limits
// its message names when it named no block.
type MediaRejectedError struct {
	// Paths are positions in the request: "messages.3.content.1", or
	// "messages.3.content.0.content.1" inside a tool_result.
	Paths []string
	// MaxBytes is the largest image the provider takes, in decoded bytes, when the message
	// says so ("image exceeds 5 MB maximum: N bytes > M bytes").
	MaxBytes int
	// MaxImages is the most images the request may hold for the limit the message names
	// (the many-image dimension limit applies above 20 images).
	MaxImages int
	// Message is the provider's explanation.
	Message string
}

// Error describes the refusal.
func (e *MediaRejectedError) Error() string {
	return "agentctx: media rejected: " + e.Message
}

// ErrOutputTruncated is what a caller passes to [github.com/agentctx/agentctx.Pipeline.Recover] when the response it
// appended stopped at max_tokens ([github.com/agentctx/agentctx/transcript.Message.Truncated]); [*OutputTruncatedError] matches it.
var ErrOutputTruncated = errors.New("agentctx: the response stopped at max_tokens")

// OutputTruncatedError is the terminal error of the output rungs: the cap is raised and
// 3 continuations did not finish the answer.
type OutputTruncatedError struct {
	// MaxTokens is the output cap of the last request; Continuations the continuation turns
	// already sent.
	MaxTokens, Continuations int
}

// Error describes the figures.
func (e *OutputTruncatedError) Error() string {
	return fmt.Sprintf("agentctx: the response stopped at max_tokens %d again after %d continuations", e.MaxTokens, e.Continuations)
}

// Is makes errors.Is(err, ErrOutputTruncated) hold.
func (e *OutputTruncatedError) Is(target error) bool { return target == ErrOutputTruncated }

// ErrorClass says what a provider's error means for the conversation's context: whether
// reducing or repairing the request can fix it, or whether it is the caller's retry policy
// that should act. The provider adapters (agentctx/anthropic, agentctx/openai) classify the
// errors they return; [ClassOf] reads the class of any error. The zero value is
// [ClassNone].
type ErrorClass string

// The error classes.
const (
	// ClassNone is the class of a nil error.
	ClassNone ErrorClass = ""
	// ClassPromptTooLong: the prompt is over the model's context window. A smaller request
	// (a compaction) can succeed; the error tree holds a [*PromptTooLongError] with the
	// provider's figures when it gave them.
	ClassPromptTooLong ErrorClass = "prompt_too_long"
	// ClassRequestTooLarge: the request body is over the provider's size limit (HTTP 413),
	// whatever its token count; dropping media or compacting can succeed.
	ClassRequestTooLarge ErrorClass = "request_too_large"
	// ClassMediaRejected: an image or document of the request was refused (too large, too
	// many, unreadable, or a media type that does not match its bytes). Resending the same
	// blocks fails the same way every turn: they must be stripped or replaced.
	ClassMediaRejected ErrorClass = "media_rejected"
	// ClassRetryable: the provider is overloaded or rate limited, a server error, a timeout
	// or a transport failure. The request is fine as it is; retrying it, after the delay the
	// provider asked for, is the caller's retry policy (the SDKs have one), not the context
	// pipeline's.
	ClassRetryable ErrorClass = "retryable"
	// ClassInvalidRequest: the provider refused the request for another reason (a contract
	// violation, an unknown model, a bad parameter). Retrying the same request fails again.
	ClassInvalidRequest ErrorClass = "invalid_request"
	// ClassFatal: anything else — authentication, permission, billing, the caller's context
	// ended, a malformed answer — that neither a retry nor a smaller request fixes.
	ClassFatal ErrorClass = "fatal"
	// ClassOutputTruncated: the response stopped at max_tokens ([ErrOutputTruncated]) — no
	// provider error, but the answer is incomplete. [github.com/agentctx/agentctx.Pipeline.Recover] raises the output cap
	// once, then asks the model to continue, at most 3 times.
	ClassOutputTruncated ErrorClass = "output_truncated"
)

// classifiedError is an error that knows its class.
type classifiedError interface {
	error
	ErrorClass() ErrorClass
}

// ClassOf returns the class of err: the class reported by the first error in its tree with
// an ErrorClass() ErrorClass method (the adapters' errors have one); else
// [ClassPromptTooLong] for a [*PromptTooLongError], [ClassRequestTooLarge] for a
// [*RequestTooLargeError], [ClassMediaRejected] for a [*MediaRejectedError],
// [ClassOutputTruncated] for [ErrOutputTruncated], and [ClassFatal] for any other non-nil
// error.
func ClassOf(err error) ErrorClass {
	if err == nil {
		return ClassNone
	}
	if c, ok := errors.AsType[classifiedError](err); ok {
		return c.ErrorClass()
	}
	switch {
	case errors.Is(err, ErrPromptTooLong):
		return ClassPromptTooLong
	case errors.Is(err, ErrRequestTooLarge):
		return ClassRequestTooLarge
	case errors.Is(err, ErrOutputTruncated):
		return ClassOutputTruncated
	}
	if _, ok := errors.AsType[*MediaRejectedError](err); ok {
		return ClassMediaRejected
	}
	return ClassFatal
}
