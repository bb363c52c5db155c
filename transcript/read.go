package transcript

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/agentctx/agentctx/internal/jsonobj"
)

// DefaultMaxLineBytes is the line cap a zero [ReadOptions.MaxLineBytes] stands for. Real
// transcript lines reach several megabytes (base64 images, whole files in toolUseResult).
const DefaultMaxLineBytes = 64 << 20

// ErrLineTooLong is wrapped by the [*LineError] for a line longer than
// [ReadOptions.MaxLineBytes].
var ErrLineTooLong = errors.New("agentctx: line too long")

// ErrTornLine is wrapped by the [*LineError] for a torn line: JSON cut short, as left by a
// crash in the middle of a write. Torn lines are skipped and reported, never fatal.
var ErrTornLine = errors.New("agentctx: torn line (incomplete JSON)")

// ReadOptions configures [Read], [ReadFile] and [NewDecoder]. The zero value is the
// default: a 64 MiB line cap, bad lines reported in [Transcript.Problems] and skipped, and
// records with fields that cannot be read kept without those fields and reported in
// [Transcript.Dropped].
type ReadOptions struct {
	// MaxLineBytes caps the length of one line, not counting its "\n" or "\r\n" terminator.
	// Zero or negative means DefaultMaxLineBytes. A longer line is an error wrapping
	// ErrLineTooLong; the reader never buffers more than the cap of it.
	MaxLineBytes int
	// Strict makes a line that is not a valid record (invalid JSON, a known field of the wrong
	// type, an over-long line) an error instead of a skipped line or a dropped field. Torn
	// lines are never errors, not even in strict mode.
	Strict bool
	// TailMinBytes, when positive, reads a Claude Code session of at least so many bytes,
	// from an input that can be read backwards (an *os.File: [ReadFile], a [DirStore]),
	// from its active tail: a scan from the end finds the latest compact boundary of the
	// main thread and the record its preserved segment starts at (the kept head), and only
	// the lines from there on are decoded, with, from before them, the few records the
	// pipeline reads across the whole transcript (see [Tail]) and a count of the lines, so
	// that line numbers and End are the file's. When the boundary carries its [History]
	// (the library writes it), that history stands for the lines before the cut, which are
	// counted but not read; otherwise they are scanned for those records. The requests [github.com/agentctx/agentctx.Pipeline]
	// builds for the active conversation (no Input.Leaf) are those of a whole read, and the
	// read checks what it can: a file without such a boundary, one whose active chain does
	// not lead cleanly from its leaf to the boundary, or one where a record after the cut
	// repeats a uuid or a message id from before it is read whole. Problems, Dropped and the
	// records' Damage cover only the lines decoded. A strict read that fails is made again
	// whole, so that the error is the whole read's. [DefaultTailMinBytes] is what the
	// agentctx command's request and inspect use; simulate and export read everything.
	TailMinBytes int64
	// SkipLineCount, with TailMinBytes, is for a caller that needs no line number of a clean
	// tail (the agentctx command's request): a read that stops at the cut ([Tail.Digest])
	// then does not count the lines before it, which reads every byte before the cut (0.07 s
	// of CPU a gigabyte from the page cache), when the lines it decoded are clean (no
	// Problems, Dropped or Torn line); the records' Line, Lines, End and Tail.Line are then 0,
	// unknown. A tail with a bad line is counted, so that what names a line names the file's.
	// [DirStore.Load] ignores it: an append names the line it follows.
	SkipLineCount bool
}

func (o ReadOptions) maxLine() int {
	if o.MaxLineBytes <= 0 {
		return DefaultMaxLineBytes
	}
	return o.MaxLineBytes
}

// LineError describes a transcript line that could not be read as a record, or a field of a
// record that could not be read (then Field names it, and the record was kept without it).
type LineError struct {
	File  string // the name the transcript was read under
	Line  int    // 1-based line number
	Field string // JSON path of the offending field, e.g. "message.content[2].input"; "" if none
	Err   error  // the cause; wraps ErrTornLine or ErrLineTooLong for those cases
}

// Error formats the error as "file:line: field F: err", omitting the field part when Field is
// empty.
func (e *LineError) Error() string {
	// The cause's own "agentctx: " goes: the message starts with the file, and a caller
	// that prefixes it would say "agentctx:" twice.
	cause := "<nil>"
	if e.Err != nil {
		cause = strings.TrimPrefix(e.Err.Error(), "agentctx: ")
	}
	if e.Field == "" {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, cause)
	}
	return fmt.Sprintf("%s:%d: field %s: %s", e.File, e.Line, e.Field, cause)
}

// Unwrap returns the cause.
func (e *LineError) Unwrap() error { return e.Err }

