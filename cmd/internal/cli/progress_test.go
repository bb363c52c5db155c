package cli

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestProgressLine: the line is written for the first turn and the last, not for a turn
// within progressEvery of the previous write, keeps no tail of a longer earlier line, and is
// erased at the end; a buffer, a file and a pipe get none.
func TestProgressLine(t *testing.T) {
	var b bytes.Buffer
	p := &progressLine{w: &b}
	p.set(1, 1000)
	p.set(2, 1000)
	assert.Equal(t, "\rsimulate: turn 1 of 1000", b.String(), "the second turn comes too soon")
	p.last = time.Now().Add(-progressEvery)
	p.set(9, 10)
	assert.Equal(t, "\rsimulate: turn 1 of 1000\rsimulate: turn 9 of 10  ", b.String(), "a shorter line covers the longer one")
	p.set(10, 10)
	assert.Contains(t, b.String(), "\rsimulate: turn 10 of 10 ", "the last turn is always shown")
	b.Reset()
	p.clear()
	assert.Equal(t, "\r"+strings.Repeat(" ", len("simulate: turn 1 of 1000"))+"\r", b.String())

	file, err := os.Create(filepath.Join(t.TempDir(), "progress"))
	require.NoError(t, err)
	defer file.Close()
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	defer w.Close()
	for name, out := range map[string]io.Writer{"buffer": &b, "file": file, "pipe": w} {
		assert.Nil(t, newProgress(out), name)
	}
}
