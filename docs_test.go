package agentctx

import (
	"go/parser"
	"go/token"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// libraryComments returns the comments of the library's Go files (tests left out) by file.
func libraryComments(t *testing.T) map[string][]string {
	t.Helper()
	var files []string
	for _, pattern := range []string{"*.go", "*/*.go", "cmd/*/*.go", "internal/*/*.go", "examples/*/*.go"} {
		m, err := filepath.Glob(pattern)
		require.NoError(t, err)
		files = append(files, m...)
	}
	out := map[string][]string{}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, parser.ParseComments)
		require.NoError(t, err)
		for _, g := range file.Comments {
			out[f] = append(out[f], g.Text())
		}
	}
	require.NotEmpty(t, out)
	return out
}

// TestContractListsCitedRules requires docs/contract.md to list every rule id that Validate
// reports and that the comments cite, as "(2.1)", "(contract 4.2)" or "4.8: …".
func TestContractListsCitedRules(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("docs", "contract.md"))
	require.NoError(t, err)
	listed := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^- \*\*(\d+\.\d+)\*\* `).FindAllStringSubmatch(string(doc), -1) {
		listed[m[1]] = true
	}
	cited := map[string][]string{} // id → where
	src, err := filepath.Glob("validate*.go")
	require.NoError(t, err)
	for _, f := range src {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, m := range regexp.MustCompile(`c\.add\("([^"]*)"`).FindAllStringSubmatch(string(b), -1) {
			cited[m[1]] = append(cited[m[1]], f)
		}
	}
	id := `\d\.\d{1,2}`
	inParens := regexp.MustCompile(`\((?:contract |rule )?(` + id + `(?:, ` + id + `)*)\)`)
	leading := regexp.MustCompile(`(?m)^(` + id + `): `)
	for f, comments := range libraryComments(t) {
		for _, c := range comments {
			for _, m := range inParens.FindAllStringSubmatch(c, -1) {
				for r := range strings.SplitSeq(m[1], ", ") {
					cited[r] = append(cited[r], f)
				}
			}
			for _, m := range leading.FindAllStringSubmatch(c, -1) {
				cited[m[1]] = append(cited[m[1]], f)
			}
		}
	}
	require.NotEmpty(t, cited)
	for _, r := range slices.Sorted(maps.Keys(cited)) {
		assert.True(t, listed[r], "rule %s, cited in %v, is not listed in docs/contract.md", r, slices.Compact(cited[r]))
	}
}

// TestCommentsStayInRepo requires the library's comments to point at nothing outside the
// repository: no relative path out of it, no file of the shared research notes, no source
// file of Claude Code (name Claude Code in prose instead).
func TestCommentsStayInRepo(t *testing.T) {
	outside := regexp.MustCompile(`\.\./|\bshared/|\bresearch/|\w\.tsx?\b|\w\.m?js\b|§`)
	for f, comments := range libraryComments(t) {
		for _, c := range comments {
			for line := range strings.SplitSeq(c, "\n") {
				assert.False(t, outside.MatchString(line), "%s: %q points outside the repository", f, line)
			}
		}
	}
}
