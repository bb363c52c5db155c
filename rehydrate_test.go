package agentctx

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// readerFunc adapts a function to an io.Reader.
type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }

// DirFiles reads a file up to its bound, and stops at the context's end between reads.
func TestReadLimited(t *testing.T) {
	got, err := readLimited(t.Context(), strings.NewReader("package a\n"), 10, maxRehydrateRead)
	require.NoError(t, err)
	assert.Equal(t, "package a\n", string(got))
	got, err = readLimited(t.Context(), strings.NewReader("package a\n"), 0, 7)
	require.NoError(t, err)
	assert.Equal(t, "package", string(got), "cut at the bound")
	endless := readerFunc(func(p []byte) (int, error) { return len(p), nil })
	got, err = readLimited(t.Context(), endless, 1<<40, 3<<20)
	require.NoError(t, err)
	assert.Len(t, got, 3<<20, "a file that grows as it is read")

	ctx, cancel := context.WithCancel(t.Context())
	reads := 0
	canceling := readerFunc(func(p []byte) (int, error) {
		reads++
		cancel()
		return min(len(p), 4096), nil
	})
	_, err = readLimited(ctx, canceling, 0, maxRehydrateRead)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, 1, reads)
}
