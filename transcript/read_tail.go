package transcript

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
)

// DefaultTailMinBytes is the file size from which the agentctx command's request and inspect
// read a session from its active tail ([ReadOptions.TailMinBytes]). Below it a whole read
// costs under a tenth of a second and some ten megabytes more than the tail's, and it reports
// every bad line of the file; Claude Code loads files over 5 MB from the last boundary on.
const DefaultTailMinBytes = 4 << 20

// Tail describes a read that decoded a file from its active tail (see
// [ReadOptions.TailMinBytes]).
type Tail struct {
	// Line and Offset are where the tail starts: the line of the kept head of the latest
	// compact boundary of the main thread (the boundary's own line when it kept no tail).
	Line   int
	Offset int64
	// Size is the size of the input in bytes; Size-Offset bytes were decoded in full. Both
	// are 0 from [ReadCut], whose input is not a file.
	Size int64
	// History is the number of records from before Line kept at the start of Records: the
	// compact boundaries and the library's decision records, the records its pins name, and
	// the provider responses the breaker, the thrash guard and the recovery read; with
	// Digest, the records the boundary's [History] carries (their Line is 0: the read does
	// not know it). Without Digest, the scan also weighed every response before the cut for
	// the cache TTL (see [ChooseCacheTTL]); the boundary's record carries that weighing, and
	// the turns that read these records start from it.
	History int
	// Digest is true when the read stopped at the cut: the history came from the latest
	// boundary's [History], and no line before the cut was decoded.
	Digest bool
	// DigestProblem, when the latest boundary has a [History] the read could not use
	// (damaged, edited, inconsistent with the lines after the cut), says why: the lines
	// before the cut were scanned instead.
	DigestProblem string
}

// tailInput is an input a tail read can scan from its end: a file.
type tailInput interface {
	io.ReaderAt
	io.Seeker
}

// readFromTail reads r from its active tail when opts ask for it and r allows it; done is
// false when r must be read whole, with r's offset where it was.
func readFromTail(r io.Reader, name string, opts ReadOptions) (t *File, done bool, err error) {
	f, ok := r.(tailInput)
	if !ok || opts.TailMinBytes <= 0 {
		return nil, false, nil
	}
	base, err := f.Seek(0, io.SeekCurrent)
	if err != nil {
		return nil, false, nil
	}
	size, err := f.Seek(0, io.SeekEnd)
	if _, err2 := f.Seek(base, io.SeekStart); err != nil || err2 != nil || size-base < opts.TailMinBytes {
		return nil, false, nil
	}
	head := make([]byte, min(sniffBytes, size-base))
	if _, err := f.ReadAt(head, base); err != nil && err != io.EOF {
		return nil, false, nil
	}
	if format, _ := detect(head); format != FormatClaudeCode {
		return nil, false, nil
	}
	t, err = readTail(f, base, size, name, opts)
	return t, t != nil || err != nil, err
}

