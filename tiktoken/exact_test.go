package tiktoken

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/dlclark/regexp2"
	tiktoken_loader "github.com/pkoukk/tiktoken-go-loader"
	"github.com/pkoukk/tiktoken-go-loader/assets"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// regexpPieces returns the pieces regexp2 matches with pattern in text (valid UTF-8), as
// tiktoken-go finds them.
func regexpPieces(tb testing.TB, re *regexp2.Regexp, text string) []string {
	tb.Helper()
	runes := []rune(text)
	var out []string
	m, err := re.FindStringMatch(text)
	require.NoError(tb, err)
	for m != nil {
		out = append(out, string(runes[m.Index:m.Index+m.Length]))
		m, err = re.FindNextMatch(m)
		require.NoError(tb, err)
	}
	return out
}

// handPieces returns the pieces the hand-written pre-tokenizer cuts text into.
func handPieces(pieceEnd func(string, int) int, text string) []string {
	var out []string
	for i := 0; i < len(text); {
		j := pieceEnd(text, i)
		if j <= i {
			panic("pre-tokenizer made no progress")
		}
		out = append(out, text[i:j])
		i = j
	}
	return out
}

type preTokenizer struct {
	name     string
	re       *regexp2.Regexp
	pieceEnd func(string, int) int
}

func preTokenizers() []preTokenizer {
	return []preTokenizer{
		{CL100K, regexp2.MustCompile(cl100kPattern, regexp2.None), pieceEndCL100K},
		{O200K, regexp2.MustCompile(o200kPattern, regexp2.None), pieceEndO200K},
	}
}

// adversarialTexts are inputs at the edges of the patterns: whitespace runs and their
// look-ahead, Unicode spaces, marks and combining sequences, letters of every case class, digit
// runs, every contraction in both cases and near misses, emoji, invalid UTF-8, long runs.
var adversarialTexts = func() []string {
	texts := []string{
		"", " ", "  ", "\n", "\n\n", "\r\n", "\r\n\r\n  ", "\n \n", "\n \n \n \n", " \n", "\n ",
		"a \n b", "a  b", "a   b", "a\t\tb", "\t", "\t\n\t", "x \t\n y", "  \r\n\r\n  x",
		"a\u00a0b", "\u00a0\u00a0x", "a\u2028b", "\u2028\u2028", "a\u0085b", "\u0085\n", "\u3000x",
		"x\u3000\u3000y", "\u3000", "\v\f", " \v x", "\ufeffx", "\u200bx", "a\u200db",
		"e\u0301", "e\u0301.", "\u0301", "\u0301\u0301a", " \u0301", "a\u0300\u0301b", "..\u0301.",
		"\u0915\u093f", "\u0928\u092e\u0938\u094d\u0924\u0947", "Ⅻ", "ǅungla", "ǅUNGLA", "ʰa", "aʰ",
		"ÀÉÎõü", "ΑΒΓαβγ", "ПриВЕТ", "日本語のテキスト", "中文，标点。", "한국어 텍스트", "مرحبا بالعالم",
		"HTTPServer", "camelCaseWord", "IOError's", "DON'T", "don't", "O'Neil", "l'été",
		"1", "12", "123", "1234", "12345", "123456", "1234567", "٣٤٥٦", "1½", "x2y", "3.14159",
		"a1b22c333d4444", " 42", "\n42", "-42", "$1,000,000",
		"'", "''", "'''", "' s", "'x", "' ", "x'", "x''s", "...'s", "--'ll", " 's", "\n's",
		"😀", "😀😀", "👍🏽", "👨‍👩‍👧", "🇫🇷", "a😀b", " 😀", "\u2603\ufe0f",
		"\xff", "a\xffb", "\xe2\x82", "\xe2\x82x", "\xed\xa0\x80", "\xc0\xaf", "ab\xff\xfe c", "\x80\x80\x80",
		"<|endoftext|>", "<|fim_prefix|>", "func main() {\n\tfmt.Println(\"hi\")\n}\n",
		"{\"a\":[1,2,3],\"b\":null}", "// comment\n/* block */", "path/to/file.go:12:3", "a//b\n//\n",
		"https://example.com/x?y=1&z=2", "C:\\Users\\x", "\x00\x01\x02", "\x7f",
		strings.Repeat(" ", 300), strings.Repeat("\n", 300), strings.Repeat("\n \n", 100),
		strings.Repeat("\r\n\r\n  ", 60), strings.Repeat("\t", 200), strings.Repeat("a", 300),
		strings.Repeat("ab", 200), strings.Repeat("-", 300), strings.Repeat("日本語", 100),
		strings.Repeat("9", 300), strings.Repeat("😀", 80), strings.Repeat("\u00a0", 150),
		strings.Repeat("\xff", 200), strings.Repeat("e\u0301", 100), strings.Repeat("=", 129) + "\n",
	}
	for _, c := range []string{"s", "t", "re", "ve", "m", "ll", "d"} {
		for _, form := range []string{c, strings.ToUpper(c), strings.ToUpper(c[:1]) + c[1:]} {
			texts = append(texts, "'"+form, "it'"+form, "IT'"+form, "x'"+form+"x", " '"+form, "'"+form+"'"+form)
		}
	}
	return texts
}()

