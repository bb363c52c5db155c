package tiktoken

import (
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/dlclark/regexp2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The encodings are built once for the whole test binary: each build costs 50 to 200 ms.
var (
	testCL100K = sync.OnceValues(func() (*Encoding, error) { return New(CL100K) })
	testO200K  = sync.OnceValues(func() (*Encoding, error) { return New(O200K) })
)

// testEncodings returns both encodings, cl100k_base first.
func testEncodings(tb testing.TB) []*Encoding {
	tb.Helper()
	cl, err := testCL100K()
	require.NoError(tb, err)
	o, err := testO200K()
	require.NoError(tb, err)
	return []*Encoding{cl, o}
}

func TestNew(t *testing.T) {
	encs := testEncodings(t)
	cl, o := encs[0], encs[1]
	assert.Equal(t, CL100K, cl.Name())
	assert.Equal(t, O200K, o.Name())
	for _, name := range []string{"", "p50k_base", "cl100k"} {
		_, err := New(name)
		assert.ErrorContains(t, err, "tiktoken: unknown encoding", "%q", name)
	}

	// Reference counts from OpenAI's tiktoken.
	for _, tt := range []struct {
		text       string
		cl, o200kN int
	}{
		{"", 0, 0},
		{"hello world", 2, 2},
		{"tiktoken is great!", 6, 6},
		{"<|endoftext|>", 7, 7}, // special tokens are ordinary text
	} {
		assert.Equal(t, tt.cl, cl.CountTokens(tt.text), "cl100k %q", tt.text)
		assert.Equal(t, tt.o200kN, o.CountTokens(tt.text), "o200k %q", tt.text)
	}
}

// pieces returns the pre-tokenizer piece boundaries (byte offsets) of text under pattern.
func pieceBoundaries(tb testing.TB, pattern, text string) map[int]bool {
	tb.Helper()
	re := regexp2.MustCompile(pattern, regexp2.None)
	runes := []rune(text)
	// Byte offset of every rune index.
	off := make([]int, len(runes)+1)
	for i, r := range runes {
		off[i+1] = off[i] + utf8.RuneLen(r)
	}
	if !utf8.ValidString(text) {
		tb.Fatalf("pieceBoundaries needs valid UTF-8")
	}
	bounds := map[int]bool{0: true, len(text): true}
	m, err := re.FindStringMatch(text)
	require.NoError(tb, err)
	end := 0
	for m != nil {
		require.Equal(tb, end, m.Index, "pieces must tile the text")
		end = m.Index + m.Length
		bounds[off[end]] = true
		m, err = re.FindNextMatch(m)
		require.NoError(tb, err)
	}
	require.Equal(tb, len(runes), end)
	return bounds
}

func splitAll(text string, chunkMax int) []string {
	var out []string
	for c := range splitChunksN(text, chunkMax) {
		out = append(out, c)
	}
	return out
}

// randomText builds text from fragments that exercise every rule of the splitter: letters of
// several scripts, marks, apostrophes and contractions, digits of two scripts, punctuation,
// whitespace of every kind.
func randomText(r *rand.Rand, n int) string {
	frags := []string{
		"hello", "World", "don't", "I'M", "we'll", "'s", "'", "''", "x", "é", "e\u0301", "\u0301",
		"a\u0300\u0301b", "Ωμέγα", "Привет", "日本語", "한국어", "مرحبا", "ﬁ", "ǅ", "ʰ",
		"0", "12", "123", "4567", "٣٤٥", "½", "Ⅻ", "3.14", "1e9",
		" ", "  ", "\t", "\n", "\r\n", "\n\n", " \n ", "\u00a0", "\u3000",
		".", ",", "!?", "--", "/", "//", "->", "{", "}", "\"", "`", "_", "__init__", "$", "€", "😀",
		"\u200d", "\ufeff", "\v", "\f", "\u0085", "\u2028",
	}
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(frags[r.IntN(len(frags))])
	}
	return b.String()
}

// TestTokenSplitExactBoundaries checks the claim behind the splitter: every cut it makes when it is
// allowed to cut at every candidate (chunkMax 1) is a piece boundary of both
// pre-tokenizer patterns, and counting the chunks gives the unsplit count.
func TestTokenSplitExactBoundaries(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	encs := testEncodings(t)
	for iter := range 1000 {
		text := randomText(r, 20+r.IntN(200))
		cs := splitAll(text, 1)
		require.Equal(t, text, strings.Join(cs, ""))
		for _, pat := range []string{cl100kPattern, o200kPattern} {
			bounds := pieceBoundaries(t, pat, text)
			off := 0
			for _, c := range cs[:len(cs)-1] {
				off += len(c)
				require.True(t, bounds[off], "iter %d: cut at %d in %q (left %q right %q) is not a piece boundary of %.20s…",
					iter, off, text, text[max(0, off-8):off], text[off:min(len(text), off+8)], pat)
			}
		}
		for _, enc := range encs {
			n := 0
			for _, c := range cs {
				n += enc.countReference(t, c)
			}
			require.Equal(t, enc.countReference(t, text), n, "%s %q", enc.Name(), text)
		}
	}
}

// TestTokenSplitMarkCounterexample documents why a mark does not end a letter run for the splitter:
// after a combining mark, the next piece may continue into punctuation.
func TestTokenSplitMarkCounterexample(t *testing.T) {
	for _, tt := range []struct {
		pattern, text string
		cut           int // byte offset right after the mark
	}{
		{cl100kPattern, "e\u0301.", 3}, // cl100k: pieces "e", "\u0301."
		{o200kPattern, "..\u0301.", 4}, // o200k: one punctuation piece
	} {
		assert.False(t, pieceBoundaries(t, tt.pattern, tt.text)[tt.cut], "%q", tt.text)
		assert.Len(t, splitAll(tt.text, 1), 1, "the splitter must not cut %q after the mark", tt.text)
	}
}

