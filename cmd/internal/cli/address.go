package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"strings"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/transcript"
)

// Database is where postgres:// addresses lead: agentctx-full's is agentctx/postgres.
type Database interface {
	// Open connects to the database at url (the address without its #SESSION).
	Open(ctx context.Context, url string) (Store, error)
	// Schema returns the SQL that creates the database's tables, for the schema command.
	Schema() string
	// MissingTables reports whether err says that the database has no agentctx tables: the
	// schema was never applied.
	MissingTables(err error) bool
}

// Store is an open database, as agentctx/postgres's Store is: the transcripts of its
// sessions and the tool results the budget stage replaced.
type Store interface {
	transcript.Store
	agentctx.ResultStore
	// Import stores the lines r holds as session's, byte for byte, completing an import cut
	// short, and returns the session's line count.
	Import(ctx context.Context, session string, r io.Reader) (int, error)
	// Export writes session's lines to w, byte for byte.
	Export(ctx context.Context, w io.Writer, session string) (int64, error)
	// Migrate applies the schema's migrations the database lacks.
	Migrate(ctx context.Context) ([]int, error)
	// Close closes the connections.
	Close()
}

// address is where a session is: a JSONL file, or a session in a PostgreSQL database,
// written postgres://user@host/db?options#SESSION-ID (postgresql:// too; the session id
// percent-encoded where it needs to be).
type address struct {
	file    string   // the file's path, when url is ""
	url     string   // the connection URL, without the fragment
	session string   // the session id, for a database
	shown   string   // how messages name the address: the password, if any, hidden
	db      Database // the database's driver, for a database
}

// isDatabase reports whether arg is a PostgreSQL address.
func isDatabase(arg string) bool {
	return strings.HasPrefix(arg, "postgres://") || strings.HasPrefix(arg, "postgresql://")
}

// parseAddress reads a FILE argument: a path, or a postgres:// address naming a session
// (needSession) or a database only, which db opens; without db, an address is refused.
func parseAddress(arg string, needSession bool, db Database) (address, error) {
	if !isDatabase(arg) {
		return address{file: arg, shown: arg}, nil
	}
	if db == nil {
		return address{}, needsFull{"the PostgreSQL address " + hidePassword(arg)}
	}
	u, err := url.Parse(arg)
	if err != nil {
		return address{}, fmt.Errorf("%s: not a PostgreSQL address: %v", redact(arg), err)
	}
	a := address{url: arg, session: u.Fragment, db: db}
	if before, _, ok := strings.Cut(arg, "#"); ok {
		a.url = before
	}
	frag := u.EscapedFragment()
	u.Fragment, u.RawFragment = "", ""
	a.shown = u.Redacted()
	if a.session != "" {
		a.shown += "#" + frag
	}
	if needSession && a.session == "" {
		return address{}, fmt.Errorf("%s names no session: add #SESSION-ID to the address", a.shown)
	}
	return a, nil
}

// redact hides the password of an address that does not parse.
func redact(arg string) string {
	if at := strings.LastIndexByte(arg, '@'); at >= 0 {
		if i := strings.Index(arg, "://"); i >= 0 && i+3 < at {
			if c := strings.IndexByte(arg[i+3:at], ':'); c >= 0 {
				return arg[:i+3+c+1] + "xxxxx" + arg[at:]
			}
		}
	}
	return arg
}

// hidePassword returns a database address with its password, if any, replaced by xxxxx.
func hidePassword(arg string) string {
	if u, err := url.Parse(arg); err == nil {
		return u.Redacted()
	}
	return redact(arg)
}

func (a address) String() string { return a.shown }

// open connects to the address's database, applying the schema when migrate is set.
func (a address) open(ctx context.Context, migrate bool) (Store, error) {
	st, err := a.db.Open(ctx, a.url)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", a.shown, err)
	}
	if migrate {
		if _, err := st.Migrate(ctx); err != nil {
			st.Close()
			return nil, fmt.Errorf("%s: %w", a.shown, err)
		}
	}
	return st, nil
}

// dbError explains a database error; a missing table means the schema was never applied.
func (a address) dbError(err error) error {
	if a.db.MissingTables(err) {
		return fmt.Errorf("%s: the database has no agentctx tables: import a session into it first ("+fullName+" import), or apply the schema "+fullName+" schema prints: %w", a.shown, err)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("cannot read %s: no such session in the database", a.shown)
	}
	return err
}

// raw returns the session's bytes: the file, or its export.
func (a address) raw(ctx context.Context) ([]byte, error) {
	if a.url == "" {
		return readFile(a.file, maxSessionBytes)
	}
	st, err := a.open(ctx, false)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	var buf bytes.Buffer
	if _, err := st.Export(ctx, &buf, a.session); err != nil {
		return nil, a.dbError(err)
	}
	return buf.Bytes(), nil
}

// create writes data as a new session: a file that must not exist, or a session with no line
// yet — or, with resume, a database session holding the first lines of data, which an import
// cut short left (import completes it). It returns the number of lines
// the session holds then.
func (a address) create(ctx context.Context, data []byte, resume bool) (int, error) {
	if a.url == "" {
		f, err := os.OpenFile(a.file, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return 0, err
		}
		_, err = f.Write(data)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		lines := bytes.Count(data, []byte("\n"))
		if len(data) > 0 && data[len(data)-1] != '\n' {
			lines++ // a last line without its newline is a line too
		}
		return lines, err
	}
	st, err := a.open(ctx, true)
	if err != nil {
		return 0, err
	}
	defer st.Close()
	if !resume {
		if _, err := st.Load(ctx, a.session, transcript.ReadOptions{}); !errors.Is(err, fs.ErrNotExist) {
			if err == nil {
				return 0, fmt.Errorf("%s already holds another session: nothing written", a.shown)
			}
			return 0, a.dbError(err)
		}
	}
	// Import is positioned and idempotent: it completes an import cut short (the session holds
	// a prefix of data) and refuses a session holding other lines with a conflict.
	n, err := st.Import(ctx, a.session, bytes.NewReader(data))
	if errors.Is(err, transcript.ErrConflict) {
		return 0, fmt.Errorf("%s already holds another session: nothing imported", a.shown)
	}
	if err != nil {
		return 0, a.dbError(err)
	}
	return n, nil
}

// appendAfter appends records to the session: to a file as one batch, to a database after
// line end, the end of the transcript the command read (another writer's lines since are a
// conflict).
func (a address) appendAfter(ctx context.Context, end int, records []transcript.Record) error {
	if a.url == "" {
		// After the line read, as for a database: a writer that appended since (the agent
		// still running) is a conflict, not a fork.
		ap, err := transcript.OpenAppender(a.file, transcript.AppendOptions{Sync: true})
		if err != nil {
			return err
		}
		_, err = ap.AppendAfter(end, records...)
		if cerr := ap.Close(); err == nil {
			err = cerr
		}
		return err
	}
	st, err := a.open(ctx, false)
	if err != nil {
		return err
	}
	defer st.Close()
	if _, err := st.Append(ctx, a.session, end, records...); err != nil {
		return a.dbError(err)
	}
	return nil
}
