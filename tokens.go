package agentctx

import (
	"fmt"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/pkoukk/tiktoken-go-loader/assets"
)

// TokenCounter counts the tokens of a piece of text. Implementations must be pure (no I/O, no
// hidden state that changes the result), deterministic (the same text always gives the same
// count) and safe for concurrent use: the library calls CountTokens from many goroutines and
// memoizes the results (see [Counter]). Exact or remote counting belongs in the embedder and
// flows back through the provider-reported [transcript.Usage].
type TokenCounter interface {
	// CountTokens returns the number of tokens in text; 0 for "".
	CountTokens(text string) int
}

// TokenCounterFunc adapts an ordinary function to a [TokenCounter], as http.HandlerFunc does
// for handlers. The function must be pure, deterministic and safe for concurrent use.
type TokenCounterFunc func(text string) int

// CountTokens calls f(text).
func (f TokenCounterFunc) CountTokens(text string) int { return f(text) }

// EstimateBytesPerToken is the divisor of [EstimateTokens]. The measured mean on the agent
// transcript mix (Go source, JSON tool output, shell logs, prose) is 2.9 bytes per cl100k token:
// code 2.75, JSON 2.65, logs 3.0, prose 4.3. Dividing by 3 is within a few percent on that
// mix, overcounts prose and undercounts JSON slightly; bytes/4 undercounts the mix by 27 %.
const EstimateBytesPerToken = 3

// EstimateTokens is a dependency-free estimate: ceil(len(text) / 3) tokens, counting bytes, not
// runes. It is exact for nothing, fast, and stable across versions, which makes it the counter
// for golden tests.
func EstimateTokens(text string) int {
	return (len(text) + EstimateBytesPerToken - 1) / EstimateBytesPerToken
}

// EstimateCounter is a [TokenCounter] using [EstimateTokens]. Its zero value is ready to use
// and safe for concurrent use.
type EstimateCounter struct{}

// CountTokens returns [EstimateTokens](text).
func (EstimateCounter) CountTokens(text string) int { return EstimateTokens(text) }

// Tiktoken encodings supported by [NewTiktokenCounter].
const (
	EncodingCL100K = "cl100k_base"
	EncodingO200K  = "o200k_base"
)

// Pre-tokenizer patterns, copied from github.com/pkoukk/tiktoken-go@v0.1.8/encoding.go (which
// copies them from OpenAI's tiktoken). Counting does not run them as regular expressions: the
// hand-written pre-tokenizers pieceEndCL100K and pieceEndO200K cut the same pieces, and the
// tests check them against tiktoken-go, which runs these patterns with regexp2.
const (
	cl100kPattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	o200kPattern  = `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?` +
		`|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?` +
		`|\p{N}{1,3}` +
		`| ?[^\s\p{L}\p{N}]+[\r\n/]*` +
		`|\s*[\r\n]+` +
		`|\s+(?!\S)` +
		`|\s+`
)

// pieceEndFor returns the pre-tokenizer of the named encoding.
func pieceEndFor(name string) (func(s string, i int) int, error) {
	switch name {
	case EncodingCL100K:
		return pieceEndCL100K, nil
	case EncodingO200K:
		return pieceEndO200K, nil
	}
	return nil, fmt.Errorf("agentctx: unknown tiktoken encoding %q (want %q or %q)", name, EncodingCL100K, EncodingO200K)
}

// TiktokenCounter is a [TokenCounter] that counts exactly as OpenAI's tiktoken (and
// github.com/pkoukk/tiktoken-go's EncodeOrdinary) on each chunk, with the BPE tables embedded
// in the binary (github.com/pkoukk/tiktoken-go-loader): it never touches the network or the
// file system. Claude's tokenizer is not public. cl100k_base is a proxy that runs low: on the
// Claude Code corpus it counts 0.79 of the prompt growth the provider reports between
// responses. The provider-reported usage corrects the bulk of it (see [Counter.Totals]).
//
// Text is split into chunks of at most 2 KiB before encoding (see splitChunks), which keeps the
// cost linear on pathological input (the byte-pair merge is quadratic in the length of one
// pre-tokenizer piece). On ordinary text the count equals the unsplit count; long runs without
// a letter/digit boundary may differ by about one token per 128 bytes.
//
// Counting runs a hand-written pre-tokenizer (the encoding's pattern, matched as regexp2
// matches it) and tiktoken's byte-pair merge on a rank table built for short lookups; it does
// not allocate on valid UTF-8. Side by side with tiktoken-go in one run it is 10 to 20 times
// as fast on the Claude Code corpus mix and 30 to 50 times on the generated 2,000-turn session
// (BenchmarkTokenCount), and allocates nothing where tiktoken-go allocated over 100 bytes per
// byte counted.
//
// A TiktokenCounter is immutable and safe for concurrent use; the zero value is not usable.
// Building one decodes a 1.7 MB (cl100k) or 3.6 MB (o200k) embedded table, which is most of
// its cost (tens to hundreds of milliseconds), and keeps about 3.4 MB (cl100k) or 6.7 MB
// (o200k) of heap (BenchmarkTokenCounterBuild): build it once per process and share it.
type TiktokenCounter struct {
	name string
	bpe  bpeTable
}

