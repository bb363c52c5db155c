package postgres

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// importChunk is the most line bytes Import sends in one INSERT.
const importChunk = 8 << 20

// Import stores the JSONL transcript read from r as session's lines, byte for byte: every
// line, blank, bad and torn ones too, so that [Store.Export] writes r's bytes back. A line
// ends at "\n" (a "\r" before it is kept in the line); a last line without "\n" is stored as
// such. It returns the number of lines stored.
//
// The lines go in positioned appends of up to 8 MiB, the first after line 0: importing into a
// session that has other lines is a [*transcript.ConflictError], and importing the same file
// again stores nothing again. An import cut short (a crash, a deadline) leaves the file's
// first lines, never part of a line; running it again completes it.
func (s *Store) Import(ctx context.Context, session string, r io.Reader) (int, error) {
	if err := checkSession(session); err != nil {
		return 0, fmt.Errorf("postgres: import: %w", err)
	}
	br := bufio.NewReaderSize(r, 64<<10)
	end, size := 0, 0
	var chunk []row
	flush := func() error {
		if len(chunk) == 0 {
			return nil
		}
		n, err := s.insert(ctx, s.pool, session, end, chunk)
		if err != nil {
			return err
		}
		end, chunk, size = n, chunk[:0], 0
		return nil
	}
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			nl := line[len(line)-1] == '\n'
			line = bytes.TrimSuffix(line, []byte("\n"))
			chunk = append(chunk, row{uuid: uuidOf(line), line: line, newline: nl})
			if size += len(line); size >= importChunk {
				if ferr := flush(); ferr != nil {
					return 0, ferr
				}
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return 0, fmt.Errorf("postgres: import session %s: line %d: %w", strconv.Quote(session), end+len(chunk)+1, err)
		}
	}
	if err := flush(); err != nil {
		return 0, err
	}
	return end, nil
}

// Export writes session's transcript to w as its JSONL file, byte for byte what Import read
// and appends added, and returns the number of bytes written. A session with no line is an
// error matching [fs.ErrNotExist].
func (s *Store) Export(ctx context.Context, w io.Writer, session string) (int64, error) {
	if err := checkSession(session); err != nil {
		return 0, fmt.Errorf("postgres: export: %w", err)
	}
	lr, err := s.open(ctx, session, 1)
	if err != nil {
		return 0, fmt.Errorf("postgres: export session %s: %w", strconv.Quote(session), err)
	}
	defer lr.rows.Close()
	n, err := io.Copy(w, lr)
	if err != nil {
		return n, fmt.Errorf("postgres: export session %s: %w", strconv.Quote(session), err)
	}
	if lr.seq == 0 {
		return 0, noSession(session)
	}
	return n, nil
}

// Sessions returns the ids of the sessions that have lines, sorted.
func (s *Store) Sessions(ctx context.Context) ([]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT DISTINCT session FROM agentctx_lines ORDER BY session`)
	if err != nil {
		return nil, fmt.Errorf("postgres: sessions: %w", err)
	}
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("postgres: sessions: %w", err)
		}
		out = append(out, id)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: sessions: %w", err)
	}
	return out, nil
}
