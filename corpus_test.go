package agentctx

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentctx/agentctx/transcript"
)

// corpusDir returns the root of the shared transcript corpus (../shared/corpus, holding
// claude-code/ and codex/), or skips the test when it is absent.
func corpusDir(t testing.TB) string {
	t.Helper()
	dir := filepath.Join("..", "shared", "corpus")
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		t.Skip("../shared/corpus not found; whole-corpus tests skipped (clone without shared/)")
	}
	return dir
}

// corpusFiles returns every *.jsonl file under ../shared/corpus/claude-code, sorted, or skips
// the test when the corpus is absent. Every whole-corpus test walks this list.
func corpusFiles(t testing.TB) []string {
	t.Helper()
	corpusDir(t)
	files := corpusPaths(t)
	if len(files) == 0 {
		t.Skip("no .jsonl files under ../shared/corpus/claude-code; whole-corpus tests skipped")
	}
	return files
}

// corpusPaths returns every *.jsonl file under ../shared/corpus/claude-code, at any depth,
// sorted (under the race detector, one in raceCorpusStride of them); nil when the corpus is
// absent. Tests with a fallback for a missing corpus use it;
// the others use corpusFiles.
func corpusPaths(t testing.TB) []string {
	t.Helper()
	root := filepath.Join("..", "shared", "corpus", "claude-code")
	if fi, err := os.Stat(root); err != nil || !fi.IsDir() {
		return nil
	}
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".jsonl") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("walk %s: %v", root, err)
	}
	slices.Sort(files)
	if raceEnabled {
		// The race detector looks for concurrency bugs, and the corpus tests run on one
		// goroutine at five to ten times the cost: a fixed quarter of the sessions keeps
		// `go test -race` within CI's time, and the plain run walks them all.
		files = slices.DeleteFunc(slices.Clone(files), func(f string) bool { return slices.Index(files, f)%raceCorpusStride != 0 })
	}
	return files
}

// raceCorpusStride is the sampling of the corpus under the race detector: one file in so many.
const raceCorpusStride = 4

// corpusSession is one corpus file and its records.
type corpusSession struct {
	path    string
	records []transcript.Record
}

// corpusSessions reads every file of corpusPaths (strictly: the corpus has no bad line), in
// order; nil when the corpus is absent.
func corpusSessions(t testing.TB) []corpusSession {
	t.Helper()
	var out []corpusSession
	for _, f := range corpusPaths(t) {
		tr, err := transcript.ReadFile(f, transcript.ReadOptions{Strict: true})
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out = append(out, corpusSession{f, tr.Records})
	}
	return out
}
