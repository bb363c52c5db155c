package agentctx

import (
	"context"

	"github.com/agentctx/agentctx/provider"
	"github.com/agentctx/agentctx/transcript"
)

// The internal tests' helpers that recovery_session_test.go uses: an external test (package
// agentctx_test), since the session package it drives imports this one.
var (
	RecoverNow      = recoverNow
	Filler          = filler
	RecoverPipeline = recoverPipeline
	WindowPipeline  = windowPipeline
	PTLError        = ptlError
	RoundTrip       = roundTrip
	RequestBytes    = requestBytes
	EncodeRecords   = encodeRecords
)

// ImageSpec is imageSpec for the external tests.
type ImageSpec = imageSpec

// Block is imageSpec's block.
func (s imageSpec) Block() *transcript.Image { return s.block() }

// NewProviderError returns an adapter's error of class whose tree holds causes.
func NewProviderError(class provider.ErrorClass, causes ...error) error {
	return &providerError{class: class, tree: causes}
}

// NewCancelAfter returns a context cancelled on its n-th Err call (see cancelAfter).
func NewCancelAfter(n int64) context.Context { return &cancelAfter{n: n, done: make(chan struct{})} }