// Transcript is a whole session file read into memory. Records are in file order; the library
// never modifies them (see [Record]). A Transcript is a plain value: it is not safe to modify
// concurrently, but any number of goroutines may read it.
type File struct {
	// Name is the name the transcript was read under (the path, for ReadFile).
	Name string
	// Records holds the records in file order.
	Records []Record
	// Lines holds the 1-based line number of each record: Records[i] was line Lines[i].
	Lines []int
	// Problems lists the lines that were skipped, in file order: torn lines that are not last,
	// and (when not strict) invalid and over-long lines.
	Problems []*LineError
	// Dropped lists the fields that could not be read, in file order (when not strict): each
	// record was kept without the field, which its [Record.Damage] names too.
	Dropped []*LineError
	// Torn is the torn final line, if any: a record whose write was cut short by a crash.
	// The next append starts on a new line, after which it moves to Problems.
	Torn *LineError

	// Format is the format the file was read in, told from its content ([DetectFormat]).
	// For [FormatCodex] the records are the rollout's lines mapped to the library's terms
	// (see docs/codex.md): one or more records per line, Lines naming each record's line.
	Format Format
	// Variant names the version of the format when it has several: [CodexLegacy] for a Codex
	// rollout from before the {"timestamp", "type", "payload"} wrapper, "" for the current one
	// (and for Claude Code sessions).
	Variant string
	// System is the system prompt the file records, for Input.System: a Codex rollout's base
	// instructions. Nil for Claude Code sessions, whose files do not hold it.
	System []*Text
	// ContextWindow is the context window the file records, in tokens (a Codex rollout's
	// latest model_context_window); 0 when it records none.
	ContextWindow int
	// Unmapped lists, in file order, what a Codex rollout holds that the model's view cannot:
	// item types the mapping does not know, or whose content a Messages request has no place
	// for. Each is kept in the records (a record of its own, or an unknown block that requests
	// drop and report) and named here by line and field; none is an error, not even in strict
	// mode. Always empty for Claude Code sessions, whose unknown records round-trip unchanged.
	Unmapped []*LineError
	// End is the number of lines read, blank and bad ones included: the position just after
	// the transcript's last line, which an append made after reading it names (see
	// [Store]).
	End int
	// Tail is set when only the file's active tail was decoded (see
	// [ReadOptions.TailMinBytes]); nil for a whole read.
	Tail *Tail
}

// Len returns the number of records.
func (t *File) Len() int { return len(t.Records) }

// Clean reports whether every non-blank line was a record read whole: no problems, no dropped
// fields and no torn line.
func (t *File) Clean() bool {
	return len(t.Problems) == 0 && len(t.Dropped) == 0 && t.Torn == nil
}

// Err returns the skipped lines and dropped fields (in line order, then Torn) as one error, or
// nil when Clean.
func (t *File) Err() error {
	if t.Clean() {
		return nil
	}
	all := slices.Concat(t.Problems, t.Dropped)
	slices.SortStableFunc(all, func(a, b *LineError) int { return cmp.Compare(a.Line, b.Line) })
	errs := make([]error, 0, len(all)+1)
	for _, p := range all {
		errs = append(errs, p)
	}
	if t.Torn != nil {
		errs = append(errs, t.Torn)
	}
	return errors.Join(errs...)
}

// Read reads a whole transcript from r. name labels errors (usually the path).
//
// Blank lines are skipped, "\r\n" line ends are accepted, and a final line without a newline is
// read like any other. A torn line is skipped and reported in Torn (when it is the last line)
// or Problems. Other bad lines are skipped and reported in Problems, and a record's fields
// that cannot be read are dropped and reported in Dropped; with opts.Strict either makes
// Read fail with a [*LineError]. Each record's [Record.Damage] names what was
// dropped of it and the lines skipped before it; the last record's names the lines skipped
// after it too. A read error from r is returned as a *LineError too. On error the transcript
// is nil.
func Read(r io.Reader, name string, opts ReadOptions) (*File, error) {
	if t, done, err := readFromTail(r, name, opts); done {
		return t, err
	}
	format, variant, r := sniff(r)
	if format == FormatCodex {
		return readCodex(r, name, opts, variant)
	}
	d := NewDecoder(r, name, opts)
	t := &File{Name: name, Format: FormatClaudeCode}
	if err := decodeAll(d, t, nil); err != nil {
		return nil, err
	}
	finish(t, d)
	return t, nil
}

// recordChunk and maxRecordChunk bound the chunks Read decodes records into: the
// first is small, for short transcripts, and each next one doubles up to the maximum.
const (
	recordChunk    = 64
	maxRecordChunk = 4096
)

