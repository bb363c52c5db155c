package transcript

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentctx/agentctx/internal/fsname"
)

// Store keeps the transcripts of many sessions, so that any worker of a fleet can
// serve the next turn of any session. [DirStore] keeps them as JSONL files;
// agentctx/postgres keeps them in PostgreSQL.
//
// A position is a line count: the number of lines of a session's transcript, blank and bad
// lines included, as [Transcript.End] reports it after a Load. A writer names the position it
// read in its Append, and the store appends only if the session still ends there, so two
// workers that both read a session and both append to it cannot fork it unnoticed: one of
// them gets a [*ConflictError], reads the session again and decides anew.
//
// Implementations must be safe for concurrent use, and Append must be idempotent: a batch
// appended again after it was stored (a retry after a timeout whose answer was lost) is not
// stored twice.
type Store interface {
	// Load reads the transcript of session, as [Read] reads a file: records in
	// order, bad lines reported by line number, End set. A session that has no line yet is
	// an error matching [os.ErrNotExist].
	Load(ctx context.Context, session string, opts ReadOptions) (*File, error)
	// Append stores records at the end of session's transcript, as one batch that is stored
	// whole or not at all, if the transcript ends at position after (0 for a new session).
	// It returns the position after the batch, which the writer's next Append names.
	//
	// If the transcript ends elsewhere, nothing is stored and the error is a
	// [*ConflictError] — unless the lines following position after (or a later position)
	// already are the batch's lines, byte for byte: then an earlier attempt stored it, and
	// Append returns the position after those lines without storing anything again.
	// Records are stored as [Record.MarshalLine] encodes them. Appending no records does
	// nothing and returns after.
	Append(ctx context.Context, session string, after int, records ...Record) (end int, err error)
}

// ErrConflict is matched (with [errors.Is]) by a [*ConflictError].
var ErrConflict = errors.New("agentctx: the transcript changed since it was read")

// ConflictError is the error of a positioned append ([Store.Append],
// [Appender.AppendAfter]) made after a position that is no longer the transcript's end:
// another writer appended first. Nothing was stored. Read the transcript again (its records
// after position After are the other writer's) and decide the turn anew.
type ConflictError struct {
	Session string // the session id, or the file's path for an Appender
	After   int    // the position the append named
	End     int    // the position the transcript ends at now
}

// Error says where the append was made and where the transcript ends now.
func (e *ConflictError) Error() string {
	return fmt.Sprintf("agentctx: append to %s after line %d refused: the transcript ends at line %d now (another writer appended first); read it again", e.Session, e.After, e.End)
}

// Is reports whether target is ErrConflict.
func (e *ConflictError) Is(target error) bool { return target == ErrConflict }

// DirStore is a [Store] keeping each session in a JSONL file of its own under Root,
// named by the session id followed by ".jsonl" — the layout of a Claude Code project
// directory. The files are the files [ReadFile] reads and an [Appender] writes, byte for
// byte. A session id that is not 1 to 128 characters of [A-Za-z0-9_-] (or that starts with
// "id-") is hashed into the name, as [github.com/agentctx/agentctx.FileStore] does, so no id can name a file outside Root.
//
// Load takes a shared lock on the file and Append an exclusive one (see [Appender]), so a
// Load never sees half of a batch and two positioned appends never both succeed. A DirStore
// is a value with no state of its own and is safe for concurrent use. It checks ctx only
// before it starts: file I/O and the lock are not interruptible.
type DirStore struct {
	// Root is the directory the session files are in. Append creates it (mode 0755) when
	// missing.
	Root string
	// Sync makes each Append fsync the file (see [AppendOptions]).
	Sync bool
}

// Path returns the path of session's file.
func (s DirStore) Path(session string) string {
	name := fsname.Safe(session) + ".jsonl"
	if !filepath.IsLocal(name) { // e.g. a reserved device name on Windows
		name = fsname.Hashed(session) + ".jsonl"
	}
	return filepath.Join(s.Root, name)
}

// Load reads session's file under a shared lock.
func (s DirStore) Load(ctx context.Context, session string, opts ReadOptions) (*File, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if s.Root == "" {
		return nil, errors.New("agentctx: DirStore.Root is empty")
	}
	path := s.Path(session)
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("agentctx: load session %q: %w", session, err)
	}
	defer f.Close()
	if err := lockFileShared(f); err != nil {
		return nil, fmt.Errorf("agentctx: load session %q: lock: %w", session, err)
	}
	defer unlockFile(f)
	opts.SkipLineCount = false
	tr, err := Read(f, path, opts)
	if err == nil && tr.End == 0 {
		// An empty file holds no session: a first append that failed before its first line.
		return nil, fmt.Errorf("agentctx: load session %q: %w", session, os.ErrNotExist)
	}
	return tr, err
}

// Append appends records to session's file with [Appender.AppendAfter], creating the file
// (and Root) when after is 0 and it does not exist yet.
func (s DirStore) Append(ctx context.Context, session string, after int, records ...Record) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if s.Root == "" {
		return 0, errors.New("agentctx: DirStore.Root is empty")
	}
	if len(records) == 0 && after >= 0 {
		return after, nil
	}
	path := s.Path(session)
	if _, err := os.Stat(path); after > 0 && errors.Is(err, os.ErrNotExist) {
		return 0, &ConflictError{Session: session, After: after, End: 0}
	}
	if err := os.MkdirAll(s.Root, 0o755); err != nil {
		return 0, fmt.Errorf("agentctx: append to session %q: %w", session, err)
	}
	a, err := OpenAppender(path, AppendOptions{Sync: s.Sync})
	if err != nil {
		return 0, fmt.Errorf("agentctx: append to session %q: %w", session, err)
	}
	end, err := a.AppendAfter(after, records...)
	if cerr := a.Close(); err == nil && cerr != nil {
		return 0, cerr
	}
	if ce, ok := errors.AsType[*ConflictError](err); ok {
		ce.Session = session
	}
	return end, err
}
