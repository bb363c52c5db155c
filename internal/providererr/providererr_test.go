package providererr

import (
	"errors"
	"fmt"
	"testing"

	"github.com/agentctx/agentctx"
	"github.com/stretchr/testify/assert"
)

func TestDescription(t *testing.T) {
	for _, tt := range []struct {
		name string
		d    Description
		want string
	}{
		{"class only", Description{Adapter: "agentctx/openai", Class: agentctx.ClassFatal}, "agentctx/openai: fatal"},
		{"transport failure", Description{Adapter: "agentctx/anthropic", Class: agentctx.ClassRetryable, Message: "dial tcp: connection refused"},
			"agentctx/anthropic: retryable: dial tcp: connection refused"},
		{"every part", Description{Adapter: "agentctx/anthropic", Class: agentctx.ClassRetryable, StatusCode: 529, Kind: "overloaded_error",
			Message: "Overloaded", RequestID: "req_1"}, "agentctx/anthropic: retryable: 529 overloaded_error: Overloaded (request req_1)"},
		{"kind without status", Description{Adapter: "agentctx/openai", Class: agentctx.ClassInvalidRequest, Kind: "invalid_prompt", Message: "no"},
			"agentctx/openai: invalid_request invalid_prompt: no"},
		{"request id alone", Description{Adapter: "agentctx/anthropic", Class: agentctx.ClassFatal, RequestID: "req_2"}, "agentctx/anthropic: fatal (request req_2)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.d.String())
		})
	}
}

func TestUnwrap(t *testing.T) {
	base := errors.New("base")
	tooLong := &agentctx.PromptTooLongError{Tokens: 10, Limit: 5}
	media := &agentctx.MediaRejectedError{Message: "image"}
	for _, tt := range []struct {
		name    string
		err     error
		tooLong *agentctx.PromptTooLongError
		media   *agentctx.MediaRejectedError
		want    []error
	}{
		{"nothing", nil, nil, nil, nil},
		{"the error", base, nil, nil, []error{base}},
		{"the figures after the error", base, tooLong, nil, []error{base, tooLong}},
		{"the media without an error", nil, nil, media, []error{media}},
		{"all three in order", base, tooLong, media, []error{base, tooLong, media}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, Unwrap(tt.err, tt.tooLong, tt.media))
		})
	}
}

func TestIsRequestTooLarge(t *testing.T) {
	for _, tt := range []struct {
		class  agentctx.ErrorClass
		target error
		want   bool
	}{
		{agentctx.ClassRequestTooLarge, agentctx.ErrRequestTooLarge, true},
		{agentctx.ClassRequestTooLarge, fmt.Errorf("wrapped: %w", agentctx.ErrRequestTooLarge), false},
		{agentctx.ClassPromptTooLong, agentctx.ErrRequestTooLarge, false},
		{agentctx.ClassRequestTooLarge, errors.New("other"), false},
	} {
		assert.Equal(t, tt.want, IsRequestTooLarge(tt.class, tt.target), "%s %v", tt.class, tt.target)
	}
}