// readTail reads the Claude Code transcript in [base, size) of ra from the kept head of its
// latest main-thread compact boundary on, keeping from before it only the records the
// pipeline reads across the whole transcript. It returns nil, nil when the file is to be read
// whole: it has no such boundary, the boundary's kept head is not found, a record after the
// cut repeats a uuid or a message id from before it, the active conversation's chain does not
// lead from its leaf to the boundary cleanly, or a strict read fails (so that the error names
// the file's line).
func readTail(ra io.ReaderAt, base, size int64, name string, opts ReadOptions) (*File, error) {
	sc := newRevLines(ra, base, size, opts.maxLine())
	var ld lineDecoder
	bd, cut := lastBoundary(sc, &ld, base)
	if cut < 0 {
		return nil, nil
	}
	var seg *PreservedSegment
	if bd.CompactMetadata != nil {
		seg = bd.CompactMetadata.PreservedSegment
	}
	if seg != nil {
		if cut = findUUID(sc, &ld, base, seg.HeadUUID); cut < 0 {
			return nil, nil
		}
	}
	// The reverse scan passed every line from the cut on: the tail's records are decoded into
	// one slice with room for a record on each line that may hold one, after room for the
	// records the boundary's history carries. The room is bounded by the tail's bytes too, so
	// that lines of a few bytes (damage, or a hostile file) cost no more than a whole read's
	// chunks: records past it are decoded into chunks.
	front := 0
	if bd.History != nil {
		front = len(bd.History.Records)
	}
	all := make([]Record, front, front+min(sc.objects, int((size-cut)/minRecordLine)+1))
	t := &File{Name: name, Format: FormatClaudeCode}
	d := NewDecoder(io.NewSectionReader(ra, cut, size-cut), name, opts)
	if err := decodeAll(d, t, all[front:]); err != nil {
		return nil, nil
	}
	finish(t, d)
	problem := ""
	if bd.History != nil {
		count := !opts.SkipLineCount || len(t.Problems) > 0 || len(t.Dropped) > 0 || t.Torn != nil
		before, carried, at, err := fromHistory(ra, base, cut, &bd, t.Records, sc.back, count)
		if err == nil {
			if t := settleTail(t, carried, nil, before, cut, size-base, bd.UUID, seg != nil, all[:front]); t != nil {
				t.Records[len(carried)+at].Cut = true
				t.Tail.Digest = true
				if !count {
					uncounted(t)
				}
				return t, nil
			}
			err = errors.New("does not lead to the chain a whole read builds")
		}
		problem = fmt.Sprintf("the history on compact boundary %s %v: the lines before the cut were scanned instead", bd.UUID, err)
		sc = newRevLines(ra, base, cut, opts.maxLine()) // the line count read into its buffer
	}
	h := newTailHistory(ra, t.Records)
	before, ok := h.scan(sc, &ld, base)
	if !ok {
		return nil, nil
	}
	h.settle(before, name)
	at := boundaryIn(t.Records, bd.UUID)
	if t = settleTail(t, h.records, h.lines, before, cut, size-base, bd.UUID, seg != nil, nil); t != nil {
		t.Tail.DigestProblem = problem
		if at >= 0 {
			t.Records[len(h.records)+at].scanned = h.cut(at)
		}
	}
	return t, nil
}

// boundaryIn returns the position in tail of the compact boundary with the given uuid (the
// last, should several hold it), or -1.
func boundaryIn(tail []Record, uuid string) int {
	for i := len(tail) - 1; i >= 0; i-- {
		if r := &tail[i]; r.UUID == uuid && r.IsCompactBoundary() {
			return i
		}
	}
	return -1
}

// minRecordLine bounds the room a tail read makes for its records: one for every so many
// bytes of the tail at most. A record's line is ten times that long or more.
const minRecordLine = 64

// settleTail puts history (the records kept from before the cut, on lines; nil lines: none
// known) before the tail t decoded from cut on, moves t's line numbers on by before lines and
// checks the chain: it returns nil when the default leaf's chain is not the main thread's,
// does not reach the boundary named by bd cleanly, or does not relink a preserved segment
// (seg). When room is as long as history and t's records follow it in its array, the history
// is copied there instead of copying every record.
func settleTail(t *File, history []Record, lines []int, before int, cut, size int64, bd string, seg bool, room []Record) *File {
	var records []Record
	if n := len(room); n == len(history) && len(t.Records) > 0 && cap(room) > n && &room[:n+1][n] == &t.Records[0] {
		records = room[:n+len(t.Records)]
		copy(records, history)
	} else {
		records = slices.Concat(history, t.Records)
	}
	if !cleanTail(records, "", bd, seg) {
		return nil
	}
	if lines == nil {
		lines = make([]int, len(history))
	}
	t.Records = records
	shiftLines(t, len(history), before)
	t.Lines = slices.Concat(lines, t.Lines)
	t.Tail = &Tail{Line: before + 1, Offset: cut, Size: size, History: len(history)}
	return t
}

// uncounted forgets the line numbers of t, a tail read that did not count the lines before
// its cut (see [ReadOptions.SkipLineCount]): they are 0, unknown.
func uncounted(t *File) {
	for i := range t.Records {
		t.Records[i].Line = 0
	}
	t.Lines, t.End, t.Tail.Line = nil, 0, 0
}

// fromHistory reads the history on bd, the latest compact boundary of the main thread, for a
// tail decoded from cut on (tail): it checks it, counts the lines before the cut when count
// is true (reading them into buf, which the reverse scan is done with) and returns the
// records it carries and the index of bd's record in tail. An error says why the history
// cannot stand for the lines before the cut.
func fromHistory(ra io.ReaderAt, base, cut int64, bd *Record, tail []Record, buf []byte, count bool) (before int, carried []Record, at int, err error) {
	if carried, at, err = checkHistory(bd, tail); err != nil {
		return 0, nil, 0, err
	}
	if !count {
		return 0, carried, at, nil
	}
	if before, err = countLines(ra, base, cut, buf); err != nil {
		return 0, nil, 0, err
	}
	return before, carried, at, nil
}

