package agentctx

import (
	"sync"
	"testing"

	"github.com/pkoukk/tiktoken-go"
	tiktoken_loader "github.com/pkoukk/tiktoken-go-loader"
	"github.com/stretchr/testify/require"
)

// The reference counter: tiktoken-go's EncodeOrdinary on the same rank table, the counting path
// the library used before it had its own pre-tokenizer and merge. Tests compare the two.

// referenceSpecial holds the special tokens of each encoding. They are only registered so that
// tiktoken-go's CoreBPE can be built: EncodeOrdinary never interprets them.
var referenceSpecial = map[string]map[string]int{
	EncodingCL100K: {
		tiktoken.ENDOFTEXT:   100257,
		tiktoken.FIM_PREFIX:  100258,
		tiktoken.FIM_MIDDLE:  100259,
		tiktoken.FIM_SUFFIX:  100260,
		tiktoken.ENDOFPROMPT: 100276,
	},
	EncodingO200K: {
		tiktoken.ENDOFTEXT:   199999,
		tiktoken.ENDOFPROMPT: 200018,
	},
}

var referencePatterns = map[string]string{EncodingCL100K: cl100kPattern, EncodingO200K: o200kPattern}

// referenceEncoders builds each encoding's tiktoken-go encoder once per test binary.
var referenceEncoders sync.Map // encoding name → func() (*tiktoken.Tiktoken, error)

// reference returns the tiktoken-go encoder built on t's own rank table.
func (t *TiktokenCounter) reference(tb testing.TB) *tiktoken.Tiktoken {
	tb.Helper()
	enc, err := t.referenceOrErr()
	require.NoError(tb, err)
	return enc
}

// referenceOrErr is reference for callers without a testing.TB.
func (t *TiktokenCounter) referenceOrErr() (*tiktoken.Tiktoken, error) {
	build, _ := referenceEncoders.LoadOrStore(t.name, sync.OnceValues(func() (*tiktoken.Tiktoken, error) {
		return buildReference(t.name)
	}))
	return build.(func() (*tiktoken.Tiktoken, error))()
}

// countReference counts text chunk by chunk with tiktoken-go, as CountTokens did before.
func (t *TiktokenCounter) countReference(tb testing.TB, text string) int {
	enc := t.reference(tb)
	n := 0
	for chunk := range splitChunks(text) {
		n += len(enc.EncodeOrdinary(chunk))
	}
	return n
}

// countUnsplit encodes text in one tiktoken-go call. It is quadratic on long runs; tests use it
// as the reference for the splitter's accuracy.
func (t *TiktokenCounter) countUnsplit(text string) int {
	enc, err := t.referenceOrErr()
	if err != nil {
		panic(err)
	}
	return len(enc.EncodeOrdinary(text))
}

// buildReference builds tiktoken-go's encoder for the named encoding, as the library did
// before: the loader's table, then CoreBPE (which compiles the pattern with regexp2 and keeps a
// decoder map and a sorted token list besides the ranks).
func buildReference(name string) (*tiktoken.Tiktoken, error) {
	special := referenceSpecial[name]
	ranks, err := tiktoken_loader.NewOfflineLoader().LoadTiktokenBpe(name + ".tiktoken")
	if err != nil {
		return nil, err
	}
	bpe, err := tiktoken.NewCoreBPE(ranks, special, referencePatterns[name])
	if err != nil {
		return nil, err
	}
	specialSet := make(map[string]any, len(special))
	for k := range special {
		specialSet[k] = true
	}
	return tiktoken.NewTiktoken(bpe, &tiktoken.Encoding{
		Name:           name,
		PatStr:         referencePatterns[name],
		MergeableRanks: ranks,
		SpecialTokens:  special,
	}, specialSet), nil
}
