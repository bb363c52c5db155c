package agentctx

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/agentctx/agentctx/internal/fsname"
)

// ResultStore keeps the full content of tool results the budget stage replaced by a preview
// (see [BudgetConfig]). Prepare calls Put while it builds a turn, so an implementation must be
// safe for concurrent use when one [Pipeline] serves several conversations, and idempotent:
// preparing the same turn twice puts the same content under the same id twice and must get
// the same ref back, since the ref is part of the frozen preview.
type ResultStore interface {
	// Put stores content under toolUseID (untrusted input: it comes from the transcript) and
	// returns a reference the model can use to read it back, such as a file path. Put must
	// not retain content after it returns.
	Put(ctx context.Context, toolUseID string, content []byte) (ref string, err error)
}

// FileStore is a [ResultStore] that writes each result to its own file under Root, the way
// Claude Code keeps large tool results in <session>/tool-results/. The caller chooses Root
// (typically one directory per session, though several sessions may share one); use an
// absolute path, since the ref shown to the model is the file's path. The zero value has no
// Root and every Put fails.
//
// A file's name is unique to its content: the (sanitised) tool_use_id, a dash, the first 32
// hex digits of the SHA-256 of the content, and ".txt". The same id with other content (two
// sessions sharing Root, a forked or copied history, a hostile transcript reusing an id) gets
// another file, so a file once written never changes and every frozen preview keeps naming
// the content it was made from; the same id with the same content gets the same file. The
// id part is the id itself when it has 1 to 128 characters from [A-Za-z0-9_-] and does not
// start with "id-"; any other id becomes "id-" + the first 32 hex digits of its SHA-256 (the
// "id-" exclusion keeps the two forms from colliding). The path is checked to stay under
// Root, and the file is created through an [os.Root], so neither "..", separators nor a
// symbolic link planted in Root can make a write escape it.
//
// The ref is filepath.Join(Root, name), except when Root holds a ".." element: the kernel
// resolves "link/.." to the parent of the link's target, not to the directory holding the
// link, so such a Root is first resolved with [filepath.EvalSymlinks] and the ref names the
// file where it was actually written.
//
// Put creates Root (mode 0755) if it is missing and writes atomically: a temporary file in
// Root, synced, then renamed over the target (mode 0600, since tool output may hold secrets).
// It is idempotent: when the file already holds the same bytes, it is left untouched. A
// FileStore is a value with no state of its own and is safe for concurrent use.
type FileStore struct {
	// Root is the directory the files go in.
	Root string
}

// Name returns the file name Put uses for content stored under toolUseID (without Root).
func (s FileStore) Name(toolUseID string, content []byte) string {
	sum := sha256.Sum256(content)
	suffix := "-" + hex.EncodeToString(sum[:16]) + ".txt"
	name := fsname.Safe(toolUseID) + suffix
	if !filepath.IsLocal(name) { // e.g. a reserved device name on Windows
		name = fsname.Hashed(toolUseID) + suffix
	}
	return name
}

// Put writes content to the file Name(toolUseID, content) under Root and returns its path.
func (s FileStore) Put(ctx context.Context, toolUseID string, content []byte) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if s.Root == "" {
		return "", errors.New("agentctx: FileStore.Root is empty")
	}
	if err := os.MkdirAll(s.Root, 0o755); err != nil {
		return "", err
	}
	dir, err := s.dir()
	if err != nil {
		return "", err
	}
	name := s.Name(toolUseID, content)
	path := filepath.Join(dir, name)
	if rel, err := filepath.Rel(dir, path); err != nil || rel != name || !filepath.IsLocal(rel) {
		return "", fmt.Errorf("agentctx: tool result file %q would escape %s", name, s.Root)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return "", err
	}
	defer root.Close()
	if sameFile(root, name, content) {
		return path, nil
	}
	tmp := ".tmp-" + name + "-" + rand.Text()
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", err
	}
	_, err = f.Write(content)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = root.Rename(tmp, name)
	}
	if err != nil {
		_ = root.Remove(tmp)
		return "", err
	}
	fsname.SyncDir(dir)
	return path, nil
}

// dir returns the directory refs are joined to: Root itself, or Root with its symbolic links
// resolved when it holds a ".." element (which the kernel applies after following links,
// while filepath.Join would cancel it lexically).
func (s FileStore) dir() (string, error) {
	for elem := range strings.SplitSeq(filepath.ToSlash(s.Root), "/") {
		if elem == ".." {
			return filepath.EvalSymlinks(s.Root)
		}
	}
	return s.Root, nil
}

// sameFile reports whether name is a regular file in root holding exactly content.
func sameFile(root *os.Root, name string, content []byte) bool {
	fi, err := root.Lstat(name)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() != int64(len(content)) {
		return false
	}
	old, err := root.ReadFile(name)
	return err == nil && bytes.Equal(old, content)
}

// MapStore is an in-memory [ResultStore] for tests and embedders that keep results
// themselves. Its zero value is empty and ready to use; it is safe for concurrent use and must
// not be copied after first use. Refs are "memory:" followed by the id, or by its hashed form
// when the id is not a plain [A-Za-z0-9_-] string (see [FileStore] for the rule). It keeps one
// content per id, the last one put: unlike a FileStore's, its refs are not unique to content,
// so give each conversation its own MapStore.
type MapStore struct {
	mu sync.Mutex
	m  map[string][]byte
}

// Put stores a copy of content under toolUseID, replacing any earlier content.
func (s *MapStore) Put(ctx context.Context, toolUseID string, content []byte) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string][]byte{}
	}
	s.m[toolUseID] = bytes.Clone(content)
	return "memory:" + fsname.Safe(toolUseID), nil
}

// Get returns a copy of the content stored under toolUseID.
func (s *MapStore) Get(toolUseID string) ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.m[toolUseID]
	return bytes.Clone(b), ok
}

// Len returns the number of results stored.
func (s *MapStore) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}