// checkHistory checks the history on bd against the tail decoded from its cut on and returns
// the records it carries and the index of bd's record in tail.
func checkHistory(bd *Record, tail []Record) (carried []Record, at int, err error) {
	h := bd.History
	if err := h.Check(); err != nil {
		return nil, 0, err
	}
	if carried, err = h.Carried(); err != nil {
		return nil, 0, err
	}
	// The carried records are few and the tail's many: index the carried records' uuids and
	// message ids (a message id keyed after a NUL), each to the first record holding it, and
	// look the tail's up. The first carried record the tail holds too is the one named.
	index := make(map[string]int, 2*len(carried))
	for i := len(carried) - 1; i >= 0; i-- {
		r := &carried[i]
		index[r.UUID] = i
		if r.Message != nil && r.Message.ID != "" {
			index["\x00"+r.Message.ID] = i
		}
	}
	clash := len(carried)
	for i := range tail {
		r := &tail[i]
		if len(index) > 0 {
			if j, ok := index[r.UUID]; ok {
				clash = min(clash, j)
			}
			if r.Message != nil && r.Message.ID != "" {
				if j, ok := index["\x00"+r.Message.ID]; ok {
					clash = min(clash, j)
				}
			}
		}
	}
	at = boundaryIn(tail, bd.UUID)
	if clash < len(carried) {
		return nil, 0, fmt.Errorf("carries record %s, which the lines after the cut hold too", carried[clash].UUID)
	}
	if at < 0 {
		return nil, 0, errors.New("is not on a record after the cut")
	}
	return carried, at, nil
}

// ReadCut reads r, the lines of a Claude Code transcript from the kept head of its latest
// compact boundary of the main thread on (the boundary's own line when it kept no tail),
// which follow before lines, as a read of the whole transcript from its active tail that
// stops at that cut (see [ReadOptions.TailMinBytes] and [History]): the records the
// boundary's history carries come first, the lines are numbered from before+1 on, and
// File.Tail says so (its Offset and Size are 0: the input is not a file). It is for a store
// that finds the kept head itself, such as a database keyed by line number; opts.TailMinBytes
// is ignored. It returns an error when r is no such tail — its first line is not the kept
// head, the boundary carries no history or one that does not check, the chain does not
// reach the boundary cleanly — or when a strict read fails: the store then reads the whole
// transcript, as a file without a history is.
func ReadCut(r io.Reader, name string, before int, opts ReadOptions) (*File, error) {
	opts.TailMinBytes = 0
	t := &File{Name: name, Format: FormatClaudeCode}
	d := NewDecoder(r, name, opts)
	if err := decodeAll(d, t, nil); err != nil {
		return nil, err
	}
	finish(t, d)
	var bd *Record
	for i := len(t.Records) - 1; i >= 0 && bd == nil; i-- {
		if r := &t.Records[i]; r.IsCompactBoundary() && !r.IsSidechain {
			bd = r
		}
	}
	if bd == nil {
		return nil, errors.New("no compact boundary of the main thread")
	}
	var seg *PreservedSegment
	if bd.CompactMetadata != nil {
		seg = bd.CompactMetadata.PreservedSegment
	}
	switch {
	case seg != nil && t.Records[0].UUID != seg.HeadUUID, seg == nil && bd != &t.Records[0]:
		return nil, fmt.Errorf("the first line is not the kept head of compact boundary %s", bd.UUID)
	case bd.History == nil:
		return nil, fmt.Errorf("compact boundary %s carries no history", bd.UUID)
	}
	b := *bd
	carried, at, err := checkHistory(&b, t.Records)
	if err != nil {
		return nil, fmt.Errorf("the history on compact boundary %s %w", b.UUID, err)
	}
	if t = settleTail(t, carried, nil, before, 0, 0, b.UUID, seg != nil, nil); t == nil {
		return nil, fmt.Errorf("the history on compact boundary %s does not lead to the chain a whole read builds", b.UUID)
	}
	t.Records[len(carried)+at].Cut = true
	t.Tail.Digest = true
	return t, nil
}

// countLines counts the lines in [base, cut) of ra, which ends at a line's end, reading them
// into buf (nil: a buffer of its own).
func countLines(ra io.ReaderAt, base, cut int64, buf []byte) (int, error) {
	if len(buf) == 0 {
		buf = make([]byte, min(revChunk, max(cut-base, 1)))
	}
	n := 0
	for off := base; off < cut; {
		b := buf[:min(int64(len(buf)), cut-off)]
		k, err := ra.ReadAt(b, off)
		n += bytes.Count(b[:k], []byte{'\n'})
		off += int64(k)
		if err != nil && (err != io.EOF || off < cut) {
			return 0, err
		}
	}
	return n, nil
}

