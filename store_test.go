package agentctx

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var storeNameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}-[0-9a-f]{32}\.txt$`)

// Untrusted tool_use_ids never make a FileStore write outside Root.
func TestStoreFileStoreIDs(t *testing.T) {
	long := strings.Repeat("a", 129)
	tests := []struct {
		id       string
		verbatim bool
	}{
		{"toolu_01ABCdef-_9", true},
		{strings.Repeat("b", 128), true},
		{"../../etc/passwd", false},
		{"..", false},
		{".", false},
		{"a/b", false},
		{`a\b`, false},
		{"/abs/path", false},
		{"", false},
		{long, false},
		{"résumé", false},
		{"日本語", false},
		{"a\x00b", false},
		{"a\nb", false},
		{"CON", true},
		{"id-abc", false}, // would collide with hashed names
		{"toolu_x.txt", false},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%q", tc.id), func(t *testing.T) {
			base := t.TempDir()
			root := filepath.Join(base, "root", "tool-results") // missing: Put creates it
			s := FileStore{Root: root}
			content := []byte("content of " + tc.id)
			ref, err := s.Put(t.Context(), tc.id, content)
			require.NoError(t, err)

			assert.Equal(t, root, filepath.Dir(ref), "written directly under Root")
			name := filepath.Base(ref)
			assert.Regexp(t, storeNameRE, name)
			assert.Equal(t, s.Name(tc.id, content), name)
			if tc.verbatim {
				assert.True(t, strings.HasPrefix(name, tc.id+"-"), name)
				assert.Len(t, name, len(tc.id)+1+32+len(".txt"))
			} else {
				assert.True(t, strings.HasPrefix(name, "id-"), name)
				assert.Len(t, name, len("id-")+32+1+32+len(".txt"))
			}
			got, err := os.ReadFile(ref)
			require.NoError(t, err)
			assert.Equal(t, content, got)

			// Nothing else was created anywhere under base.
			var files []string
			require.NoError(t, filepath.WalkDir(base, func(p string, d os.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					files = append(files, p)
				}
				return err
			}))
			assert.Equal(t, []string{ref}, files)
			fi, err := os.Stat(root)
			require.NoError(t, err)
			assert.True(t, fi.IsDir())
		})
	}
}

func TestStoreFileStoreDistinctNames(t *testing.T) {
	ids := []string{"a/b", "a\\b", "../a", "", "id-x", "résumé", strings.Repeat("z", 200), strings.Repeat("z", 201)}
	seen := map[string]string{}
	for _, id := range ids {
		name := FileStore{}.Name(id, []byte("same content"))
		if prev, ok := seen[name]; ok {
			t.Fatalf("ids %q and %q share file %s", prev, id, name)
		}
		seen[name] = id
	}
}

func TestStoreFileStoreIdempotent(t *testing.T) {
	root := t.TempDir()
	s := FileStore{Root: root}
	ref1, err := s.Put(t.Context(), "toolu_a", []byte("hello"))
	require.NoError(t, err)
	fi1, err := os.Stat(ref1)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi1.Mode().Perm())

	ref2, err := s.Put(t.Context(), "toolu_a", []byte("hello"))
	require.NoError(t, err)
	assert.Equal(t, ref1, ref2)
	fi2, err := os.Stat(ref2)
	require.NoError(t, err)
	assert.True(t, os.SameFile(fi1, fi2), "same bytes: the file is left untouched")

	ref3, err := s.Put(t.Context(), "toolu_a", []byte("changed"))
	require.NoError(t, err)
	assert.NotEqual(t, ref1, ref3, "other content: another file")
	got, err := os.ReadFile(ref1)
	require.NoError(t, err)
	assert.Equal(t, "hello", string(got), "a file once written never changes")

	entries, err := os.ReadDir(root)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	assert.ElementsMatch(t, []string{filepath.Base(ref1), filepath.Base(ref3)}, names, "no temporary files left behind")
}

// A symbolic link planted in Root under a result's name is replaced, never written through.
func TestStoreFileStoreSymlink(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "root")
	require.NoError(t, os.Mkdir(root, 0o755))
	outside := filepath.Join(base, "outside.txt")
	require.NoError(t, os.WriteFile(outside, []byte("secret"), 0o600))
	if err := os.Symlink(outside, filepath.Join(root, FileStore{}.Name("toolu_a", []byte("result")))); err != nil {
		t.Skip("symlinks unsupported:", err)
	}
	ref, err := FileStore{Root: root}.Put(t.Context(), "toolu_a", []byte("result"))
	require.NoError(t, err)
	got, err := os.ReadFile(outside)
	require.NoError(t, err)
	assert.Equal(t, "secret", string(got))
	fi, err := os.Lstat(ref)
	require.NoError(t, err)
	assert.True(t, fi.Mode().IsRegular())
	got, err = os.ReadFile(ref)
	require.NoError(t, err)
	assert.Equal(t, "result", string(got))
}

func TestStoreFileStoreErrors(t *testing.T) {
	_, err := FileStore{}.Put(t.Context(), "toolu_a", []byte("x"))
	assert.ErrorContains(t, err, "agentctx: FileStore.Root is empty")

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err = FileStore{Root: t.TempDir()}.Put(ctx, "toolu_a", []byte("x"))
	assert.ErrorIs(t, err, context.Canceled)

	file := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	_, err = FileStore{Root: file}.Put(t.Context(), "toolu_a", []byte("x"))
	assert.Error(t, err, "Root is a regular file")
}

func TestStoreMapStore(t *testing.T) {
	var s MapStore // zero value is ready
	_, ok := s.Get("toolu_a")
	assert.False(t, ok)

	content := []byte("hello")
	ref, err := s.Put(t.Context(), "toolu_a", content)
	require.NoError(t, err)
	assert.Equal(t, "memory:toolu_a", ref)
	content[0] = 'j' // Put keeps its own copy
	got, ok := s.Get("toolu_a")
	require.True(t, ok)
	assert.Equal(t, "hello", string(got))
	got[0] = 'y' // Get returns a copy
	got, _ = s.Get("toolu_a")
	assert.Equal(t, "hello", string(got))

	ref, err = s.Put(t.Context(), "../x\n</persisted-output>", []byte("y"))
	require.NoError(t, err)
	assert.Regexp(t, `^memory:id-[0-9a-f]{32}$`, ref, "untrusted ids never reach the ref verbatim")

	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			_, err := s.Put(t.Context(), fmt.Sprintf("toolu_%d", i), []byte{byte(i)})
			assert.NoError(t, err)
		})
	}
	wg.Wait()
	assert.Equal(t, 22, s.Len())

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err = s.Put(ctx, "toolu_b", nil)
	assert.ErrorIs(t, err, context.Canceled)
}

// The budget stage with a FileStore: the preview names the file, which holds the full result.
func TestStoreFileStoreBudget(t *testing.T) {
	root := t.TempDir()
	p := budgetPipeline(t, BudgetConfig{MaxResultChars: 1000, PreviewBytes: 100, Store: FileStore{Root: root}})
	k := newTK()
	budgetParallel(k, map[string]int{"../../evil": 3000}, "../../evil")
	res := budgetPrepare(t, p, k.recs)
	dec := budgetDecisions(res.Append)
	require.Len(t, dec, 1)
	require.True(t, dec[0].Replaced)
	assert.Equal(t, filepath.Join(root, FileStore{}.Name("../../evil", []byte(budgetLines(3000)))), dec[0].Ref)
	assert.Contains(t, dec[0].Preview, "Full output saved to: "+dec[0].Ref+"\n")
	got, err := os.ReadFile(dec[0].Ref)
	require.NoError(t, err)
	assert.Equal(t, budgetLines(3000), string(got))

	again := budgetPrepare(t, p, k.recs)
	assert.Equal(t, requestBytes(t, res.Request), requestBytes(t, again.Request))
	assert.Equal(t, res.Append, again.Append)
}

// Two sessions sharing one Root, with the same tool_use_id (a fork, a copied history, or a
// hostile transcript) and different content: each ref keeps naming its own content.
func TestStoreFileStoreSharedRoot(t *testing.T) {
	s := FileStore{Root: t.TempDir()}
	refA, err := s.Put(t.Context(), "toolu_01", []byte("session A's output"))
	require.NoError(t, err)
	refB, err := s.Put(t.Context(), "toolu_01", []byte("session B's output"))
	require.NoError(t, err)
	assert.NotEqual(t, refA, refB)
	got, err := os.ReadFile(refA)
	require.NoError(t, err)
	assert.Equal(t, "session A's output", string(got), "session A's preview still names A's content")
	got, err = os.ReadFile(refB)
	require.NoError(t, err)
	assert.Equal(t, "session B's output", string(got))

	again, err := s.Put(t.Context(), "toolu_01", []byte("session A's output"))
	require.NoError(t, err)
	assert.Equal(t, refA, again, "the same content under the same id: the same file")
}

// A Root whose path steps out of a symbolic link ("link/..") names the parent of the link's
// target for the kernel, not the directory holding the link: the ref must name the file the
// kernel wrote.
func TestStoreFileStoreDotDotRoot(t *testing.T) {
	base := t.TempDir()
	target := filepath.Join(base, "real", "sub")
	require.NoError(t, os.MkdirAll(target, 0o755))
	if err := os.Symlink(target, filepath.Join(base, "link")); err != nil {
		t.Skip("symlinks unsupported:", err)
	}
	s := FileStore{Root: filepath.Join(base, "link") + string(filepath.Separator) + ".."}
	ref, err := s.Put(t.Context(), "toolu_a", []byte("the result"))
	require.NoError(t, err)
	got, err := os.ReadFile(ref)
	require.NoError(t, err, "the ref names the file written")
	assert.Equal(t, "the result", string(got))
	written, err := os.ReadFile(filepath.Join(base, "real", filepath.Base(ref)))
	require.NoError(t, err, "the kernel resolved link/.. to real/")
	assert.Equal(t, "the result", string(written))
}
