package agentctx

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// goPackageDirs returns every directory of the repository that holds a Go package (test files
// aside), relative to the root, "." for the root; testdata and hidden directories left out.
func goPackageDirs(t *testing.T) []string {
	t.Helper()
	var dirs []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != "." && (d.Name() == "testdata" || d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") && !slices.Contains(dirs, filepath.Dir(path)) {
			dirs = append(dirs, filepath.Dir(path))
		}
		return nil
	})
	require.NoError(t, err)
	slices.Sort(dirs)
	return dirs
}

// TestReadmeLayout checks README's Layout section against the tree: every package is named
// (a package under one named is its part: a command's internals, a test kit's programs; an
// internal package by its name in the internal/ entry), every directory an entry names holds
// a package, and every file it names exists.
func TestReadmeLayout(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	_, layout, ok := strings.Cut(string(readme), "\n## Layout\n")
	require.True(t, ok, "README has a Layout section")
	layout, _, _ = strings.Cut(layout, "\n## ")
	var entries []string // the text of each top-level "- " entry
	for line := range strings.Lines(layout) {
		switch {
		case strings.HasPrefix(line, "- "):
			entries = append(entries, line)
		case strings.HasPrefix(line, "  ") && len(entries) > 0:
			entries[len(entries)-1] += line
		}
	}
	require.NotEmpty(t, entries)
	quoted := regexp.MustCompile("`([^`]+)`")
	named := map[string]bool{} // directories the entries name first, before their colon
	internal := ""
	for _, e := range entries {
		head, _, _ := strings.Cut(e, ":")
		for _, m := range quoted.FindAllStringSubmatch(head, -1) {
			dir := strings.TrimSuffix(m[1], "/")
			if strings.HasPrefix(head, "- root package") {
				dir = "."
			}
			if dir == "internal" {
				internal = e
			}
			_, err := os.Stat(dir)
			assert.NoError(t, err, "README Layout names %q, which is not in the tree", m[1])
			named[dir] = true
		}
		for _, m := range quoted.FindAllStringSubmatch(e, -1) {
			if strings.HasSuffix(m[1], ".go") && !strings.Contains(m[1], " ") {
				files, err := filepath.Glob(m[1])
				require.NoError(t, err)
				assert.NotEmpty(t, files, "README Layout names %s, which matches no file", m[1])
			}
		}
	}
	for _, dir := range goPackageDirs(t) {
		covered := named[dir]
		for d := dir; !covered && d != "." && d != "/"; d = filepath.Dir(d) {
			covered = named[d] && d != "."
		}
		if !covered && strings.HasPrefix(dir, "internal/") {
			name := strings.SplitN(strings.TrimPrefix(dir, "internal/"), "/", 2)[0]
			covered = strings.Contains(internal, "`"+name+"`")
		}
		assert.True(t, covered, "README Layout does not name package %s", dir)
	}
}
