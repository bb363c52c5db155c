package agentctx

import (
	"bytes"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentctx/agentctx/transcript"
	"github.com/stretchr/testify/require"
)

// userLine returns a well-formed user record line (without newline) with the given uuid.
func userLine(uuid string) string {
	return fmt.Sprintf(`{"type":"user","uuid":%q,"parentUuid":null,"sessionId":"s1","message":{"role":"user","content":"hello <b>"}}`, uuid)
}

// splitLines returns the non-blank lines of data (JSON white space trimmed) and their 1-based
// line numbers, the way the transcript.Decoder numbers them.
func splitLines(data []byte) (lines [][]byte, nums []int) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	for i, l := range bytes.Split(data, []byte("\n")) {
		if l = bytes.Trim(l, " \t\r\n"); len(l) > 0 { // JSON white space
			lines = append(lines, l)
			nums = append(nums, i+1)
		}
	}
	return lines, nums
}

// promptAfter returns a user prompt numbered n that no transcript holds, after the last of
// recs.
func promptAfter(recs []transcript.Record, n int) transcript.Record {
	r := transcript.Record{Type: transcript.TypeUser, UUID: fmt.Sprintf("prompt-%d", n), SessionID: "s",
		Message: &transcript.Message{Role: transcript.RoleUser, Content: []transcript.Block{text(fmt.Sprintf("prompt %d", n))}}}
	if len(recs) > 0 {
		r.ParentUUID = recs[len(recs)-1].UUID
	}
	return r
}

// transcriptPaths returns the Claude Code transcripts under testdata, then the corpus
// sessions.
func transcriptPaths(t *testing.T) []string {
	t.Helper()
	var paths []string
	require.NoError(t, filepath.WalkDir("testdata", func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".jsonl") && !strings.Contains(path, "codex") {
			paths = append(paths, path)
		}
		return err
	}))
	return append(paths, corpusPaths(t)...)
}
