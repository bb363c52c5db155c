// Package providererr holds what the provider adapters' Error types share: the message an
// error gives, the errors it wraps and the sentinel it matches. Each adapter keeps its own
// public Error type, with its own fields and their documentation, and its methods call these.
package providererr

import (
	"fmt"
	"strings"

	"github.com/agentctx/agentctx/provider"
)

// Description is what an adapter error's message says.
type Description struct {
	// Adapter names the adapter, e.g. "agentctx/anthropic"; the message starts with it.
	Adapter string
	// Class is the error's class.
	Class provider.ErrorClass
	// StatusCode is the HTTP status of the provider's answer; 0 leaves it out.
	StatusCode int
	// Kind is the provider's name for the error (its type or code); "" leaves it out.
	Kind string
	// Message is the provider's explanation or the transport error's; "" leaves it out.
	Message string
	// RequestID is the provider's request id; "" leaves it out.
	RequestID string
}

// String returns the message: "adapter: class: status kind: message (request id)", each
// part after the class only when it is set.
func (d Description) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s", d.Adapter, d.Class)
	if d.StatusCode != 0 {
		fmt.Fprintf(&b, ": %d", d.StatusCode)
	}
	if d.Kind != "" {
		fmt.Fprintf(&b, " %s", d.Kind)
	}
	if d.Message != "" {
		fmt.Fprintf(&b, ": %s", d.Message)
	}
	if d.RequestID != "" {
		fmt.Fprintf(&b, " (request %s)", d.RequestID)
	}
	return b.String()
}

// Unwrap returns what an adapter error wraps, in this order and each only when set: the
// underlying error, the figures of a prompt that is too long, the media the provider
// rejected.
func Unwrap(err error, tooLong *provider.PromptTooLongError, media *provider.MediaRejectedError) []error {
	var errs []error
	if err != nil {
		errs = append(errs, err)
	}
	if tooLong != nil {
		errs = append(errs, tooLong)
	}
	if media != nil {
		errs = append(errs, media)
	}
	return errs
}

// IsRequestTooLarge reports whether an error of class matches target as a request that is
// too large: target is [provider.ErrRequestTooLarge] and class is
// [provider.ClassRequestTooLarge]. An adapter error's Is method returns it, so that
// errors.Is(err, provider.ErrRequestTooLarge) holds for such an error.
func IsRequestTooLarge(class provider.ErrorClass, target error) bool {
	return target == provider.ErrRequestTooLarge && class == provider.ClassRequestTooLarge
}
