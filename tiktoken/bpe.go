package tiktoken

import (
	"math"
	"unicode/utf8"
)

// bpeTable is the rank table of a tiktoken encoding (token bytes → rank; a lower rank merges
// first) with the pre-tokenizer of its pattern. It counts tokens exactly as tiktoken-go's
// EncodeOrdinary does, without building tiktoken-go's CoreBPE.
type bpeTable struct {
	ranks *rankTable
	// pieceEnd returns the end of the pre-tokenizer piece that starts at i (see
	// pieceEndCL100K).
	pieceEnd func(s string, i int) int
}

// countChunk returns the number of tokens of text, pre-tokenized and merged as one unit.
//
// tiktoken-go runs its pattern on []rune(text) and encodes string(runes[a:b]) for each match,
// so every byte of an invalid UTF-8 sequence becomes U+FFFD before it is encoded. Text that is
// not valid UTF-8 is converted the same way first (the only allocation on this path, rare).
func (t *bpeTable) countChunk(text string) int {
	if !utf8.ValidString(text) {
		text = string([]rune(text))
	}
	n := 0
	for i := 0; i < len(text); {
		j := t.pieceEnd(text, i)
		n += t.countPiece(text[i:j])
		i = j
	}
	return n
}

// countPiece returns the number of tokens of one pre-tokenizer piece: one when the piece is a
// token (most are), else the number of parts the byte-pair merge leaves.
func (t *bpeTable) countPiece(piece string) int {
	if len(piece) == 1 {
		return 1
	}
	if _, ok := t.ranks.rank(piece); ok {
		return 1
	}
	return t.mergeCount(piece)
}

// Merge scratch sizes, in parts (a piece of n bytes needs n+1). Go zeroes a stack array on
// every call, so the common short piece gets a small array, and mergeLong a larger one only
// when it is called. The splitter keeps pieces within about runMax bytes (three times that for
// invalid UTF-8, as each bad byte becomes a 3-byte U+FFFD); only longer pieces, which occur
// only when a text is counted unsplit, allocate.
const (
	bpeShortParts = 64
	bpeLongParts  = 512
)

// bpePart is one part of a piece during the merge: its start offset and the rank of the pair
// it forms with the next part (noRank when that pair is no token).
type bpePart struct {
	start, rank int32
}

// noRank marks a pair of parts that is no token.
const noRank = math.MaxInt32

// mergeCount runs the byte-pair merge of tiktoken (as tiktoken-go's bytePairMerge does it):
// start from single bytes; repeatedly merge the adjacent pair with the lowest rank, the
// leftmost one on a tie; stop when no adjacent pair is a token. It returns the number of
// parts left, which is the number of tokens.
func (t *bpeTable) mergeCount(piece string) int {
	n := len(piece) + 1
	if n > bpeShortParts {
		return t.mergeLong(piece)
	}
	var stack [bpeShortParts]bpePart
	return t.merge(piece, stack[:n])
}

// mergeLong is mergeCount for pieces longer than bpeShortParts-1 bytes.
//
//go:noinline
func (t *bpeTable) mergeLong(piece string) int {
	n := len(piece) + 1
	if n > bpeLongParts {
		return t.merge(piece, make([]bpePart, n))
	}
	var stack [bpeLongParts]bpePart
	return t.merge(piece, stack[:n])
}

// merge is mergeCount on a scratch slice of len(piece)+1 parts.
func (t *bpeTable) merge(piece string, parts []bpePart) int {
	for i := range parts {
		parts[i] = bpePart{start: int32(i), rank: noRank}
	}
	// rank returns the rank of the bytes spanning parts i..i+skip+1, or noRank.
	rank := func(i, skip int) int32 {
		if i+skip+2 < len(parts) {
			if r, ok := t.ranks.rank(piece[parts[i].start:parts[i+skip+2].start]); ok {
				return int32(r)
			}
		}
		return noRank
	}
	for i := 0; i < len(parts)-2; i++ {
		parts[i].rank = rank(i, 0)
	}
	for len(parts) > 1 {
		minRank, minIdx := int32(noRank), -1
		for i := 0; i < len(parts)-1; i++ {
			if parts[i].rank < minRank {
				minRank, minIdx = parts[i].rank, i
			}
		}
		if minRank == noRank {
			break
		}
		i := minIdx
		parts[i].rank = rank(i, 1)
		if i > 0 {
			parts[i-1].rank = rank(i-1, 1)
		}
		parts = append(parts[:i+1], parts[i+2:]...)
	}
	return len(parts) - 1
}