// TestTokenSplitChunks checks the chunks of texts with and without exact boundaries: they
// concatenate to the text and are cut at rune boundaries; text with frequent exact boundaries
// is cut within about chunkMax bytes, a run without any stays one chunk.
func TestTokenSplitChunks(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for name, tt := range map[string]struct {
		text    string
		bounded bool // cut into chunks of at most chunkMax+utf8.UTFMax bytes
	}{
		"empty":      {"", true},
		"short":      {"hello", true},
		"random":     {randomText(r, 50_000), true},
		"invalid":    {strings.Repeat("ab\xff\xfe c", 3_000), true},
		"digits":     {strings.Repeat("1234567890", 1_000), true},
		"spaces":     {strings.Repeat(" ", 10_000), false},
		"letter":     {strings.Repeat("a", 10_000), false},
		"cjk":        {strings.Repeat("日本語", 3_000), false},
		"marks":      {"a" + strings.Repeat("\u0301", 5_000), false},
		"whitespace": {strings.Repeat("\n \n \t", 3_000), false},
	} {
		t.Run(name, func(t *testing.T) {
			cs := splitAll(tt.text, chunkMax)
			assert.Equal(t, tt.text, strings.Join(cs, ""), "chunks concatenate to the input")
			if !tt.bounded {
				assert.Len(t, cs, 1, "a run without exact boundaries is one chunk")
			}
			for i, c := range cs {
				assert.NotEmpty(t, c)
				if tt.bounded {
					assert.LessOrEqual(t, len(c), chunkMax+utf8.UTFMax, "chunk %d", i)
				}
				if utf8.ValidString(tt.text) {
					assert.True(t, utf8.ValidString(c), "chunk %d cut inside a rune", i)
				}
			}
		})
	}
}

// TestTokenSplitEqualsUnsplitOnProse: on ordinary ASCII prose every cut is exact, so the split count
// equals the unsplit count.
func TestTokenSplitEqualsUnsplitOnProse(t *testing.T) {
	words := strings.Fields(`The durable transcript is the single source of truth. It is append-only; the
	library never rewrites or deletes a record. Counting is a TokenCounter interface, memoized per
	record, and anchored on the provider's usage (input + cache read + cache creation + output).
	Don't feed it unbounded text: it's slow, and we'll see 3,141,592 tokens/s never.`)
	r := rand.New(rand.NewPCG(5, 6))
	var b strings.Builder
	for b.Len() < 200_000 {
		b.WriteString(words[r.IntN(len(words))])
		if r.IntN(12) == 0 {
			b.WriteString("\n\n")
		} else {
			b.WriteByte(' ')
		}
	}
	text := b.String()
	for _, enc := range testEncodings(t) {
		assert.Equal(t, enc.countReference(t, text), enc.CountTokens(text), enc.Name())
	}
}

var pathologicalCases = []struct {
	name string
	unit string
	// Expected tokens per MiB, loose bounds.
	lo, hi int
}{
	{"spaces", " ", 1 << 10, 1 << 16},
	{"letter", "a", 1 << 10, 1 << 18},
	{"cjk", "日本語中文字", 1 << 16, 1 << 20},
	{"dashes", "-", 1 << 10, 1 << 18},
	{"base64", "", 1 << 17, 1 << 20},
	{"mixed-whitespace", "\n \n \t", 1 << 12, 1 << 19},
}

func pathologicalText(name, unit string, size int) string {
	if name == "base64" {
		r := rand.New(rand.NewPCG(7, 8))
		const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
		b := make([]byte, size)
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		return string(b)
	}
	return strings.Repeat(unit, size/len(unit))
}

// TestCountPathological counts 1 MiB (cl100k) and 256 KiB (o200k, and base64, which is linear
// anyway) of each pathological input.
// Unsplit, each of these takes minutes; the timing itself is measured by
// BenchmarkCountPathological, not asserted here.
func TestCountPathological(t *testing.T) {
	if testing.Short() {
		t.Skip("1 MiB inputs")
	}
	for _, enc := range testEncodings(t) {
		for _, tt := range pathologicalCases {
			size := 1 << 20
			if enc.Name() == O200K || tt.name == "base64" {
				size = 256 << 10 // base64 is linear; o200k shares the splitter
			}
			t.Run(enc.Name()+"/"+tt.name, func(t *testing.T) {
				t.Parallel()
				text := pathologicalText(tt.name, tt.unit, size)
				n := enc.CountTokens(text)
				t.Logf("%d bytes: %d tokens", len(text), n)
				scale := float64(len(text)) / (1 << 20)
				assert.Greater(t, n, 0)
				assert.GreaterOrEqual(t, n, int(float64(tt.lo)*scale))
				assert.LessOrEqual(t, n, int(float64(tt.hi)*scale))
			})
		}
	}
}

// BenchmarkCountPathological counts 1 MiB of each pathological input, chunked (unsplit would
// take minutes per case): cl100k as <case>, o200k as <case>-o200k.
func BenchmarkCountPathological(b *testing.B) {
	encs := testEncodings(b)
	for _, tt := range pathologicalCases {
		text := pathologicalText(tt.name, tt.unit, 1<<20)
		for _, enc := range encs {
			name := tt.name
			if enc.Name() == O200K {
				name += "-o200k"
			}
			b.Run(name, func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(len(text)))
				tokens := 0
				for b.Loop() {
					tokens = enc.CountTokens(text)
				}
				b.ReportMetric(float64(tokens), "tokens/op")
			})
		}
	}
}
