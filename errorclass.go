package agentctx

import "errors"

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
	// provider error, but the answer is incomplete. [Pipeline.Recover] raises the output cap
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
