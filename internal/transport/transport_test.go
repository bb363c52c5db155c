package transport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/agentctx/agentctx/provider"
	"github.com/stretchr/testify/assert"
)

func TestRetryAfter(t *testing.T) {
	tests := []struct {
		name   string
		header http.Header
		want   time.Duration
	}{
		{"none", http.Header{}, 0},
		{"seconds", http.Header{"Retry-After": {"17"}}, 17 * time.Second},
		{"milliseconds win", http.Header{"Retry-After": {"17"}, "Retry-After-Ms": {"250"}}, 250 * time.Millisecond},
		{"a date in the past", http.Header{"Retry-After": {"Wed, 21 Oct 2015 07:28:00 GMT"}}, 0},
		{"garbage", http.Header{"Retry-After": {"soon"}}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, RetryAfter(tt.header))
		})
	}
}

func TestClass(t *testing.T) {
	done, cancel := context.WithCancel(t.Context())
	cancel()
	tests := []struct {
		name string
		ctx  context.Context
		err  error
		want provider.ErrorClass
	}{
		{"the caller's context ended", done, context.Canceled, provider.ClassFatal},
		{"an attempt timed out", t.Context(), fmt.Errorf("post: %w", context.DeadlineExceeded), provider.ClassRetryable},
		{"a body cut off", t.Context(), fmt.Errorf("read: %w", io.ErrUnexpectedEOF), provider.ClassRetryable},
		{"a refused connection", t.Context(), &net.OpError{Op: "dial", Err: errors.New("connection refused")}, provider.ClassRetryable},
		{"anything else", t.Context(), errors.New("boom"), provider.ClassFatal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, Class(tt.ctx, tt.err))
		})
	}
}
