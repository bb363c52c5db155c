//go:build unix

package agentctx

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDirFilesNotRegular(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, syscall.Mkfifo(filepath.Join(root, "pipe"), 0o644))
	require.NoError(t, os.Mkdir(filepath.Join(root, "dir"), 0o755))
	for _, name := range []string{"pipe", "dir", "/dev/null"} {
		d := DirFiles{Root: root}
		if filepath.IsAbs(name) {
			d.Root = filepath.Dir(name)
		}
		_, err := d.ReadFile(t.Context(), name)
		assert.ErrorContains(t, err, name+": not a regular file")
	}
}

// A named pipe that takes a file's path after ReadFile looked at it is opened without waiting
// for a writer, and refused: openRegular is the step that opens, here given the pipe directly
// (an attack swapping a pipe in hung one read in 3,001, past any deadline).
func TestDirFilesOpenPipe(t *testing.T) {
	dir := t.TempDir()
	pipe := filepath.Join(dir, "a.go")
	require.NoError(t, syscall.Mkfifo(pipe, 0o644))
	root, err := os.OpenRoot(dir)
	require.NoError(t, err)
	defer root.Close()
	done := make(chan error, 1)
	go func() {
		f, _, err := openRegular(root, "a.go", pipe)
		if f != nil {
			f.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		assert.EqualError(t, err, pipe+": not a regular file")
	case <-time.After(10 * time.Second):
		// A writer ends the blocked open, and with it the goroutine.
		if w, err := os.OpenFile(pipe, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close()
		}
		<-done
		t.Fatal("opening a named pipe waited for a writer")
	}
}
