package host

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"sync"

	"github.com/agentctx/agentctx/transcript"
)

// DecisionStore keeps the library's records of each session for a host that keeps the
// messages itself: every record a turn's [agentctx.Result.Append] holds (replaced tool
// results, snips, clearings, collapses, compactions with their summaries, failures, recovery
// rungs), each turn's records behind a record of this package that says where they go among
// the host's messages. [FileStore] keeps them as JSONL files;
// github.com/agentctx/agentctx/postgres's DecisionStore keeps them in PostgreSQL.
//
// Implementations must be safe for concurrent use by different sessions; one session's turns
// come one at a time.
type DecisionStore interface {
	// Load returns session's records in the order they were appended; none (and no error)
	// for a session that has none.
	Load(ctx context.Context, session string) ([]transcript.Record, error)
	// Append stores records after session's others, all or none.
	Append(ctx context.Context, session string, records ...transcript.Record) error
}

// FileStore is a [DecisionStore] keeping each session's records in a JSONL file of its own
// under Root, written by [transcript.DirStore] (an [transcript.Appender] under a lock) and
// read as a transcript is read, so that a torn last line after a crash costs only the records
// of that line. It is a value with no state of its own and is safe for concurrent use.
type FileStore struct {
	// Root is the directory the files are in; Append creates it when missing.
	Root string
	// Sync makes each Append fsync the file.
	Sync bool
}

// Path returns the path of session's file.
func (s FileStore) Path(session string) string { return s.dir().Path(session) }

func (s FileStore) dir() transcript.DirStore { return transcript.DirStore{Root: s.Root, Sync: s.Sync} }

// Load reads session's file; a missing file holds no records.
func (s FileStore) Load(ctx context.Context, session string) ([]transcript.Record, error) {
	f, err := s.dir().Load(ctx, session, transcript.ReadOptions{})
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return f.Records, nil
}

// Append appends records to session's file as one batch, through an [transcript.Appender]
// (under its lock), creating Root and the file when missing.
func (s FileStore) Append(ctx context.Context, session string, records ...transcript.Record) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(records) == 0 {
		return nil
	}
	if s.Root == "" {
		return errors.New("host: FileStore.Root is empty")
	}
	if err := os.MkdirAll(s.Root, 0o755); err != nil {
		return fmt.Errorf("host: append the decisions of session %q: %w", session, err)
	}
	a, err := transcript.OpenAppender(s.Path(session), transcript.AppendOptions{Sync: s.Sync})
	if err != nil {
		return fmt.Errorf("host: append the decisions of session %q: %w", session, err)
	}
	err = a.Append(records...)
	if cerr := a.Close(); err == nil {
		err = cerr
	}
	return err
}

// MemoryStore is a [DecisionStore] in memory, for tests and for a host whose conversations
// live no longer than its process. Its zero value is ready; it is safe for concurrent use.
type MemoryStore struct {
	mu       sync.Mutex
	sessions map[string][]transcript.Record
}

// Load returns session's records: the store's own, not a copy, which the caller does not
// modify (appending to the slice returned is safe: its capacity is its length, and the
// records in it are never written again).
func (s *MemoryStore) Load(ctx context.Context, session string) ([]transcript.Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clip(s.sessions[session]), nil
}

// Append adds records to session's.
func (s *MemoryStore) Append(ctx context.Context, session string, records ...transcript.Record) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sessions == nil {
		s.sessions = map[string][]transcript.Record{}
	}
	s.sessions[session] = append(s.sessions[session], records...)
	return nil
}
