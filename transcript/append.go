package transcript

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/agentctx/agentctx/internal/fsname"
)

// AppendOptions configures an [Appender]. The zero value appends without fsync: a batch is in
// the operating system's cache when Append returns and survives a crash of the process, not of
// the machine.
type AppendOptions struct {
	// Sync makes Append fsync the file after writing each batch, and OpenAppender fsync the
	// directory (best effort) so that a newly created file survives a system crash.
	Sync bool
}

// Appender appends records to a transcript file, one JSON object per line, never modifying
// bytes already in the file.
//
// Each Append call is one batch: all its records are encoded first and then written with a
// single write, so a batch is never interleaved with another. An Appender is safe for
// concurrent use by multiple goroutines, and several Appenders (in one process or in several)
// may append to the same file: each batch is written under an exclusive advisory lock (flock)
// on Linux, macOS and the BSDs. Other platforms have no inter-process lock; see lock_other.go.
// Writers that do not take the lock (such as Claude Code itself) are not excluded.
//
// If the file does not end with a newline when a batch is written (a line torn by a crash, or
// a file written without a final newline), the batch is preceded by "\n", so that it starts on
// a line of its own and the torn line stays a separate, skippable line (see [Read]).
//
// Before each batch, under the lock, the Appender checks that the file at its path is still the
// file it opened ([os.SameFile]). If the transcript was removed, renamed away or replaced (a
// rotation, an editor's save-by-rename, a user deleting the session), Append fails with an
// error matching [ErrFileReplaced] and writes nothing, rather than appending to a file no path
// names any more; open a new Appender to go on. A replacement by a writer that does not take
// the lock, between the check and the write, is not detected.
type Appender struct {
	mu    sync.Mutex
	f     *os.File // nil once closed
	path  string
	check string // path to check the open file against: absolute, uncleaned
	sync  bool

	// The line count of the file's first size bytes, kept between positioned appends so
	// that each reads only what was written since: newlines counts their "\n" bytes and last
	// is the last of them.
	size     int64
	newlines int
	last     byte
}

// ErrFileReplaced is matched (with [errors.Is]) by the error of [Appender.Append] when the file
// at the Appender's path is no longer the file it opened: it was removed, renamed or replaced.
var ErrFileReplaced = errors.New("agentctx: transcript file removed or replaced")

// replacedError says how the file at the path changed; it matches ErrFileReplaced without
// repeating the package prefix in Append's error.
type replacedError string

func (e replacedError) Error() string        { return string(e) }
func (e replacedError) Is(target error) bool { return target == ErrFileReplaced }

// OpenAppender opens the file at path for appending, creating it with mode 0o644 if it does
// not exist. The caller must Close the Appender. A file that holds an OpenAI Codex rollout
// ([DetectFormat] on its head) is refused with an error matching [ErrCodexAppend], and left
// as it was.
//
// The file is opened O_RDWR|O_APPEND|O_CREATE: every write goes to the end of the file, and
// read access is needed to check the last byte before each batch.
func OpenAppender(path string, opts AppendOptions) (*Appender, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := checkAppendable(f, path); err != nil {
		f.Close()
		return nil, err
	}
	if opts.Sync {
		fsname.SyncDir(filepath.Dir(path))
	}
	check := path
	if !filepath.IsAbs(path) {
		// Joined without cleaning: "link/.." must keep the meaning the kernel gave it at open.
		if wd, err := os.Getwd(); err == nil {
			check = wd + string(filepath.Separator) + path
		}
	}
	return &Appender{f: f, path: path, check: check, sync: opts.Sync}, nil
}

// Path returns the path the Appender was opened with.
func (a *Appender) Path() string { return a.path }