// decodeAll decodes every record d reads into t.Records and t.Lines, as [Read] does. room,
// when its capacity is the lines d reads (a record takes one line), is where the records go.
func decodeAll(d *Decoder, t *File, room []Record) error {
	// Records are decoded into chunks and copied once into a slice of the exact length: a
	// slice grown by append would allocate several times the records' size on the way and
	// keep up to a quarter more than it holds.
	var chunks [][]Record
	var lines []int
	var next Record
	chunk := room[:0]
	if cap(chunk) == 0 {
		chunk = make([]Record, 0, recordChunk)
	} else {
		lines = make([]int, 0, cap(chunk))
	}
	for {
		// A record is decoded in its place; when the chunk is full, aside, so that the next
		// chunk is made only for a record that is there.
		full := len(chunk) == cap(chunk)
		r := &next
		if !full {
			chunk = append(chunk, Record{})
			r = &chunk[len(chunk)-1]
		}
		err := d.Decode(r)
		if err != nil {
			if !full {
				chunk = chunk[:len(chunk)-1]
			}
			if err == io.EOF {
				break
			}
			return err
		}
		if full {
			chunks = append(chunks, chunk)
			chunk = append(make([]Record, 0, min(2*cap(chunk), maxRecordChunk)), next)
			next = Record{}
		}
		lines = append(lines, d.Line())
	}
	switch {
	case len(chunks) == 0 && cap(room) > 0:
		t.Records = chunk
		if len(lines) > 0 {
			t.Lines = lines
		}
		return nil
	case len(chunks) == 0 && len(chunk) == 0:
		t.Records = []Record{}
	default:
		t.Records = slices.Concat(append(chunks, chunk)...)
	}
	if len(lines) > 0 {
		t.Lines = slices.Clone(lines)
	}
	return nil
}

// decodeLine decodes one line of a reverse scan into *r, as the Decoder would: the byte order
// mark of the file's first line (at base) and JSON white space trimmed.
func decodeLine(ld *lineDecoder, off, base int64, line []byte, r *Record) bool {
	if off == base {
		line = bytes.TrimPrefix(line, []byte("\xef\xbb\xbf"))
	}
	if line = trimJSONSpace(line); len(line) == 0 {
		return false
	}
	*r = Record{}
	return r.decode(ld, line) == nil
}

// lastBoundary scans back to the latest compact boundary of the main thread and returns it
// with its line's offset, or -1 when there is none.
func lastBoundary(sc *revLines, ld *lineDecoder, base int64) (Record, int64) {
	for {
		off, line, long, ok := sc.prev()
		if !ok {
			return Record{}, -1
		}
		if long || !bytes.Contains(line, []byte(`"compact_boundary"`)) {
			continue
		}
		var r Record // made only for the lines decoded: it escapes
		if decodeLine(ld, off, base, line, &r) && r.IsCompactBoundary() && !r.IsSidechain {
			return r, off
		}
	}
}

// findUUID scans back to the line of the record holding uuid u and returns its offset, or -1.
func findUUID(sc *revLines, ld *lineDecoder, base int64, u string) int64 {
	if u == "" {
		return -1
	}
	quoted := []byte(`"` + u + `"`)
	for {
		off, line, long, ok := sc.prev()
		if !ok {
			return -1
		}
		if long || !bytes.Contains(line, quoted) {
			continue
		}
		var r Record // made only for the lines decoded: it escapes
		if decodeLine(ld, off, base, line, &r) && r.UUID == u {
			return off
		}
	}
}

// shiftLines moves the line numbers of a tail decoded from line 1 on, its records from index
// from on, to the file's, n lines further.
func shiftLines(t *File, from, n int) {
	for i := range t.Records[from:] {
		t.Records[from+i].Line += n
	}
	for i := range t.Lines {
		t.Lines[i] += n
	}
	seen := map[*LineError]bool{}
	shift := func(le *LineError) {
		if le != nil && !seen[le] {
			seen[le] = true
			le.Line += n
		}
	}
	for _, le := range t.Problems {
		shift(le)
	}
	for _, le := range t.Dropped {
		shift(le)
	}
	shift(t.Torn)
	t.End += n
}
