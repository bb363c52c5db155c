// Package transport holds what the provider adapters share about failed HTTP calls: how a
// failure that never reached an answer is classified, and the delay an answer asked for.
package transport

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/agentctx/agentctx/provider"
)

// Class is the class of a failure that is no provider answer: fatal when the caller's
// context ended the call (ctx is the call's context), retryable for a timeout of one
// attempt, a connection or body cut off, or another network error; fatal otherwise.
func Class(ctx context.Context, err error) provider.ErrorClass {
	if ctx.Err() != nil {
		return provider.ClassFatal
	}
	if _, ok := errors.AsType[net.Error](err); ok {
		return provider.ClassRetryable
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, io.ErrUnexpectedEOF) {
		return provider.ClassRetryable
	}
	return provider.ClassFatal
}

// RetryAfter reads the delay an answer asked for: retry-after-ms (milliseconds), else
// retry-after (seconds, or an HTTP date); zero when it gave none.
func RetryAfter(h http.Header) time.Duration {
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := h.Get("Retry-After")
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 {
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := time.Until(t); d > 0 {
			return d
		}
	}
	return 0
}
