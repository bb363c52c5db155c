package wire

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// ValidUTF8 returns s with each byte that does not begin a valid UTF-8 sequence replaced by
// U+FFFD (as encoding/json does when it decodes a string, so a block built in Go and the same
// block read from a transcript give the same text), and the number of bytes replaced.
func ValidUTF8(s string) (string, int) {
	if utf8.ValidString(s) {
		return s, 0
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	n := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b.WriteRune(utf8.RuneError)
			n++
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String(), n
}

// ValidJSONText returns raw with each byte that does not begin a valid UTF-8 sequence
// replaced by U+FFFD and each \u escape of an unpaired surrogate replaced by \ufffd, and the
// number of replacements. Neither touches the structure: invalid bytes and escapes can only
// stand inside strings (outside them JSON is ASCII without backslashes), so valid JSON stays
// valid JSON with its key order and spacing; raw is returned as it is when nothing needs
// repair.
func ValidJSONText(raw json.RawMessage) (json.RawMessage, int) {
	if utf8.Valid(raw) && !HasLoneSurrogate(raw) {
		return raw, 0
	}
	out := make(json.RawMessage, 0, len(raw)+8)
	n := 0
	for i := 0; i < len(raw); {
		c := raw[i]
		switch {
		case c == '\\':
			size := escapeLen(raw[i:])
			if size < 0 {
				out = append(out, `\ufffd`...)
				n++
				i += 6
				continue
			}
			out = append(out, raw[i:i+size]...)
			i += size
		case c < utf8.RuneSelf:
			out = append(out, c)
			i++
		default:
			r, size := utf8.DecodeRune(raw[i:])
			if r == utf8.RuneError && size == 1 {
				out = utf8.AppendRune(out, utf8.RuneError)
				n++
			} else {
				out = append(out, raw[i:i+size]...)
			}
			i += size
		}
	}
	return out, n
}

// HasLoneSurrogate reports whether raw holds a \u escape of an unpaired surrogate.
func HasLoneSurrogate(raw []byte) bool {
	for i := bytes.IndexByte(raw, '\\'); i >= 0; {
		size := escapeLen(raw[i:])
		if size < 0 {
			return true
		}
		j := bytes.IndexByte(raw[i+size:], '\\')
		if j < 0 {
			return false
		}
		i += size + j
	}
	return false
}

// escapeLen returns the length of the escape that s starts with (s[0] is a backslash): 12 for
// an escaped surrogate pair, 6 for any other \u escape, 2 for the others (and for a truncated
// one, 1); or -1 when it is a \u escape of an unpaired surrogate, which is 6 bytes long.
func escapeLen(s []byte) int {
	if len(s) < 2 {
		return len(s)
	}
	if s[1] != 'u' {
		return 2
	}
	r, ok := hex4(s[2:])
	switch {
	case !ok:
		return 2
	case !utf16.IsSurrogate(r):
		return 6
	case r < 0xdc00 && len(s) >= 12 && s[6] == '\\' && s[7] == 'u':
		if r2, ok := hex4(s[8:]); ok && r2 >= 0xdc00 && r2 <= 0xdfff {
			return 12
		}
	}
	return -1
}

// hex4 decodes the four hex digits s starts with.
func hex4(s []byte) (rune, bool) {
	if len(s) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range s[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}
