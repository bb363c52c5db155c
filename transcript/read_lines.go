package transcript

import (
	"bytes"
	"io"
)

// revChunk is how many bytes a reverse line scan reads at first; each read after doubles it,
// up to maxRevChunk. A tail read holds twice the chunk while it scans (more while a line is
// longer): a scan back to a cut a few hundred kilobytes from the end holds a few hundred
// kilobytes, and a scan of a whole file makes a read a megabyte.
const (
	revChunk    = 64 << 10
	maxRevChunk = 1 << 20
)

// revLines reads the lines of a region of a file from its end to its start, a chunk at a time:
// it holds the chunk being scanned and the line being assembled, never the region.
type revLines struct {
	ra   io.ReaderAt
	base int64 // the region's first byte
	end  int64 // the start of the last line returned: the bytes before it are still to scan
	max  int   // the longest line returned whole; a longer one is returned as too long
	// back[lo:hi] holds the file's bytes [at, at+hi-lo), which end at or before end.
	back     []byte
	lo, hi   int
	at       int64
	chunk    int   // bytes read next
	maxChunk int   // the largest chunk: chunk doubles up to it
	err      error // a read error: prev returns false from then on
	// objects counts the lines returned so far that may hold a record: not too long, and
	// their first byte other than white space opens an object.
	objects int
}

// newRevLines returns a reverse scan of the lines of [base, end), the last line first.
func newRevLines(ra io.ReaderAt, base, end int64, maxLine int) *revLines {
	s := newRevLinesChunk(ra, base, end, maxLine, revChunk)
	s.maxChunk = maxRevChunk
	return s
}

// newRevLinesChunk is newRevLines reading chunk bytes at a time, always; tests read a few.
func newRevLinesChunk(ra io.ReaderAt, base, end int64, maxLine, chunk int) *revLines {
	back := make([]byte, 2*chunk)
	return &revLines{ra: ra, base: base, end: end, max: maxLine, back: back, lo: len(back), hi: len(back), at: end, chunk: chunk}
}

// idx returns the index in back of file offset o, which must be buffered.
func (s *revLines) idx(o int64) int { return s.lo + int(o-s.at) }

// prev returns the line before the ones returned so far: its offset and its bytes, without
// the "\n" that ends it (valid until the next call; nil when the line is longer than the
// cap, then tooLong). It returns false at the start of the region, or on a read error (see
// err).
func (s *revLines) prev() (off int64, line []byte, tooLong, ok bool) {
	if s.end <= s.base || s.err != nil {
		return 0, nil, false, false
	}
	stop := s.end // the end of the line's bytes, without its "\n"
	if s.at > stop-1 && !s.more() {
		return 0, nil, false, false
	}
	if s.back[s.idx(stop-1)] == '\n' {
		stop--
	}
	searchEnd := stop // the bytes [searchEnd, stop) hold no "\n"
	for {
		start := s.base
		i := bytes.LastIndexByte(s.back[s.lo:s.idx(searchEnd)], '\n')
		if i < 0 && s.at > s.base {
			searchEnd = s.at
			if !tooLong && stop-s.at > int64(s.max)+2 {
				// Too long to return: go on looking for its start, dropping its bytes.
				tooLong = true
			}
			if tooLong {
				s.hi = s.lo
				stop, searchEnd = s.at, s.at
			}
			if !s.more() {
				return 0, nil, false, false
			}
			continue
		}
		if i >= 0 {
			start = s.at + int64(i+1)
		}
		if !tooLong {
			line = s.back[s.idx(start):s.idx(stop)]
			if len(bytes.TrimSuffix(line, []byte("\r"))) > s.max {
				tooLong, line = true, nil
			}
		}
		s.hi = s.idx(start)
		s.end = start
		if t := trimJSONSpace(line); !tooLong && len(t) > 0 && t[0] == '{' {
			s.objects++
		}
		return start, line, tooLong, true
	}
}

// more reads the chunk before the buffered bytes into the front of the buffer, moving them to
// the end of back first when there is no room before them, and growing back when they fill
// it. It returns false at the start of the region or on a read error.
func (s *revLines) more() bool {
	if s.at <= s.base {
		return false
	}
	k := int(min(int64(s.chunk), s.at-s.base))
	held := s.hi - s.lo
	if s.lo < k {
		dst := s.back
		if held+k > len(s.back) {
			dst = make([]byte, 2*(held+k))
		}
		copy(dst[len(dst)-held:], s.back[s.lo:s.hi])
		s.back, s.lo, s.hi = dst, len(dst)-held, len(dst)
	}
	if _, err := s.ra.ReadAt(s.back[s.lo-k:s.lo], s.at-int64(k)); err != nil && err != io.EOF {
		s.err = err
		return false
	}
	s.lo -= k
	s.at -= int64(k)
	s.chunk = max(s.chunk, min(2*s.chunk, s.maxChunk))
	return true
}