// TestTokenPiecesAdversarial checks that the hand-written pre-tokenizers cut exactly the pieces
// regexp2 matches on the adversarial table and on random text built from its fragments.
func TestTokenPiecesAdversarial(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	texts := append([]string(nil), adversarialTexts...)
	for range 2000 {
		var b strings.Builder
		for range 1 + r.IntN(8) {
			b.WriteString(adversarialTexts[r.IntN(len(adversarialTexts))])
		}
		texts = append(texts, b.String())
	}
	for range 500 {
		texts = append(texts, randomText(r, 10+r.IntN(300)))
	}
	for _, pt := range preTokenizers() {
		for _, text := range texts {
			valid := string([]rune(text))
			require.Equal(t, regexpPieces(t, pt.re, valid), handPieces(pt.pieceEnd, valid), "%s %q", pt.name, text)
		}
	}
}

// TestTokenCountAdversarial compares the counts with tiktoken-go's on the adversarial table,
// through the splitter and as one chunk.
func TestTokenCountAdversarial(t *testing.T) {
	for _, enc := range testEncodings(t) {
		for _, text := range adversarialTexts {
			assert.Equal(t, enc.countReference(t, text), enc.CountTokens(text), "%s %q", enc.Name(), text)
			assert.Equal(t, enc.countReference(t, text), enc.bpe.countChunk(text), "%s unsplit %q", enc.Name(), text)
		}
	}
}

// TestTokenRuneClasses checks every rune's class against the tables regexp2 uses for \p{L},
// \p{N}, \s and o200k's letter classes.
func TestTokenRuneClasses(t *testing.T) {
	cat := unicode.Categories
	inAny := func(r rune, names ...string) bool {
		for _, n := range names {
			if unicode.Is(cat[n], r) {
				return true
			}
		}
		return false
	}
	for r := rune(0); r <= unicode.MaxRune; r++ {
		var want runeClass
		if unicode.Is(cat["L"], r) {
			want |= clLetter
		}
		if unicode.Is(cat["N"], r) {
			want |= clNumber
		}
		if unicode.IsSpace(r) {
			want |= clSpace
		}
		if r == '\r' || r == '\n' {
			want |= clNewline
		}
		if inAny(r, "Lu", "Lt", "Lm", "Lo", "M") {
			want |= clUpper
		}
		if inAny(r, "Ll", "Lm", "Lo", "M") {
			want |= clLower
		}
		got := classOfSlow(r)
		if r < utf8.RuneSelf {
			got = asciiClasses[r]
		}
		if got != want {
			t.Fatalf("%U: class %06b, want %06b", r, got, want)
		}
	}
}