// finish sets the transcript's problems, dropped fields and torn line from the decoder that
// read it, and names on the last record the lines skipped after it.
func finish(t *File, d *Decoder) {
	t.Problems = d.Problems()
	t.Dropped = d.Dropped()
	t.Torn = d.Torn()
	t.End = d.line
	if trailing := d.pendingSkipped(); len(trailing) > 0 && len(t.Records) > 0 {
		last := &t.Records[len(t.Records)-1]
		if last.Damage == nil {
			last.Damage = &Damage{}
		}
		last.Damage.Trailing = trailing
	}
}

// ReadFile reads the transcript at path, naming it by path in errors. See [Read].
func ReadFile(path string, opts ReadOptions) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Read(f, path, opts)
}

// Decoder reads records from a transcript stream one at a time, holding at most one line in
// memory. It is the streaming form of [Read] and follows the same rules. A Decoder
// is not safe for concurrent use.
type Decoder struct {
	r      *bufio.Reader
	name   string
	max    int
	strict bool

	buf      []byte      // the current line; reused
	lines    lineDecoder // shares the strings records repeat (see share)
	line     int         // lines consumed so far
	cur      int         // line of the last record or error Decode returned
	problems []*LineError
	dropped  []*LineError
	skipped  []*LineError // problems since the last record Decode returned
	torn     *LineError   // the latest torn line, while no non-blank line has followed it
	err      error        // sticky: io.EOF or a read error
}

// NewDecoder returns a Decoder reading from r. name labels errors (usually the path). The
// Decoder buffers r; it may read past the last record it returned.
func NewDecoder(r io.Reader, name string, opts ReadOptions) *Decoder {
	return &Decoder{
		r:      bufio.NewReaderSize(r, 64<<10),
		name:   name,
		max:    opts.maxLine(),
		strict: opts.Strict,
		lines:  lineDecoder{sharing: true},
	}
}

// Decode reads the next record into *rec, overwriting it completely, and sets its
// [Record.Line]. It returns io.EOF after the last record.
//
// Lines that are not records are skipped and collected (see [Decoder.Problems] and
// [Decoder.Torn]); the next record's [Record.Damage] lists them. A record's fields that cannot
// be read are left absent, and collected too (see [Decoder.Dropped]). In strict mode an
// invalid or over-long line, or an unreadable field, is returned as a [*LineError] instead,
// *rec is left zero, and the next call goes on with the following line. A read error from the
// underlying reader is returned as a *LineError and repeated by every later call.
func (d *Decoder) Decode(rec *Record) error {
	for {
		line, err := d.next()
		if err != nil {
			if d.err == nil { // a strict-mode line error, not the end or a read error
				*rec = Record{}
			}
			return err
		}
		*rec = Record{}
		err = rec.decode(&d.lines, line)
		if err == nil {
			return d.record(rec)
		}
		*rec = Record{}
		if err := d.bad(line, err); err != nil {
			return err
		}
	}
}

// next returns the next non-blank line that is within the cap, without its terminator, byte
// order mark and surrounding white space; the slice is valid until the next call. An
// over-long line is skipped and reported, or in strict mode returned as a [*LineError]. At the
// end of the input it returns io.EOF, and after a read error that error, both sticky (d.err
// is set then, and only then).
func (d *Decoder) next() ([]byte, error) {
	if d.err != nil {
		return nil, d.err
	}
	for {
		line, tooLong, size, err := d.readLine()
		if err == io.EOF {
			d.err = io.EOF
			return nil, io.EOF
		}
		if err != nil {
			d.err = &LineError{File: d.name, Line: d.line + 1, Err: err}
			return nil, d.err
		}
		d.line++
		if tooLong {
			d.settleTorn()
			le := &LineError{File: d.name, Line: d.line,
				Err: fmt.Errorf("%w: %d bytes exceeds the limit of %d", ErrLineTooLong, size, d.max)}
			if d.strict {
				d.cur = d.line
				return nil, le
			}
			d.skip(le)
			continue
		}
		if d.line == 1 {
			line = bytes.TrimPrefix(line, []byte("\xef\xbb\xbf")) // UTF-8 byte order mark
		}
		line = trimJSONSpace(line)
		if len(line) == 0 {
			continue
		}
		d.settleTorn()
		return line, nil
	}
}

// bad handles the current line, which err says is not a record: a torn line is kept pending
// (see [Decoder.Torn]); any other is skipped and reported, or returned as a [*LineError] in
// strict mode.
func (d *Decoder) bad(line []byte, err error) error {
	if isTorn(line) {
		d.torn = &LineError{File: d.name, Line: d.line, Err: fmt.Errorf("%w: %w", ErrTornLine, err)}
		return nil
	}
	le := d.lineError(err)
	if d.strict {
		d.cur = d.line
		return le
	}
	d.skip(le)
	return nil
}