// NewTiktokenCounter returns a counter for the named encoding: [EncodingCL100K] ("" means the
// same) or [EncodingO200K]. For cl100k_base it returns the process-wide instance of
// [DefaultTokenCounter]; every other call builds a new table, so callers should keep the result.
func NewTiktokenCounter(encoding string) (*TiktokenCounter, error) {
	if encoding == "" || encoding == EncodingCL100K {
		return defaultTiktoken()
	}
	return buildTiktoken(encoding)
}

// defaultTiktoken is the one lazily initialised package-level value of the library. It is
// allowed because it is an immutable, read-only table (no configuration, no mutable state):
// building it costs ~100 ms and megabytes of heap, so building it per Counter or per call
// would dominate every turn.
var defaultTiktoken = sync.OnceValues(func() (*TiktokenCounter, error) {
	return buildTiktoken(EncodingCL100K)
})

// DefaultTokenCounter returns the process-wide cl100k_base [TiktokenCounter], building it on
// first use. The tables are embedded, so building cannot fail in practice; if it did, the
// dependency-free [EstimateCounter] is returned instead.
func DefaultTokenCounter() TokenCounter {
	tc, err := defaultTiktoken()
	if err != nil {
		return EstimateCounter{}
	}
	return tc
}

func buildTiktoken(name string) (*TiktokenCounter, error) {
	pieceEnd, err := pieceEndFor(name)
	if err != nil {
		return nil, err
	}
	// The offline loader's embedded table, read as its LoadTiktokenBpe reads it (the test
	// TestTokenRankTableFile checks the two agree) but straight into the rank table.
	file := name + ".tiktoken"
	data, err := assets.Assets.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("agentctx: load %s: %w", name, err)
	}
	table, err := newRankTableFile(file, data)
	if err != nil {
		return nil, err
	}
	return &TiktokenCounter{name: name, bpe: bpeTable{ranks: table, pieceEnd: pieceEnd}}, nil
}

// Encoding returns the encoding name, e.g. "cl100k_base".
func (t *TiktokenCounter) Encoding() string { return t.name }

// CountTokens returns the number of tokens of text, counted chunk by chunk as tiktoken's
// ordinary encoding counts them (special-token strings such as "<|endoftext|>" in the text
// count as ordinary text).
func (t *TiktokenCounter) CountTokens(text string) int {
	n := 0
	for chunk := range splitChunks(text) {
		n += t.bpe.countChunk(chunk)
	}
	return n
}

// Chunking limits, in bytes.
const (
	// chunkMax bounds one countChunk call. Chunks are cut at the latest exact boundary
	// before chunkMax, so they are chunkMax-runMax..chunkMax bytes long except the last.
	chunkMax = 2048
	// runMax bounds the distance between two cut candidates: after runMax bytes without an
	// exact boundary the text is hard-cut at a rune boundary. A pre-tokenizer piece therefore
	// never exceeds runMax bytes (plus one rune), which bounds the quadratic merge
	// to runMax² per piece.
	runMax = 128
)

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
// Text without such a boundary for more than runMax bytes (runs of spaces, of one letter,
// CJK without punctuation, "-----", mixed whitespace) is hard-cut at a rune boundary; each
// hard cut may change the count by about one token.
func splitChunks(text string) func(yield func(string) bool) {
	return splitChunksN(text, chunkMax, runMax)
}

// splitChunksN is splitChunks with explicit limits; tests use tiny limits to cut at every
// candidate.
func splitChunksN(text string, chunkMax, runMax int) func(yield func(string) bool) {
	return func(yield func(string) bool) {
		if len(text) <= runMax && len(text) <= chunkMax {
			if text != "" {
				yield(text)
			}
			return
		}
		start := 0    // start of the current chunk
		lastCut := 0  // latest exact boundary or hard cut, ≥ start
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
				switch {
				case exact:
					lastCut = i
				case i-lastCut >= runMax:
					// Hard cut: no exact boundary for runMax bytes. Cut here and now, so no
					// piece grows beyond runMax.
					if !yield(text[start:i]) {
						return
					}
					start, lastCut = i, i
				}
				if i-start >= chunkMax && lastCut > start {
					// Full chunk: cut at the latest candidate, which is within runMax of i when
					// chunkMax > runMax.
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