// TestTokenContractionFolding checks the ASCII folding of the contractions: the only runes
// that unicode.ToLower (regexp2's case-insensitive comparison) maps to a contraction letter
// are that letter and its ASCII capital.
func TestTokenContractionFolding(t *testing.T) {
	for r := rune(0); r <= unicode.MaxRune; r++ {
		l := unicode.ToLower(r)
		if strings.ContainsRune("strevmld", l) && r != l {
			assert.Equal(t, l, r|0x20, "%U folds to %c", r, l)
		}
	}
}

// TestTokenCountNoAlloc checks that counting valid UTF-8 does not allocate.
func TestTokenCountNoAlloc(t *testing.T) {
	text := strings.Repeat(randomText(rand.New(rand.NewPCG(13, 14)), 4000), 2)
	for _, enc := range testEncodings(t) {
		assert.Zero(t, testing.AllocsPerRun(20, func() { enc.CountTokens(text) }), enc.Name())
	}
}

// FuzzTokenCount compares the counts with tiktoken-go's, through the splitter and (on short
// inputs) as one chunk, and the pre-tokenizer pieces with regexp2's, for both encodings.
func FuzzTokenCount(f *testing.F) {
	for _, s := range adversarialTexts {
		f.Add(s)
	}
	r := rand.New(rand.NewPCG(15, 16))
	for range 20 {
		f.Add(randomText(r, 50+r.IntN(400)))
	}
	encs := testEncodings(f)
	pts := preTokenizers()
	f.Fuzz(func(t *testing.T, text string) {
		for k, enc := range encs {
			want := enc.countReference(t, text)
			require.Equal(t, want, enc.CountTokens(text), "%s %q", enc.Name(), text)
			if len(text) <= 1024 {
				require.Equal(t, want, enc.bpe.countChunk(text), "%s unsplit %q", enc.Name(), text)
				valid := string([]rune(text))
				require.Equal(t, regexpPieces(t, pts[k].re, valid), handPieces(pts[k].pieceEnd, valid), "%s %q", pts[k].name, text)
			}
		}
	})
}

// TestTokenRankTable checks the rank table the counter builds from the embedded file against
// the offline loader's map of the same file: every token is found with its rank, and strings
// that are no token (every two-byte string, and the tokens with one byte changed) are not found.
func TestTokenRankTable(t *testing.T) {
	for _, name := range []string{CL100K, O200K} {
		ranks, err := tiktoken_loader.NewOfflineLoader().LoadTiktokenBpe(name + ".tiktoken")
		require.NoError(t, err)
		data, err := assets.Assets.ReadFile(name + ".tiktoken")
		require.NoError(t, err)
		table, err := newRankTableFile(name+".tiktoken", bytes.NewReader(data))
		require.NoError(t, err)
		require.Equal(t, len(ranks), len(table.long)+countShort(table), name)
		for tok, want := range ranks {
			got, ok := table.rank(tok)
			if !ok || got != want {
				t.Fatalf("%s: rank(%q) = %d, %v; want %d", name, tok, got, ok, want)
			}
			other := []byte(tok)
			other[len(other)-1] ^= 0x5a
			_, isTok := ranks[string(other)]
			_, ok = table.rank(string(other))
			require.Equal(t, isTok, ok, "%s: %q", name, other)
		}
		for i := range 1 << 16 {
			pair := string([]byte{byte(i), byte(i >> 8)})
			_, isTok := ranks[pair]
			_, ok := table.rank(pair)
			require.Equal(t, isTok, ok, "%s: %q", name, pair)
		}
		_, ok := table.rank("")
		assert.False(t, ok)
	}
	for _, tt := range []struct{ file, want string }{
		{"YQ== 0\nYg== -1\n", "x.tiktoken line 2: field rank"},
		{"YQ== 0\n\nYg==\n", "x.tiktoken line 3: field rank"},
		{"YQ== 0\n!!!! 1\n", "x.tiktoken line 2: field token"},
		{" 1\n", "x.tiktoken line 1: field token"},
		{"YQ== 99999999999\n", "x.tiktoken line 1: field rank"},
		{"YQ== 0\n" + strings.Repeat("YQ==", 20_000) + " 1\n", "x.tiktoken line 2: longer than 65536 bytes"},
	} {
		_, err := newRankTableFile("x.tiktoken", strings.NewReader(tt.file))
		assert.ErrorContains(t, err, tt.want, "%q", tt.file)
	}
}

