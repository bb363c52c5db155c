package agentctx

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentctx/agentctx/summarize"

	"github.com/agentctx/agentctx/transcript"

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

// filesTK is a session in /repo that overflows a 12,000-token window after reading files
// under the given spellings, in one response, then again (in the last exchange, which a
// compaction keeps) under the spellings of tail.
func filesTK(paths, tail []string) *tk {
	k := newTK()
	u := k.user("build the parser " + strings.Repeat("with care ", 300))
	u.Cwd = "/repo"
	r := k.next(transcript.TypeAssistant)
	r.Message = &transcript.Message{ID: "msg_reads", Type: "message", Role: transcript.RoleAssistant, Model: "claude-sonnet-4-5", Usage: &transcript.Usage{InputTokens: 10, OutputTokens: 5}}
	res := k.next(transcript.TypeUser)
	res.Message = &transcript.Message{Role: transcript.RoleUser}
	for i, path := range paths {
		id := fmt.Sprintf("r%d", i)
		r.Message.Content = append(r.Message.Content, &transcript.ToolUse{ID: id, Name: "Read", Input: []byte(`{"file_path":"` + path + `"}`)})
		res.Message.Content = append(res.Message.Content, result(id, "package x"))
	}
	k.add(r)
	k.add(res)
	a := k.assistant(text("done " + strings.Repeat("reading the files ", 300)))
	a.Message.Usage = &transcript.Usage{InputTokens: 9_000, OutputTokens: 1_500}
	for i, path := range tail {
		id := fmt.Sprintf("t%d", i)
		ta := k.assistant(&transcript.ToolUse{ID: id, Name: "Read", Input: []byte(`{"file_path":"` + path + `"}`)})
		ta.Message.Usage = &transcript.Usage{InputTokens: 10_500 + 100*i, OutputTokens: 20}
		k.results(result(id, "package x"))
	}
	k.user("now the error recovery, please")
	return k
}

// Rehydration reads a file once whatever the spellings of its path in the conversation —
// absolute, "./"-relative, relative to the session's working directory, with ".." — under the
// spelling of its latest mention, and a read of the file in the kept tail under another
// spelling counts as the file read there.
func TestRehydrateFileSpellings(t *testing.T) {
	var mu sync.Mutex
	var reads []string
	files := FileSourceFunc(func(_ context.Context, path string) ([]byte, error) {
		mu.Lock()
		defer mu.Unlock()
		reads = append(reads, path)
		return []byte("package x // " + path + "\n"), nil
	})
	compact := func(k *tk) *CompactReport {
		t.Helper()
		reads = nil
		p := newTestPipeline(t, Config{ContextWindow: 12_000, Compact: CompactConfig{Summarizer: summarize.Extractive{},
			Rehydrate: RehydrateConfig{Files: files}, Tail: TailConfig{MinTokens: 10, MinTextMessages: 1, MaxTokens: 1000}}}, k.at(time.Second))
		res, err := p.Prepare(t.Context(), Input{Records: k.recs})
		require.NoError(t, err)
		c := res.Report.Compaction
		require.NotNil(t, c)
		require.Equal(t, CompactCompacted, c.Outcome, c.Reason)
		return c
	}

	c := compact(filesTK([]string{"/repo/a.go", "./a.go", "b.go", "a.go", "/repo/x/../a.go"}, nil))
	assert.Equal(t, []string{"file /repo/x/../a.go", "file b.go"}, c.Rehydrated)
	assert.Equal(t, []string{"/repo/x/../a.go", "b.go"}, reads, "one read a file")

	c = compact(filesTK([]string{"/repo/a.go", "/repo/b.go"}, []string{"./a.go"}))
	assert.Equal(t, []string{"file /repo/b.go"}, c.Rehydrated, "a.go is read in the kept tail")
	assert.Equal(t, []string{"/repo/b.go"}, reads)

	// After a compaction re-injected /repo/a.go, an edit of ./a.go is its latest mention.
	k := filesTK([]string{"/repo/a.go"}, nil)
	p := newTestPipeline(t, Config{ContextWindow: 12_000, Compact: CompactConfig{Summarizer: summarize.Extractive{},
		Rehydrate: RehydrateConfig{Files: files}, Tail: TailConfig{Disable: true}}}, k.at(time.Second))
	res, err := p.Prepare(t.Context(), Input{Records: k.recs})
	require.NoError(t, err)
	require.Equal(t, []string{"file /repo/a.go"}, res.Report.Compaction.Rehydrated)
	k.recs, k.last = append(k.recs, res.Append...), res.Leaf
	k.assistant(&transcript.ToolUse{ID: "e1", Name: "Edit", Input: []byte(`{"file_path":"./a.go","old_string":"x","new_string":"y"}`)})
	k.results(result("e1", "ok"))
	k.user("go on")
	reads = nil
	res, err = p.Compact(t.Context(), Input{Records: k.recs}, CompactOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{"file ./a.go"}, res.Report.Compaction.Rehydrated)
	assert.Equal(t, []string{"./a.go"}, reads)
}