// Append writes records to the end of the file as one batch, one line per record. Appending no
// records does nothing. If a record fails to encode, nothing is written. If the write itself
// fails, part of the batch may be in the file; the next batch then starts on a new line and
// readers report the cut line as torn. The records are not modified or retained.
func (a *Appender) Append(records ...Record) error {
	if len(records) == 0 {
		return nil
	}
	batch, err := encodeBatch(records)
	if err != nil {
		return fmt.Errorf("agentctx: append to %s: %w", a.path, err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.f == nil {
		return fmt.Errorf("agentctx: append to %s: %w", a.path, os.ErrClosed)
	}
	if err := lockFile(a.f); err != nil {
		return fmt.Errorf("agentctx: append to %s: lock: %w", a.path, err)
	}
	err = a.write(batch)
	if uerr := unlockFile(a.f); uerr != nil && err == nil {
		err = fmt.Errorf("unlock: %w", uerr)
	}
	if err != nil {
		return fmt.Errorf("agentctx: append to %s: %w", a.path, err)
	}
	return nil
}

// AppendAfter appends records as one batch, like Append, if the file ends at line after: the
// line count a reader of the file saw ([Transcript.End]). It returns the line count after the
// batch, which the next AppendAfter names. If the file has other lines now (another writer
// appended first), nothing is written and the error is a [*ConflictError], unless the lines
// after line after already hold the batch's lines, consecutively and byte for byte: then the
// batch was written by an earlier attempt (a retry after a timeout), nothing is written
// again, and AppendAfter returns the line count at its end. Appending no records does nothing
// and returns after.
//
// The check and the write happen under the file lock (see [Appender]), so two positioned
// appends after the same line never both succeed on platforms with an inter-process lock.
// Lines are counted as [Read] counts them: every "\n", plus a last line without one.
func (a *Appender) AppendAfter(after int, records ...Record) (int, error) {
	if after < 0 {
		return 0, fmt.Errorf("agentctx: append to %s: line %d: a position is a line count, never negative", a.path, after)
	}
	if len(records) == 0 {
		return after, nil
	}
	batch, err := encodeBatch(records)
	if err != nil {
		return 0, fmt.Errorf("agentctx: append to %s: %w", a.path, err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.f == nil {
		return 0, fmt.Errorf("agentctx: append to %s: %w", a.path, os.ErrClosed)
	}
	if err := lockFile(a.f); err != nil {
		return 0, fmt.Errorf("agentctx: append to %s: lock: %w", a.path, err)
	}
	end, err := a.writeAfter(after, batch)
	if uerr := unlockFile(a.f); uerr != nil && err == nil {
		err = fmt.Errorf("unlock: %w", uerr)
	}
	if err != nil {
		if _, ok := errors.AsType[*ConflictError](err); ok {
			return 0, err
		}
		return 0, fmt.Errorf("agentctx: append to %s: %w", a.path, err)
	}
	return end, nil
}

// writeAfter writes the batch under the file lock if the file has after lines; see
// AppendAfter.
func (a *Appender) writeAfter(after int, batch []byte) (int, error) {
	if err := a.samePath(); err != nil {
		return 0, err
	}
	lines, err := a.countLines()
	if err != nil {
		return 0, err
	}
	n := bytes.Count(batch, []byte("\n")) - 1
	if lines != after {
		if end, ok, err := a.holds(after, batch[1:], n); err != nil || ok {
			return end, err
		}
		return 0, &ConflictError{Session: a.path, After: after, End: lines}
	}
	if err := a.write(batch); err != nil {
		// Stored whole or not at all: a write cut short (a full disk, a size limit) is
		// undone under the lock, so no Load sees part of the batch and a retry can match.
		if terr := a.f.Truncate(a.size); terr != nil {
			return 0, errors.Join(err, fmt.Errorf("agentctx: undo the partial append to %s: %w", a.path, terr))
		}
		return 0, err
	}
	return after + n, nil
}

// countLines returns the number of lines in the file, reading only the bytes written since
// the last count.
func (a *Appender) countLines() (int, error) {
	fi, err := a.f.Stat()
	if err != nil {
		return 0, err
	}
	size := fi.Size()
	if size < a.size { // truncated by a writer that does not lock: count again
		a.size, a.newlines, a.last = 0, 0, 0
	}
	buf := make([]byte, 64<<10)
	for a.size < size {
		n, err := a.f.ReadAt(buf[:min(int64(len(buf)), size-a.size)], a.size)
		if n > 0 {
			a.newlines += bytes.Count(buf[:n], []byte("\n"))
			a.last = buf[n-1]
			a.size += int64(n)
		}
		if err != nil && !(errors.Is(err, io.EOF) && n > 0) {
			return 0, err
		}
	}
	if a.size > 0 && a.last != '\n' {
		return a.newlines + 1, nil
	}
	return a.newlines, nil
}

// holds reports whether the n lines of batch (each ending in "\n") follow line after (or a
// later line) in the file, consecutively; if so it returns the line count at their end.
func (a *Appender) holds(after int, batch []byte, n int) (int, bool, error) {
	data, err := io.ReadAll(io.NewSectionReader(a.f, 0, a.size))
	if err != nil {
		return 0, false, err
	}
	file := bytes.SplitAfter(data, []byte("\n"))
	want := bytes.SplitAfter(batch, []byte("\n"))[:n]
	for p := after; p+n <= len(file); p++ {
		ok := true
		for i, w := range want {
			f := file[p+i]
			if !bytes.Equal(bytes.TrimSuffix(f, []byte("\n")), bytes.TrimSuffix(w, []byte("\n"))) {
				ok = false
				break
			}
		}
		if ok {
			return p + n, true, nil
		}
	}
	return 0, false, nil
}

// write writes the batch (whose first byte is a reserved "\n") under the file lock, after
// checking that the file is still the one at the path.
func (a *Appender) write(batch []byte) error {
	if err := a.samePath(); err != nil {
		return err
	}
	heal, err := endsTorn(a.f)
	if err != nil {
		return err
	}
	if !heal {
		batch = batch[1:]
	}
	if _, err := a.f.Write(batch); err != nil {
		return err
	}
	if a.sync {
		return a.f.Sync()
	}
	return nil
}

// samePath returns an error matching ErrFileReplaced unless the file at the path is the open
// file.
func (a *Appender) samePath() error {
	open, err := a.f.Stat()
	if err != nil {
		return err
	}
	now, err := os.Stat(a.check)
	if errors.Is(err, fs.ErrNotExist) {
		return replacedError("the file was removed or renamed since the Appender opened it; nothing was written")
	}
	if err != nil {
		return err
	}
	if !os.SameFile(open, now) {
		return replacedError("another file has replaced the one the Appender opened; nothing was written")
	}
	return nil
}

// Close closes the file. Append and Close fail with an error wrapping os.ErrClosed afterwards.
func (a *Appender) Close() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.f == nil {
		return fmt.Errorf("agentctx: close %s: %w", a.path, os.ErrClosed)
	}
	err := a.f.Close()
	a.f = nil
	return err
}

// AppendFile appends records to the file at path as one batch: OpenAppender, Append, Close.
func AppendFile(path string, opts AppendOptions, records ...Record) error {
	a, err := OpenAppender(path, opts)
	if err != nil {
		return err
	}
	err = a.Append(records...)
	if cerr := a.Close(); err == nil {
		err = cerr
	}
	return err
}

// encodeBatch encodes records as lines, behind one reserved "\n" byte (see
// [Record.MarshalLine]).
func encodeBatch(records []Record) ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte('\n')
	for i := range records {
		if err := records[i].appendLine(&buf); err != nil {
			return nil, fmt.Errorf("record %d: %w", i, err)
		}
		buf.WriteByte('\n')
	}
	return buf.Bytes(), nil
}

// MarshalLine encodes the record as the line an [Appender] writes for it, without the
// newline: its MarshalJSON (no HTML escaping, as Claude Code writes) compacted, which
// validates it and guarantees that it holds no newline. Stores other than files use it so
// that a record has the same bytes wherever it is kept.
func (r Record) MarshalLine() ([]byte, error) {
	var buf bytes.Buffer
	if err := r.appendLine(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func (r *Record) appendLine(buf *bytes.Buffer) error {
	b, err := r.MarshalJSON()
	if err != nil {
		return err
	}
	return json.Compact(buf, b)
}

// endsTorn reports whether f is non-empty and its last byte is not '\n'.
func endsTorn(f *os.File) (bool, error) {
	fi, err := f.Stat()
	if err != nil {
		return false, err
	}
	if fi.Size() == 0 {
		return false, nil
	}
	var b [1]byte
	if _, err := f.ReadAt(b[:], fi.Size()-1); err != nil && !errors.Is(err, io.EOF) {
		return false, err
	}
	return b[0] != '\n', nil
}

// checkAppendable refuses a file whose content is in a format the library only reads.
func checkAppendable(f *os.File, path string) error {
	head := make([]byte, sniffBytes)
	n, err := f.ReadAt(head, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("agentctx: append to %s: %w", path, err)
	}
	if DetectFormat(head[:n]) == FormatCodex {
		return fmt.Errorf("%w: %s is an OpenAI Codex rollout, which only Codex writes", ErrCodexAppend, path)
	}
	return nil
}
