package jsonobj

import (
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// MaxScanDepth is how deeply nested arrays and objects may be before a [Scanner] gives up on
// them. It is well below encoding/json's own limit, so that whatever a Scanner refuses for
// depth a caller's fallback to encoding/json still reads, and it bounds the recursion of
// decoders built on a Scanner.
const MaxScanDepth = 1000

// Scanner reads one JSON text in a single pass, value by value: strings are unescaped once,
// numbers parsed once, and values kept raw are returned as sub-slices of the input after they
// were validated. It accepts exactly what encoding/json accepts as valid JSON, and it reads
// values the way encoding/json would decode them into strings, ints and bools; whatever it is
// not sure to read the same (an int written as 1e3, a lone surrogate, a syntax error, nesting
// deeper than [MaxScanDepth]) makes the method reading it report false, after which the
// Scanner is of no further use. A caller then decodes the text again with encoding/json,
// which names the problem. The zero Scanner scans empty input; [Scanner.Reset] gives it a
// text.
type Scanner struct {
	data  []byte
	pos   int
	depth int
	buf   []byte // scratch for unescaped keys and strings
}

// Reset makes s scan data from its start.
func (s *Scanner) Reset(data []byte) {
	s.data, s.pos, s.depth = data, 0, 0
}

// Pos returns the offset of the next byte to read, for [Scanner.Rewind].
func (s *Scanner) Pos() int { return s.pos }

// Rewind makes the scanner read again from pos, an offset [Scanner.Pos] returned while the
// scanner stood at the same nesting depth as now.
func (s *Scanner) Rewind(pos int) { s.pos = pos }

// Leading returns the value of the first member of the object at the cursor, unescaped, when
// that member is key with a string value, without consuming anything. The bytes are valid
// only until the next call of a method of s.
func (s *Scanner) Leading(key string) ([]byte, bool) {
	if s.Peek() != '{' {
		return nil, false
	}
	start := s.pos
	defer func() { s.pos = start }()
	s.pos++
	k, ok := s.stringBytes()
	if !ok || string(k) != key || s.Peek() != ':' {
		return nil, false
	}
	s.pos++
	return s.stringBytes()
}

// space skips JSON white space.
func (s *Scanner) space() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\r', '\n':
			s.pos++
		default:
			return
		}
	}
}

// Peek returns the first byte of the next value, after white space, without consuming it;
// 0 at the end of the input.
func (s *Scanner) Peek() byte {
	s.space()
	if s.pos >= len(s.data) {
		return 0
	}
	return s.data[s.pos]
}

// End reports whether nothing but white space is left.
func (s *Scanner) End() bool {
	s.space()
	return s.pos == len(s.data)
}

// Null consumes the next value and reports true when it is the literal null; otherwise it
// consumes nothing and reports false.
func (s *Scanner) Null() bool {
	if s.Peek() == 'n' && s.literal("null") {
		return true
	}
	return false
}

// literal consumes lit when the input continues with it.
func (s *Scanner) literal(lit string) bool {
	if len(s.data)-s.pos < len(lit) || string(s.data[s.pos:s.pos+len(lit)]) != lit {
		return false
	}
	s.pos += len(lit)
	return true
}

// Bool reads a true or false.
func (s *Scanner) Bool() (v, ok bool) {
	switch s.Peek() {
	case 't':
		return true, s.literal("true")
	case 'f':
		return false, s.literal("false")
	}
	return false, false
}

