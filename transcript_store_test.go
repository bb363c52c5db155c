package agentctx_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentctx/agentctx/internal/storetest"
	"github.com/agentctx/agentctx/transcript"
)

func TestDirStoreContract(t *testing.T) {
	storetest.Run(t, transcript.DirStore{Root: t.TempDir()}, storetest.Options{})
}

// TestDirStoreBytes checks that a DirStore writes exactly the bytes an Appender writes, and
// that Load reads the file as ReadFile does.
func TestDirStoreBytes(t *testing.T) {
	ctx := t.Context()
	root := t.TempDir()
	store := transcript.DirStore{Root: root}
	recs := []transcript.Record{storetest.Record("s", "a", "one"), storetest.Record("s", "b", "two <&> \u2028"), storetest.Record("s", "c", "three")}
	end, err := store.Append(ctx, "s", 0, recs[:2]...)
	require.NoError(t, err)
	_, err = store.Append(ctx, "s", end, recs[2])
	require.NoError(t, err)

	plain := filepath.Join(t.TempDir(), "plain.jsonl")
	require.NoError(t, transcript.AppendFile(plain, transcript.AppendOptions{}, recs[:2]...))
	require.NoError(t, transcript.AppendFile(plain, transcript.AppendOptions{}, recs[2]))
	want, err := os.ReadFile(plain)
	require.NoError(t, err)
	got, err := os.ReadFile(filepath.Join(root, "s.jsonl"))
	require.NoError(t, err)
	assert.Equal(t, string(want), string(got))

	tr, err := store.Load(ctx, "s", transcript.ReadOptions{})
	require.NoError(t, err)
	ref, err := transcript.ReadFile(plain, transcript.ReadOptions{})
	require.NoError(t, err)
	assert.Equal(t, ref.Records, tr.Records)
	assert.Equal(t, 3, tr.End)
}

// TestDirStorePath checks that every session id names a file directly under Root.
func TestDirStorePath(t *testing.T) {
	store := transcript.DirStore{Root: "/sessions"}
	tests := []struct{ id, want string }{
		{"0b5f3c2e-1d2a-4c55-9d4e-2f1a3b4c5d6e", "0b5f3c2e-1d2a-4c55-9d4e-2f1a3b4c5d6e.jsonl"},
		{"../../etc/passwd", "id-"},
		{"a/b", "id-"},
		{"id-abc", "id-"},
		{strings.Repeat("x", 129), "id-"},
		{"", "id-"},
	}
	for _, tt := range tests {
		got := store.Path(tt.id)
		assert.Equal(t, "/sessions", filepath.Dir(got), "id %q", tt.id)
		assert.True(t, strings.HasPrefix(filepath.Base(got), tt.want), "id %q: %s", tt.id, got)
	}
}

// TestTranscriptEnd checks that End counts lines as positioned appends do: blank, bad and
// torn lines included, a last line without a newline too.
func TestTranscriptEnd(t *testing.T) {
	rec := `{"type":"user","uuid":"a","message":{"role":"user","content":"hi"}}`
	tests := []struct {
		name, data string
		end        int
	}{
		{"empty", "", 0},
		{"one line", rec + "\n", 1},
		{"no final newline", rec, 1},
		{"blank lines", "\n" + rec + "\n\n", 3},
		{"crlf", rec + "\r\n" + rec + "\r\n", 2},
		{"torn last line", rec + "\n" + `{"type":"us`, 2},
		{"bad line", "not json\n" + rec + "\n", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr, err := transcript.Read(strings.NewReader(tt.data), "t.jsonl", transcript.ReadOptions{})
			require.NoError(t, err)
			assert.Equal(t, tt.end, tr.End)
		})
	}
}

// TestAppendAfterTorn checks a positioned append on a file whose last line is torn: the
// position counts the torn line, the batch starts on a line of its own, and a retry finds it.
func TestAppendAfterTorn(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	torn := `{"type":"user","uuid":"a","message":{"role":"user","content":"hi"}}` + "\n" + `{"type":"assis`
	require.NoError(t, os.WriteFile(path, []byte(torn), 0o644))
	tr, err := transcript.ReadFile(path, transcript.ReadOptions{})
	require.NoError(t, err)
	require.Equal(t, 2, tr.End)

	a, err := transcript.OpenAppender(path, transcript.AppendOptions{})
	require.NoError(t, err)
	defer a.Close()
	r := storetest.Record("s", "b", "next")
	_, err = a.AppendAfter(1, r)
	assert.ErrorIs(t, err, transcript.ErrConflict)
	end, err := a.AppendAfter(2, r)
	require.NoError(t, err)
	assert.Equal(t, 3, end)
	end, err = a.AppendAfter(2, r)
	require.NoError(t, err, "a retry")
	assert.Equal(t, 3, end)

	data, err := os.ReadFile(path)
	require.NoError(t, err)
	line, err := r.MarshalLine()
	require.NoError(t, err)
	assert.Equal(t, torn+"\n"+string(line)+"\n", string(data))
	assert.Equal(t, 1, bytes.Count(data, line))
	tr, err = transcript.ReadFile(path, transcript.ReadOptions{})
	require.NoError(t, err)
	assert.Equal(t, 3, tr.End)
	assert.Len(t, tr.Problems, 1, "the torn line, now followed by another")
}
