package tiktoken_test

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/testkit"
	"github.com/agentctx/agentctx/tiktoken"
	"github.com/agentctx/agentctx/transcript"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The tests of this file count the model-visible texts of real and generated sessions, which
// they read with the root package's record model: they are the package's external tests, so
// that the root, which imports the package, can be imported.

// corpusRoot is the shared corpus's Claude Code sessions, beside the repository.
const corpusRoot = "../../shared/corpus/claude-code"

// corpusPaths returns every *.jsonl file under corpusRoot, at any depth, sorted (under the race
// detector, one in raceCorpusStride of them); nil when the corpus is absent.
func corpusPaths(tb testing.TB) []string {
	tb.Helper()
	if fi, err := os.Stat(corpusRoot); err != nil || !fi.IsDir() {
		return nil
	}
	var files []string
	err := filepath.WalkDir(corpusRoot, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".jsonl") {
			files = append(files, path)
		}
		return err
	})
	require.NoError(tb, err)
	slices.Sort(files)
	if raceEnabled {
		// The race detector looks for concurrency bugs, and the corpus tests run on one
		// goroutine at five to ten times the cost: a fixed quarter of the sessions is enough.
		var sample []string
		for i, f := range files {
			if i%raceCorpusStride == 0 {
				sample = append(sample, f)
			}
		}
		files = sample
	}
	return files
}

// raceCorpusStride is the sampling of the corpus under the race detector: one file in so many.
const raceCorpusStride = 4

// corpusFiles is corpusPaths for the tests that need the corpus: it skips the test when the
// corpus is absent.
func corpusFiles(tb testing.TB) []string {
	tb.Helper()
	files := corpusPaths(tb)
	if len(files) == 0 {
		tb.Skipf("no .jsonl files under %s; whole-corpus tests skipped", corpusRoot)
	}
	return files
}

// corpusTexts returns model-visible texts of the Claude Code corpus (corpusRoot), or this
// package's Go source files when the corpus is absent. At most limit bytes are returned.
func corpusTexts(tb testing.TB, limit int) (texts []string, source string) {
	tb.Helper()
	files := corpusPaths(tb)
	total := 0
	add := func(s string) {
		if s != "" && total < limit {
			texts = append(texts, s)
			total += len(s)
		}
	}
	sessionTexts(tb, files, add)
	if len(texts) > 0 {
		return texts, "corpus"
	}
	matches, err := filepath.Glob("*.go")
	require.NoError(tb, err)
	for _, m := range matches {
		data, err := os.ReadFile(m)
		require.NoError(tb, err)
		add(string(data))
	}
	return texts, "go source"
}

// sessionTexts calls add with the texts of every message of the session files, in order (see
// walkTexts).
func sessionTexts(tb testing.TB, files []string, add func(string)) {
	tb.Helper()
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(tb, err)
		for line := range strings.Lines(string(data)) {
			var r transcript.Record
			if json.Unmarshal([]byte(line), &r) != nil || r.Message == nil {
				continue
			}
			for _, b := range r.Message.Content {
				walkTexts(b, add)
			}
		}
	}
}

// walkTexts calls add with the texts of b the model reads: text, thinking, a tool's input
// and, inside a tool result, the same of its blocks.
func walkTexts(b transcript.Block, add func(string)) {
	switch b := b.(type) {
	case *transcript.Text:
		add(b.Text)
	case *transcript.Thinking:
		add(b.Thinking)
	case *transcript.ToolUse:
		add(string(b.Input))
	case *transcript.ToolResult:
		for _, c := range b.Content {
			walkTexts(c, add)
		}
	}
}

// TestCountAccuracy compares the counts with tiktoken-go's on real text: the corpus, or this
// package's source files without it.
func TestCountAccuracy(t *testing.T) {
	limit := 512 << 10
	if testing.Short() {
		limit = 128 << 10
	}
	texts, source := corpusTexts(t, limit)
	require.NotEmpty(t, texts)
	for _, enc := range tiktoken.TestEncodings(t) {
		t.Run(enc.Name(), func(t *testing.T) {
			t.Parallel()
			countAccuracy(t, enc, texts, source)
		})
	}
}

func countAccuracy(t *testing.T, enc *tiktoken.Encoding, texts []string, source string) {
	got, want, size, differ := 0, 0, 0, 0
	for _, s := range texts {
		a, b := enc.CountTokens(s), tiktoken.CountReference(enc, t, s)
		got += a
		want += b
		size += len(s)
		if a != b {
			differ++
		}
	}
	t.Logf("%s on %s: %d texts, %d bytes, tiktoken-go %d tokens, CountTokens %d, %d texts differ",
		enc.Name(), source, len(texts), size, want, got, differ)
	assert.Zero(t, differ, "texts whose count differs from tiktoken-go's")
}

// TestTokenCountCorpusExact counts every text block, thinking block, tool input and tool result
// of every corpus session both ways, with both encodings.
func TestTokenCountCorpusExact(t *testing.T) {
	files := corpusFiles(t)
	var texts []string
	sessionTexts(t, files, func(s string) {
		if s != "" {
			texts = append(texts, s)
		}
	})
	if testing.Short() {
		texts = texts[:min(len(texts), 2000)]
	}
	size := 0
	for _, s := range texts {
		size += len(s)
	}
	for _, enc := range tiktoken.TestEncodings(t) {
		t.Run(enc.Name(), func(t *testing.T) {
			t.Parallel()
			tokens, differ := compareReference(t, enc, texts)
			t.Logf("%s: %d files, %d texts, %d bytes, %d tokens compared; %d texts differ",
				enc.Name(), len(files), len(texts), size, tokens, differ)
		})
	}
}