// Int reads a number written as an integer that fits an int, as encoding/json decodes one
// into an int (a fraction or an exponent is not read, even when the value is whole).
func (s *Scanner) Int() (int, bool) {
	c := s.Peek()
	if c != '-' && (c < '0' || c > '9') {
		return 0, false
	}
	start := s.pos
	if !s.number() {
		return 0, false
	}
	lit := s.data[start:s.pos]
	for _, c := range lit {
		if c == '.' || c == 'e' || c == 'E' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(string(lit), 10, strconv.IntSize)
	if err != nil {
		return 0, false
	}
	return int(n), true
}

// number consumes a JSON number: -? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?.
func (s *Scanner) number() bool {
	d := s.data
	i := s.pos
	if i < len(d) && d[i] == '-' {
		i++
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case i < len(d) && d[i] >= '1' && d[i] <= '9':
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
	default:
		return false
	}
	if i < len(d) && d[i] == '.' {
		i++
		j := i
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
		if i == j {
			return false
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		j := i
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
		if i == j {
			return false
		}
	}
	s.pos = i
	return true
}

// plain marks the bytes a string holds as they are: printable ASCII other than the quote and
// the backslash.
var plain = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// String reads a string and returns it unescaped, as encoding/json decodes it into a Go
// string (invalid UTF-8 becomes U+FFFD).
func (s *Scanner) String() (string, bool) {
	b, ok := s.stringBytes()
	return string(b), ok
}

// StringBytes is [Scanner.String] without the string: the unescaped bytes, valid only until
// the next call of a method of s (a caller that keeps them copies them, or looks up a string
// it already holds).
func (s *Scanner) StringBytes() ([]byte, bool) { return s.stringBytes() }

// stringBytes reads a string; the result is a sub-slice of the input when the string needs no
// unescaping, else s.buf, valid until the next call.
func (s *Scanner) stringBytes() ([]byte, bool) {
	if s.Peek() != '"' {
		return nil, false
	}
	d := s.data
	start := s.pos + 1
	i := start
	for i < len(d) && plain[d[i]] {
		i++
	}
	if i < len(d) && d[i] == '"' {
		s.pos = i + 1
		return d[start:i], true
	}
	return s.unquote(start, i)
}

// unquote reads the rest of a string whose plain prefix d[start:i] is already scanned,
// unescaping it into s.buf.
func (s *Scanner) unquote(start, i int) ([]byte, bool) {
	d := s.data
	out := append(s.buf[:0], d[start:i]...)
	for i < len(d) {
		c := d[i]
		switch {
		case plain[c]:
			j := i + 1
			for j < len(d) && plain[d[j]] {
				j++
			}
			out = append(out, d[i:j]...)
			i = j
		case c == '"':
			s.buf = out
			s.pos = i + 1
			return out, true
		case c == '\\':
			if i+1 >= len(d) {
				return nil, false
			}
			i++
			switch d[i] {
			case '"', '\\', '/':
				out = append(out, d[i])
			case 'b':
				out = append(out, '\b')
			case 'f':
				out = append(out, '\f')
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 't':
				out = append(out, '\t')
			case 'u':
				r, ok := hex4(d[i+1:])
				if !ok {
					return nil, false
				}
				i += 4
				if utf16.IsSurrogate(r) {
					// A pair of escapes makes one rune; a surrogate without its other half
					// is U+FFFD, and what follows it is read on its own.
					r2 := rune(-1)
					if i+2 < len(d) && d[i+1] == '\\' && d[i+2] == 'u' {
						if v, ok := hex4(d[i+3:]); ok {
							r2 = v
						}
					}
					if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
						r = dec
						i += 6
					} else {
						r = utf8.RuneError
					}
				}
				out = utf8.AppendRune(out, r)
			default:
				return nil, false
			}
			i++
		case c < 0x20:
			return nil, false
		default: // the first byte of a UTF-8 sequence, or an invalid byte
			r, size := utf8.DecodeRune(d[i:])
			if r == utf8.RuneError && size == 1 {
				out = utf8.AppendRune(out, utf8.RuneError)
			} else {
				out = append(out, d[i:i+size]...)
			}
			i += size
		}
	}
	return nil, false
}

// hex4 reads four hexadecimal digits.
func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// Object reads an object, calling member for each key (unescaped; the slice is valid only
// until member reads its value), which must read the member's value and report whether it
// could. Object reports false when the next value is not an object, when it is not valid, or
// when member reported false.
func (s *Scanner) Object(member func(key []byte) bool) bool {
	if s.Peek() != '{' {
		return false
	}
	if s.depth++; s.depth > MaxScanDepth {
		return false
	}
	s.pos++
	if s.Peek() == '}' {
		s.pos++
		s.depth--
		return true
	}
	for {
		key, ok := s.stringBytes()
		if !ok || s.Peek() != ':' {
			return false
		}
		s.pos++
		if !member(key) {
			return false
		}
		switch s.Peek() {
		case ',':
			s.pos++
		case '}':
			s.pos++
			s.depth--
			return true
		default:
			return false
		}
	}
}

// Array reads an array, calling elem for each element, which must read it and report whether
// it could. Array reports false when the next value is not an array, when it is not valid, or
// when elem reported false.
func (s *Scanner) Array(elem func() bool) bool {
	if s.Peek() != '[' {
		return false
	}
	if s.depth++; s.depth > MaxScanDepth {
		return false
	}
	s.pos++
	if s.Peek() == ']' {
		s.pos++
		s.depth--
		return true
	}
	for {
		if !elem() {
			return false
		}
		switch s.Peek() {
		case ',':
			s.pos++
		case ']':
			s.pos++
			s.depth--
			return true
		default:
			return false
		}
	}
}

// Raw validates the next value and returns its bytes, a sub-slice of the input without the
// white space around it.
func (s *Scanner) Raw() ([]byte, bool) {
	c := s.Peek()
	start := s.pos
	var ok bool
	switch {
	case c == '"':
		ok = s.skipString()
	case c == '{' || c == '[':
		ok = s.skipNested()
	case c == 't':
		ok = s.literal("true")
	case c == 'f':
		ok = s.literal("false")
	case c == 'n':
		ok = s.literal("null")
	case c == '-' || c >= '0' && c <= '9':
		ok = s.number()
	}
	if !ok {
		return nil, false
	}
	return s.data[start:s.pos], true
}

// skipString consumes a string, checking its escapes, without unescaping it.
func (s *Scanner) skipString() bool {
	d := s.data
	i := s.pos + 1
	for i < len(d) {
		c := d[i]
		switch {
		case c == '"':
			s.pos = i + 1
			return true
		case c == '\\':
			if i+1 >= len(d) {
				return false
			}
			switch d[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if _, ok := hex4(d[i+2:]); !ok {
					return false
				}
				i += 6
			default:
				return false
			}
		case c < 0x20:
			return false
		default:
			i++
		}
	}
	return false
}

// skipNested consumes an array or object, iteratively, checking it is valid JSON.
func (s *Scanner) skipNested() bool {
	// stack holds one entry per open level: true for an object, false for an array.
	stack := make([]bool, 0, 32)
	push := func() bool {
		if s.depth+len(stack) >= MaxScanDepth {
			return false
		}
		stack = append(stack, s.data[s.pos] == '{')
		s.pos++
		return true
	}
	if !push() {
		return false
	}
	opened := true // the innermost level has no member yet
	for {
		obj := stack[len(stack)-1]
		if opened && (obj && s.Peek() == '}' || !obj && s.Peek() == ']') {
			s.pos++
			stack = stack[:len(stack)-1]
		} else {
			if obj && (s.Peek() != '"' || !s.skipString() || s.Peek() != ':') {
				return false
			}
			if obj {
				s.pos++
			}
			if c := s.Peek(); c == '{' || c == '[' {
				if !push() {
					return false
				}
				opened = true
				continue
			}
			if _, ok := s.Raw(); !ok {
				return false
			}
		}
		// After a value: a comma goes on at the same level, a closer ends it and goes on
		// after the value that level was.
		for {
			if len(stack) == 0 {
				return true
			}
			obj := stack[len(stack)-1]
			c := s.Peek()
			if c == ',' {
				s.pos++
				opened = false
				break
			}
			if obj && c == '}' || !obj && c == ']' {
				s.pos++
				stack = stack[:len(stack)-1]
				continue
			}
			return false
		}
	}
}
