package providererr

import (
	"errors"
	"fmt"
	"testing"

	"github.com/agentctx/agentctx/provider"
	"github.com/stretchr/testify/assert"
)

func TestDescription(t *testing.T) {
	for _, tt := range []struct {
		name string
		d    Description
		want string
	}{
		{"class only", Description{Adapter: "agentctx/openai", Class: provider.ClassFatal}, "agentctx/openai: fatal"},
		{"transport failure", Description{Adapter: "agentctx/anthropic", Class: provider.ClassRetryable, Message: "dial tcp: connection refused"},
			"agentctx/anthropic: retryable: dial tcp: connection refused"},
		{"every part", Description{Adapter: "agentctx/anthropic", Class: provider.ClassRetryable, StatusCode: 529, Kind: "overloaded_error",
			Message: "Overloaded", RequestID: "req_1"}, "agentctx/anthropic: retryable: 529 overloaded_error: Overloaded (request req_1)"},
		{"kind without status", Description{Adapter: "agentctx/openai", Class: provider.ClassInvalidRequest, Kind: "invalid_prompt", Message: "no"},
			"agentctx/openai: invalid_request invalid_prompt: no"},
		{"request id alone", Description{Adapter: "agentctx/anthropic", Class: provider.ClassFatal, RequestID: "req_2"}, "agentctx/anthropic: fatal (request req_2)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.d.String())
		})
	}
}

func TestUnwrap(t *testing.T) {
	base := errors.New("base")
	tooLong := &provider.PromptTooLongError{Tokens: 10, Limit: 5}
	media := &provider.MediaRejectedError{Message: "image"}
	for _, tt := range []struct {
		name    string
		err     error
		tooLong *provider.PromptTooLongError
		media   *provider.MediaRejectedError
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
		class  provider.ErrorClass
		target error
		want   bool
	}{
		{provider.ClassRequestTooLarge, provider.ErrRequestTooLarge, true},
		{provider.ClassRequestTooLarge, fmt.Errorf("wrapped: %w", provider.ErrRequestTooLarge), false},
		{provider.ClassPromptTooLong, provider.ErrRequestTooLarge, false},
		{provider.ClassRequestTooLarge, errors.New("other"), false},
	} {
		assert.Equal(t, tt.want, IsRequestTooLarge(tt.class, tt.target), "%s %v", tt.class, tt.target)
	}
}
