package tiktoken

import (
	"unicode"
	"unicode/utf8"
)

// The pre-tokenizers below cut a chunk into the pieces that cl100kPattern and o200kPattern
// match, as github.com/dlclark/regexp2 matches them: leftmost-first alternation with
// backtracking, one match after the other from the end of the previous one. Every rune of a
// valid UTF-8 text starts some alternative, so the pieces tile the text. Each function takes
// the text and the start of a piece and returns the end of that piece, in bytes. The text must
// be valid UTF-8 (tiktoken-go runs the pattern on []rune, see countChunk).
//
// Character classes are regexp2's: \p{L}, \p{N}, \p{M} and the letter categories are the
// tables of the unicode package, and \s is unicode.IsSpace.

// runeClass is a set of the classes the patterns test, for one rune.
type runeClass uint8

const (
	clLetter  runeClass = 1 << iota // \p{L}
	clNumber                        // \p{N}
	clSpace                         // \s
	clNewline                       // \r or \n
	clUpper                         // o200k's [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]
	clLower                         // o200k's [\p{Ll}\p{Lm}\p{Lo}\p{M}]
)

// asciiClasses holds the class of every ASCII rune.
var asciiClasses = func() (t [utf8.RuneSelf]runeClass) {
	for r := range rune(utf8.RuneSelf) {
		t[r] = classOfSlow(r)
	}
	return t
}()

// classOfSlow computes the class of r from the unicode tables.
func classOfSlow(r rune) runeClass {
	var c runeClass
	switch {
	case unicode.IsLetter(r):
		c |= clLetter
		switch {
		case unicode.IsUpper(r), unicode.IsTitle(r):
			c |= clUpper
		case unicode.IsLower(r):
			c |= clLower
		default: // Lm, Lo
			c |= clUpper | clLower
		}
	case unicode.IsNumber(r):
		c |= clNumber
	case unicode.IsMark(r):
		c |= clUpper | clLower
	case isSpace(r):
		c |= clSpace
		if r == '\r' || r == '\n' {
			c |= clNewline
		}
	}
	return c
}

// classAt returns the class and the size of the rune at s[i:]; at the end of s it returns
// size 0 and no class.
func classAt(s string, i int) (runeClass, int) {
	if i >= len(s) {
		return 0, 0
	}
	if b := s[i]; b < utf8.RuneSelf {
		return asciiClasses[b], 1
	}
	r, size := utf8.DecodeRuneInString(s[i:])
	return classOfSlow(r), size
}

// isPunct reports whether c is in [^\s\p{L}\p{N}].
func (c runeClass) isPunct() bool { return c&(clLetter|clNumber|clSpace) == 0 }

// isPrefix reports whether c is in [^\r\n\p{L}\p{N}], the optional first rune of a word.
func (c runeClass) isPrefix() bool { return c&(clLetter|clNumber|clNewline) == 0 }

// runEnd returns the end of the run of runes in class want that starts at i.
func runEnd(s string, i int, want runeClass) int {
	for {
		c, size := classAt(s, i)
		if size == 0 || c&want == 0 {
			return i
		}
		i += size
	}
}

// punctEnd returns the end of the run of [^\s\p{L}\p{N}] that starts at i.
func punctEnd(s string, i int) int {
	for {
		c, size := classAt(s, i)
		if size == 0 || !c.isPunct() {
			return i
		}
		i += size
	}
}

// bytesEnd returns the end of the run of bytes from set (ASCII bytes only) that starts at i.
func bytesEnd(s string, i int, a, b, c byte) int {
	for i < len(s) && (s[i] == a || s[i] == b || s[i] == c) {
		i++
	}
	return i
}

// contractionEnd matches (?i:'s|'t|'re|'ve|'m|'ll|'d) at i and returns its end, or -1. The
// only runes whose unicode.ToLower (regexp2's case folding) is one of these letters are the
// ASCII letters themselves, so folding is an ASCII OR.
func contractionEnd(s string, i int) int {
	if i+1 >= len(s) || s[i] != '\'' {
		return -1
	}
	switch s[i+1] | 0x20 {
	case 's', 't', 'm', 'd':
		return i + 2
	case 'r', 'v':
		if i+2 < len(s) && s[i+2]|0x20 == 'e' {
			return i + 3
		}
	case 'l':
		if i+2 < len(s) && s[i+2]|0x20 == 'l' {
			return i + 3
		}
	}
	return -1
}

