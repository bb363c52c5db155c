package agentctx

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
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
// the test when the corpus is absent.
func corpusFiles(t testing.TB) []string {
	t.Helper()
	root := filepath.Join(corpusDir(t), "claude-code")
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
	if len(files) == 0 {
		t.Skipf("no .jsonl files under %s; whole-corpus tests skipped", root)
	}
	slices.Sort(files)
	return files
}
