package provider

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

type classified struct{ class ErrorClass }

func (e classified) Error() string          { return "classified" }
func (e classified) ErrorClass() ErrorClass { return e.class }

func TestClassOf(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want ErrorClass
	}{
		{"nil", nil, ClassNone},
		{"prompt too long", &PromptTooLongError{Tokens: 2, Limit: 1}, ClassPromptTooLong},
		{"wrapped prompt too long", fmt.Errorf("send: %w", &PromptTooLongError{}), ClassPromptTooLong},
		{"request too large", &RequestTooLargeError{Bytes: 2, Limit: 1}, ClassRequestTooLarge},
		{"an adapter's class wins", fmt.Errorf("send: %w", classified{ClassRetryable}), ClassRetryable},
		{"an adapter's class over a wrapped root error", errors.Join(classified{ClassMediaRejected}, &PromptTooLongError{}), ClassMediaRejected},
		{"anything else", errors.New("boom"), ClassFatal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, ClassOf(tt.err))
		})
	}
}
