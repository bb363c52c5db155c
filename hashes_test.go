package agentctx

import (
	"crypto/sha256"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentctx/agentctx/summarize"

	"github.com/agentctx/agentctx/transcript"

	"github.com/stretchr/testify/require"
)

var hashList = flag.String("hashes", "", "TestRequestHashes: write the hash list of every corpus request to this `file`")

// TestRequestHashes writes, with -hashes=FILE, one line per corpus session and window: the
// SHA-256 of the request body Prepare builds with the extractive summarizer, at the model's
// window and at 40,000 tokens (or the error it returns). A change that must keep the requests'
// bytes is checked by diffing the list before and after it; the note of such a change quotes
// the diff. Without the flag it does nothing.
func TestRequestHashes(t *testing.T) {
	if *hashList == "" {
		t.Skip("pass -hashes=FILE to write the hash list")
	}
	files := corpusFiles(t)
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	var b strings.Builder
	for _, f := range files {
		tr, err := transcript.ReadFile(f, transcript.ReadOptions{})
		require.NoError(t, err)
		for _, window := range []int{0, 40_000} {
			p, err := New(Config{Model: sessionModel(tr.Records), ContextWindow: window, Tokens: corpusCounter,
				Budget: BudgetConfig{Store: &MapStore{}}, Compact: CompactConfig{Summarizer: summarize.Extractive{}},
				Now: func() time.Time { return now }})
			require.NoError(t, err)
			res, err := p.Prepare(t.Context(), Input{Records: tr.Records})
			rel, _ := filepath.Rel(filepath.Join("..", "shared", "corpus"), f)
			switch {
			case errors.Is(err, ErrNoMessages):
				fmt.Fprintf(&b, "%s@%d no messages\n", rel, window)
			case err != nil:
				fmt.Fprintf(&b, "%s@%d error %s\n", rel, window, err)
			default:
				fmt.Fprintf(&b, "%s@%d %x\n", rel, window, sha256.Sum256(requestBytes(t, res.Request)))
			}
		}
	}
	require.NoError(t, os.WriteFile(*hashList, []byte(b.String()), 0o644))
}
