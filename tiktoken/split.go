package tiktoken

import (
	"unicode"
	"unicode/utf8"
)

// chunkMax bounds one chunk, in bytes, where the text allows: chunks are cut at the latest
// exact boundary once they reach chunkMax bytes, so a chunk is longer only when it holds no
// exact boundary past its first chunkMax bytes (a long run of spaces, of one letter, of
// dashes). Such a run is counted whole, as tiktoken counts it: the byte-pair merge of a long
// piece costs O(n log n) (see mergeHeap), so no cut is needed to bound it.
const chunkMax = 2048

// splitChunks yields consecutive chunks of text whose concatenation is text. Every cut is at a
// rune boundary, and wherever possible at a position that is a pre-tokenizer piece boundary for
// both cl100k_base and o200k_base, so that counting chunk by chunk gives exactly the count of
// the whole text.
//
// Exact boundaries. Let p be the rune before position i and c the rune at i. Position i is a
// piece boundary for both patterns (see cl100kPattern and o200kPattern) in these cases:
//
//  1. p is a letter (\p{L}, unicode.IsLetter) and c is not a letter, not a mark (\p{M}) and
//     not an ASCII apostrophe. The only alternatives that can hold a letter are the letter
//     alternatives (cl100k: [^\r\n\p{L}\p{N}]?\p{L}+; o200k: prefix, letter/mark body,
//     optional contraction) and cl100k's contraction alternative (?i:'s|…). After a letter,
//     such a piece can continue only with another letter (cl100k), a letter or mark (o200k
//     body), or an apostrophe (o200k contraction suffix); the cl100k contraction ends with
//     its letter. No other alternative can contain p: the \p{N}, punctuation and \s
//     alternatives exclude \p{L}. So no piece contains both p and c.
//  2. p is a number (\p{N}) and c is not, or p is neither a number nor whitespace (\s,
//     unicode.IsSpace) and c is a number. Only \p{N}{1,3} can hold a number, and it holds
//     nothing else. (Whitespace before a number is a piece boundary too, but not a safe cut:
//     see the look-ahead below.)
//  3. Inside a run of numbers, every third rune counted from the start of the run (which is a
//     boundary by case 2): \p{N}{1,3} is greedy and no earlier alternative can start with a
//     number, so the run is cut into 3,3,…,rest.
//
// A mark is not a safe p, although o200k's letter alternatives include marks: in cl100k marks
// are not \p{L} and fall into the punctuation alternative, so "e\u0301." is pieces "e" and
// "\u0301." (one piece from the mark into the '.'); in o200k "..\u0301." is one punctuation
// piece. TestTokenSplitMarkCounterexample checks both.
//
// Being a piece boundary is not enough: each chunk must also be pre-tokenized as it is inside
// the whole text. The patterns have no look-behind, so the right chunk is. In the left chunk,
// the regexp explores the same paths in the same order as in the whole text; a path that
// reads past the cut fails there, and in the whole text it fails too (or ends beyond i, which
// a piece boundary rules out), with one exception: the negative look-ahead (?!\S) of
// \s+(?!\S) succeeds at the end of the chunk but fails before a non-space c. It is tried
// only when p is whitespace. Example: "½  1" is pieces "½", " ", " ", "1", but the chunk
// "½  " ends in the piece "  ". No exact case allows a whitespace p, so the pieces of the
// whole text are the pieces of the chunks and the token count is the sum.
//
// The splitter never cuts anywhere else: text without such a boundary (runs of spaces, of one
// letter, CJK without punctuation, "-----", mixed whitespace) stays in one chunk however long,
// so the count is the count of the whole text.
func splitChunks(text string) func(yield func(string) bool) {
	return splitChunksN(text, chunkMax)
}

// splitChunksN is splitChunks with an explicit chunk size; tests use 1 to cut at every
// candidate.
func splitChunksN(text string, chunkMax int) func(yield func(string) bool) {
	return func(yield func(string) bool) {
		if len(text) <= chunkMax {
			if text != "" {
				yield(text)
			}
			return
		}
		start := 0    // start of the current chunk
		lastCut := 0  // latest exact boundary, ≥ start
		numRunes := 0 // length in runes of the run of numbers ending before i
		prevLetter, prevNumber, prevSpace := false, false, false
		for i := 0; i < len(text); {
			c, size := rune(text[i]), 1
			if c >= utf8.RuneSelf {
				c, size = utf8.DecodeRuneInString(text[i:])
			}
			isLetter, isNumber := classify(c)
			if i > 0 {
				var exact bool
				switch {
				case prevLetter:
					exact = !isLetter && c != '\'' && !isMark(c) // case 1
				case prevNumber && isNumber:
					exact = numRunes%3 == 0 // case 3
				case prevNumber:
					exact = true // case 2: number → non-number
				default:
					exact = isNumber && !prevSpace // case 2: non-number, non-space → number
				}
				if exact {
					lastCut = i
				}
				if i-start >= chunkMax && lastCut > start {
					// Full chunk: cut at the latest exact boundary.
					if !yield(text[start:lastCut]) {
						return
					}
					start = lastCut
				}
			}
			if isNumber {
				numRunes++
			} else {
				numRunes = 0
			}
			prevLetter, prevNumber, prevSpace = isLetter, isNumber, isSpace(c)
			i += size
		}
		if start < len(text) {
			yield(text[start:])
		}
	}
}

// classify reports whether r is a letter (\p{L}) and whether it is a number (\p{N}), with an
// ASCII fast path.
func classify(r rune) (letter, number bool) {
	if r < utf8.RuneSelf {
		switch {
		case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z':
			return true, false
		case '0' <= r && r <= '9':
			return false, true
		}
		return false, false
	}
	return unicode.IsLetter(r), unicode.IsNumber(r)
}

func isMark(r rune) bool { return r >= utf8.RuneSelf && unicode.IsMark(r) }

// isSpace matches \s of regexp2 (unicode.IsSpace), with an ASCII fast path.
func isSpace(r rune) bool {
	if r < utf8.RuneSelf {
		return r == ' ' || '\t' <= r && r <= '\r'
	}
	return unicode.IsSpace(r)
}