// spaceEnd matches the three whitespace alternatives shared by both patterns,
// \s*[\r\n]+|\s+(?!\S)|\s+, at i, where a whitespace rune starts.
func spaceEnd(s string, i int) int {
	// \s*[\r\n]+: \s* takes the whole run and gives it back rune by rune until [\r\n]+ can
	// start, so the piece ends after the last \r or \n of the run.
	j, lastNL, lastSize := i, -1, 0
	for {
		c, size := classAt(s, j)
		if size == 0 || c&clSpace == 0 {
			break
		}
		if c&clNewline != 0 {
			lastNL = j
		}
		j += size
		lastSize = size
	}
	if lastNL >= 0 {
		return lastNL + 1
	}
	// \s+(?!\S): the whole run at the end of the text; else the run less its last rune, which
	// is whitespace, so the look-ahead holds there. A run of one rune falls to \s+.
	if j == len(s) || j-lastSize == i {
		return j
	}
	return j - lastSize
}

// pieceEndCL100K returns the end of the cl100kPattern piece that starts at i < len(s):
//
//	(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
func pieceEndCL100K(s string, i int) int {
	if s[i] == '\'' {
		if e := contractionEnd(s, i); e >= 0 {
			return e
		}
	}
	c, size := classAt(s, i)
	if c&clLetter != 0 {
		return runEnd(s, i+size, clLetter)
	}
	if c.isPrefix() {
		if c1, size1 := classAt(s, i+size); c1&clLetter != 0 {
			return runEnd(s, i+size+size1, clLetter)
		}
	}
	return pieceEndRest(s, i, c, size, '\n')
}

// pieceEndO200K returns the end of the o200kPattern piece that starts at i < len(s). With
// P = [^\r\n\p{L}\p{N}], U = [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}], W = [\p{Ll}\p{Lm}\p{Lo}\p{M}] and
// C = (?i:'s|'t|'re|'ve|'m|'ll|'d), the pattern is
//
//	P?U*W+C?|P?U+W*C?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// The backtracking order is: the first alternative with P taken, then without; then the
// second alternative the same way; and so on.
func pieceEndO200K(s string, i int) int {
	c, size := classAt(s, i)
	prefix := c.isPrefix()
	if prefix {
		if e := o200kWordLower(s, i+size); e >= 0 {
			return e
		}
	}
	if e := o200kWordLower(s, i); e >= 0 {
		return e
	}
	if prefix {
		if e := o200kWordUpper(s, i+size); e >= 0 {
			return e
		}
	}
	if e := o200kWordUpper(s, i); e >= 0 {
		return e
	}
	return pieceEndRest(s, i, c, size, '/')
}

// pieceEndRest returns the end of the piece at i (whose rune is of class c and size bytes) by
// the alternatives both patterns end with, once their letter alternatives failed:
//
//	\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n<also>]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// where also is '\n' for cl100k (nothing more) and '/' for o200k.
func pieceEndRest(s string, i int, c runeClass, size int, also byte) int {
	if c&clNumber != 0 {
		j := i + size
		for range 2 {
			c1, size1 := classAt(s, j)
			if c1&clNumber == 0 {
				break
			}
			j += size1
		}
		return j
	}
	if s[i] == ' ' {
		if c1, size1 := classAt(s, i+1); size1 != 0 && c1.isPunct() {
			return bytesEnd(s, punctEnd(s, i+1), '\r', '\n', also)
		}
	}
	if c.isPunct() {
		return bytesEnd(s, punctEnd(s, i), '\r', '\n', also)
	}
	return spaceEnd(s, i)
}

// o200kWordLower matches U*W+C? at i and returns its end, or -1. U* is greedy and gives back
// rune by rune until W+ can start: after the whole U run if the next rune is in W (then it is
// \p{Ll}, since it is not in U), else at the last rune of the run that is also in W.
func o200kWordLower(s string, i int) int {
	j, lastBoth := i, -1
	for {
		c, size := classAt(s, j)
		if size == 0 || c&clUpper == 0 {
			break
		}
		if c&clLower != 0 {
			lastBoth = j
		}
		j += size
	}
	w := j
	if c, size := classAt(s, j); size == 0 || c&clLower == 0 {
		if lastBoth < 0 {
			return -1
		}
		w = lastBoth
	}
	return optContraction(s, runEnd(s, w, clLower))
}

// o200kWordUpper matches U+W*C? at i and returns its end, or -1.
func o200kWordUpper(s string, i int) int {
	j := runEnd(s, i, clUpper)
	if j == i {
		return -1
	}
	return optContraction(s, runEnd(s, j, clLower))
}

// optContraction matches C? at i: the end of a contraction there, else i.
func optContraction(s string, i int) int {
	if e := contractionEnd(s, i); e >= 0 {
		return e
	}
	return i
}