// countShort is the number of tokens in t.short.
func countShort(t *rankTable) int {
	n := 0
	for _, s := range t.short {
		if s.n != 0 {
			n++
		}
	}
	return n
}

// whitespaceRunLengths are the run lengths TestTokenCountWhitespaceRuns counts: every length
// up to 300 (the old splitter cut runs at 128 bytes), then the powers of two up to 4,096 with
// their neighbours and a few lengths between.
func whitespaceRunLengths() []int {
	var ns []int
	for n := 1; n <= 300; n++ {
		ns = append(ns, n)
	}
	for k := 9; k <= 12; k++ {
		ns = append(ns, 1<<k-1, 1<<k, 1<<k+1)
	}
	return append(ns, 383, 700, 1500, 3000, 4000, 4095)
}

// TestTokenCountWhitespaceRuns compares the counts with tiktoken-go's on whole texts holding
// runs of 1 to 4,096 spaces, tabs, newlines and mixes of them, alone and between code (an
// aligned comment, as in generated Go source): the long runs the splitter used to cut.
func TestTokenCountWhitespaceRuns(t *testing.T) {
	units := map[string]string{
		"spaces": " ", "tabs": "\t", "newlines": "\n", "crlf": "\r\n", "space-newline": " \n",
		"tab-space": "\t ", "mixed": " \t\n \u00a0 \u3000\r\n\t",
	}
	contexts := []struct{ before, after string }{
		{"", ""}, {"a},", "// x\n"}, {"x", "y"}, {"", "\n"}, {"1", "2"},
	}
	lengths := whitespaceRunLengths()
	if testing.Short() || underRace {
		// The race detector has nothing concurrent to find in a count: the short runs and
		// the longest one.
		lengths = slices.DeleteFunc(lengths, func(n int) bool { return n > 300 && n != 4096 })
	}
	for _, enc := range testEncodings(t) {
		t.Run(enc.Name(), func(t *testing.T) {
			t.Parallel()
			compared, differ := 0, 0
			for name, unit := range units {
				for _, n := range lengths {
					run := strings.Repeat(unit, n/len([]rune(unit))+1)
					run = string([]rune(run)[:n])
					for _, c := range contexts {
						if n > 300 && c.before == "1" {
							continue // the digits add nothing past the short runs
						}
						text := c.before + run + c.after
						compared++
						if got, want := enc.CountTokens(text), enc.countReference(t, text); got != want {
							differ++
							assert.Equal(t, want, got, "%s: %s × %d in %q…%q", enc.Name(), name, n, c.before, c.after)
						}
					}
				}
			}
			t.Logf("%s: %d texts compared, %d differ", enc.Name(), compared, differ)
		})
	}
}

// TestTokenMergeHeap checks the heap merge against the scanning merge on pieces of 1 to 255
// bytes drawn from small alphabets (so that many pairs merge and ranks tie), and on runs.
func TestTokenMergeHeap(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 18))
	alphabets := []string{" ", " \t\n", "ab", "abc de", "-=_", "0123456789", "日本語"}
	for _, enc := range testEncodings(t) {
		for range 3000 {
			alpha := []rune(alphabets[r.IntN(len(alphabets))])
			var b strings.Builder
			for n := 1 + r.IntN(120); b.Len() < n; {
				b.WriteRune(alpha[r.IntN(len(alpha))])
			}
			piece := b.String()
			if len(piece)+1 > bpeLongParts {
				continue
			}
			want := enc.bpe.merge(piece, make([]bpePart, len(piece)+1))
			require.Equal(t, want, enc.bpe.mergeHeap(piece), "%s %q", enc.Name(), piece)
		}
	}
}
