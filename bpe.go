package agentctx

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

// bpeStackParts is the longest piece (in bytes, plus one) whose merge state is kept on the
// stack. The splitter keeps pieces within about runMax bytes, or three times that for invalid
// UTF-8; longer ones (unsplit counting in tests) allocate.
const bpeStackParts = 512

// bpePart is one part of a piece during the merge: its start offset and the rank of the pair
// it forms with the next part (math.MaxInt when that pair is no token).
type bpePart struct {
	start, rank int
}

// mergeCount runs the byte-pair merge of tiktoken (as tiktoken-go's bytePairMerge does it):
// start from single bytes; repeatedly merge the adjacent pair with the lowest rank, the
// leftmost one on a tie; stop when no adjacent pair is a token. It returns the number of
// parts left, which is the number of tokens.
func (t *bpeTable) mergeCount(piece string) int {
	var stack [bpeStackParts]bpePart
	var parts []bpePart
	if len(piece)+1 <= len(stack) {
		parts = stack[:len(piece)+1]
	} else {
		parts = make([]bpePart, len(piece)+1)
	}
	for i := range parts {
		parts[i] = bpePart{start: i, rank: math.MaxInt}
	}
	// rank returns the rank of the bytes spanning parts i..i+skip+1, or math.MaxInt.
	rank := func(i, skip int) int {
		if i+skip+2 < len(parts) {
			if r, ok := t.ranks.rank(piece[parts[i].start:parts[i+skip+2].start]); ok {
				return r
			}
		}
		return math.MaxInt
	}
	for i := 0; i < len(parts)-2; i++ {
		parts[i].rank = rank(i, 0)
	}
	for len(parts) > 1 {
		minRank, minIdx := math.MaxInt, -1
		for i := 0; i < len(parts)-1; i++ {
			if parts[i].rank < minRank {
				minRank, minIdx = parts[i].rank, i
			}
		}
		if minRank == math.MaxInt {
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