// TestTokenCountCorpusFilesExact counts every line of every file of the shared corpus as it is
// stored (Claude Code sessions, Codex rollouts, notes: escaped JSON, long lines) with both
// encodings and tiktoken-go; in -short mode and under the race detector, the first 50 lines of
// each file.
func TestTokenCountCorpusFilesExact(t *testing.T) {
	root := filepath.Dir(corpusRoot)
	if fi, err := os.Stat(root); err != nil || !fi.IsDir() {
		t.Skipf("%s not found; whole-corpus tests skipped", root)
	}
	var lines []string
	size := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		n := 0
		for line := range strings.Lines(string(data)) {
			if n++; (testing.Short() || raceEnabled) && n > 50 {
				break
			}
			lines = append(lines, line)
			size += len(line)
		}
		return nil
	})
	require.NoError(t, err)
	require.NotEmpty(t, lines)
	for _, enc := range tiktoken.TestEncodings(t) {
		t.Run(enc.Name(), func(t *testing.T) {
			t.Parallel()
			tokens, differ := compareReference(t, enc, lines)
			t.Logf("%s: %d lines, %d bytes, %d tokens compared; %d lines differ", enc.Name(), len(lines), size, tokens, differ)
		})
	}
}

// TestTokenTiktokenConcurrent counts the same texts on eight goroutines at once with each
// encoding: every count is the one counted alone.
func TestTokenTiktokenConcurrent(t *testing.T) {
	all, _ := corpusTexts(t, 256<<10)
	var texts []string
	for _, s := range all {
		if len(s) <= 2048 && len(texts) < 64 {
			texts = append(texts, s)
		}
	}
	for _, enc := range tiktoken.TestEncodings(t) {
		want := make([]int, len(texts))
		for i, s := range texts {
			want[i] = enc.CountTokens(s)
		}
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				for i, s := range texts {
					assert.Equal(t, want[i], enc.CountTokens(s), enc.Name())
				}
			})
		}
		wg.Wait()
	}
}

// BenchmarkCount measures counting throughput on the real transcript mix, chunked and unsplit,
// beside the root package's bytes/3 estimate.
func BenchmarkCount(b *testing.B) {
	corpusFiles(b)
	texts, _ := corpusTexts(b, 3<<20)
	for _, enc := range tiktoken.TestEncodings(b) {
		b.Run(enc.Name()+"/split", func(b *testing.B) { benchCount(b, texts, enc.CountTokens) })
		b.Run(enc.Name()+"/unsplit", func(b *testing.B) {
			benchCount(b, texts, func(s string) int { return tiktoken.CountReference(enc, b, s) })
		})
	}
	b.Run("estimate", func(b *testing.B) { benchCount(b, texts, agentctx.EstimateTokens) })
}

// benchCount counts texts with count on every iteration, reporting the bytes counted and the
// tokens/op.
func benchCount(b *testing.B, texts []string, count func(string) int) {
	size := 0
	for _, s := range texts {
		size += len(s)
	}
	b.ReportAllocs()
	b.SetBytes(int64(size))
	tokens := 0
	for b.Loop() {
		tokens = 0
		for _, s := range texts {
			tokens += count(s)
		}
	}
	b.ReportMetric(float64(tokens), "tokens/op")
}

// BenchmarkTokenCount compares the counter with tiktoken-go (the reference, which CountTokens
// ran before) on the texts of the generated 2,000-turn session and on a 3 MB corpus mix, for
// both encodings. Both give the same tokens/op.
func BenchmarkTokenCount(b *testing.B) {
	var generated []string
	for _, r := range testkit.Generate(2000, testkit.Options{Seed: 1}) {
		if r.Message == nil {
			continue
		}
		for _, bl := range r.Message.Content {
			walkTexts(bl, func(s string) {
				if s != "" {
					generated = append(generated, s)
				}
			})
		}
	}
	sets := []struct {
		name  string
		texts []string
	}{{"generated", generated}}
	if texts, source := corpusTexts(b, 3<<20); source == "corpus" {
		sets = append(sets, struct {
			name  string
			texts []string
		}{"corpus", texts})
	}
	for _, set := range sets {
		for _, enc := range tiktoken.TestEncodings(b) {
			b.Run(set.name+"/"+enc.Name()+"/new", func(b *testing.B) { benchCount(b, set.texts, enc.CountTokens) })
			b.Run(set.name+"/"+enc.Name()+"/reference", func(b *testing.B) {
				benchCount(b, set.texts, func(s string) int { return tiktoken.CountReference(enc, b, s) })
			})
		}
	}
}

// compareReference counts each text with enc and with tiktoken-go, reports the first five that
// differ as errors, and returns the tokens compared and the number of texts that differ.
func compareReference(t *testing.T, enc *tiktoken.Encoding, texts []string) (tokens, differ int) {
	t.Helper()
	for _, s := range texts {
		got, want := enc.CountTokens(s), tiktoken.CountReference(enc, t, s)
		tokens += want
		if got != want {
			differ++
			if differ <= 5 {
				t.Errorf("%s: %d tokens, tiktoken-go %d, on %q", enc.Name(), got, want, s[:min(len(s), 200)])
			}
		}
	}
	return tokens, differ
}
