package jsonobj

import "unicode/utf8"

// jsonSafe holds the ASCII bytes a JSON string carries as they are: everything from space up
// except the quote and the backslash (no HTML escaping, as jsonobj.Marshal).
var jsonSafe = func() (t [utf8.RuneSelf]bool) {
	for c := ' '; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

const hexDigits = "0123456789abcdef"

// AppendString appends s as a JSON string with encoding/json's escapes (HTML escaping off):
// the quote and backslash escaped, control characters as \b \f \n \r \t or \u00XX, each
// invalid UTF-8 byte as \ufffd, and U+2028 and U+2029 as \u2028 and \u2029.
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if jsonSafe[c] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// QuotedLen is len(AppendString(nil, s)), found without writing: the body-size bound measures
// strings with it.
func QuotedLen(s string) int {
	n := len(s) + 2
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if !jsonSafe[c] {
				switch c {
				case '"', '\\', '\b', '\f', '\n', '\r', '\t':
					n++ // a two-byte escape
				default:
					n += 5 // \u00XX
				}
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			n += 5 // one byte becomes \ufffd
		case r == '\u2028' || r == '\u2029':
			n += 3 // three bytes become \u202X
		}
		i += size
	}
	return n
}