// record finishes a decoded record: its line, the fields it dropped, the lines skipped before
// it. In strict mode a dropped field is the error instead.
func (d *Decoder) record(rec *Record) error {
	d.cur = d.line
	if dm := rec.Damage; dm != nil {
		for _, fe := range dm.Fields {
			fe.File, fe.Line = d.name, d.line
		}
		if d.strict {
			le := *dm.Fields[0]
			*rec = Record{}
			return &le
		}
		d.dropped = append(d.dropped, dm.Fields...)
	}
	rec.Line = d.line
	if len(d.skipped) > 0 {
		if rec.Damage == nil {
			rec.Damage = &Damage{}
		}
		rec.Damage.Skipped, d.skipped = d.skipped, nil
	}
	return nil
}

// skip records a line that is not a record.
func (d *Decoder) skip(le *LineError) {
	d.problems = append(d.problems, le)
	d.skipped = append(d.skipped, le)
}

// pendingSkipped returns the lines skipped since the last record, the torn last line included.
func (d *Decoder) pendingSkipped() []*LineError {
	out := d.skipped
	if d.torn != nil {
		out = append(slices.Clip(out), d.torn)
	}
	return out
}

// Line returns the 1-based line number of the record (or strict-mode error) Decode returned
// last; 0 before the first.
func (d *Decoder) Line() int { return d.cur }

// Problems returns the lines skipped so far, in file order: torn lines followed by other lines
// and, when not strict, invalid and over-long lines. The caller must not modify the slice.
func (d *Decoder) Problems() []*LineError { return d.problems }

// Dropped returns the fields that could not be read so far, in file order (never in strict
// mode, where they are errors). The caller must not modify the slice.
func (d *Decoder) Dropped() []*LineError { return d.dropped }

// Torn returns the torn line at the end of the input, or nil. It is final once Decode has
// returned io.EOF; before that it is the latest torn line not yet followed by another line.
func (d *Decoder) Torn() *LineError { return d.torn }

// settleTorn moves a pending torn line to the problems: a non-blank line follows it.
func (d *Decoder) settleTorn() {
	if d.torn != nil {
		d.skip(d.torn)
		d.torn = nil
	}
}

// lineError builds the LineError for a record that failed to decode, lifting the JSON path of
// a field error into Field.
func (d *Decoder) lineError(err error) *LineError {
	le := &LineError{File: d.name, Line: d.line, Err: err}
	var fe *jsonobj.Error
	if errors.As(err, &fe) {
		le.Field, le.Err = fe.Path, fe.Err
	}
	return le
}

// readLine returns the next line without its "\n" (a "\r" before it is kept; trimJSONSpace
// removes it), or io.EOF at the end of the input, or a read error. A line over the cap is reported by
// tooLong with its length (without terminator), after skipping to its end without buffering
// it. The returned slice is valid until the next call.
func (d *Decoder) readLine() (line []byte, tooLong bool, size int, err error) {
	d.buf = d.buf[:0]
	limit := max(d.max+2, d.max) // room for the "\r\n" terminator, unless that overflows
	var prev byte                // the byte before the current fragment
	for {
		frag, err := d.r.ReadSlice('\n')
		if !tooLong {
			if len(d.buf)+len(frag) > limit {
				tooLong = true
				d.buf = d.buf[:0]
			} else {
				d.buf = append(d.buf, frag...)
			}
		}
		switch err {
		case nil:
		case bufio.ErrBufferFull:
			size += len(frag)
			prev = frag[len(frag)-1]
			continue
		case io.EOF:
			if size+len(frag) == 0 {
				return nil, false, 0, io.EOF
			}
		default:
			return nil, false, 0, err
		}
		// frag is the last fragment; take the terminator off the size.
		size += len(frag)
		if n := len(frag); n > 0 && frag[n-1] == '\n' {
			size--
			if n > 1 && frag[n-2] == '\r' || n == 1 && prev == '\r' {
				size--
			}
		}
		if tooLong || size > d.max {
			return nil, true, size, nil
		}
		return bytes.TrimSuffix(d.buf, []byte("\n")), false, size, nil
	}
}

// isTorn reports whether data is JSON cut short: a prefix of a JSON value that ends before the
// value does. A line with a syntax error before its end is not torn.
func isTorn(data []byte) bool {
	var v json.RawMessage
	err := json.NewDecoder(bytes.NewReader(data)).Decode(&v)
	return errors.Is(err, io.ErrUnexpectedEOF)
}

// isJSONSpace reports whether c is JSON white space.
func isJSONSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// trimJSONSpace removes JSON white space (space, tab, CR, LF) from both ends of b.
func trimJSONSpace(b []byte) []byte {
	for len(b) > 0 && isJSONSpace(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isJSONSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}
