package tiktoken

import (
	"sync"
	"testing"

	tiktokengo "github.com/pkoukk/tiktoken-go"
	tiktoken_loader "github.com/pkoukk/tiktoken-go-loader"
	"github.com/stretchr/testify/require"
)

// The reference counter: tiktoken-go's EncodeOrdinary on the same rank table, the counting path
// the library used before it had its own pre-tokenizer and merge. Tests compare the two.

// referenceSpecial holds the special tokens of each encoding. They are only registered so that
// tiktoken-go's CoreBPE can be built: EncodeOrdinary never interprets them.
var referenceSpecial = map[string]map[string]int{
	CL100K: {
		tiktokengo.ENDOFTEXT:   100257,
		tiktokengo.FIM_PREFIX:  100258,
		tiktokengo.FIM_MIDDLE:  100259,
		tiktokengo.FIM_SUFFIX:  100260,
		tiktokengo.ENDOFPROMPT: 100276,
	},
	O200K: {
		tiktokengo.ENDOFTEXT:   199999,
		tiktokengo.ENDOFPROMPT: 200018,
	},
}

var referencePatterns = map[string]string{CL100K: cl100kPattern, O200K: o200kPattern}

// referenceEncoders builds each encoding's tiktoken-go encoder once per test binary.
var referenceEncoders sync.Map // encoding name → func() (*tiktokengo.Tiktoken, error)

// reference returns the tiktoken-go encoder of e's encoding.
func (e *Encoding) reference(tb testing.TB) *tiktokengo.Tiktoken {
	tb.Helper()
	enc, err := e.referenceOrErr()
	require.NoError(tb, err)
	return enc
}

// referenceOrErr is reference for callers without a testing.TB.
func (e *Encoding) referenceOrErr() (*tiktokengo.Tiktoken, error) {
	build, _ := referenceEncoders.LoadOrStore(e.name, sync.OnceValues(func() (*tiktokengo.Tiktoken, error) {
		return buildReference(e.name)
	}))
	return build.(func() (*tiktokengo.Tiktoken, error))()
}

// countReference counts text with tiktoken-go: EncodeOrdinary on the whole text, in one call.
// It is quadratic in the length of a pre-tokenizer piece (a long run of spaces, say), which
// the tests keep to a few thousand bytes.
func (e *Encoding) countReference(tb testing.TB, text string) int {
	return len(e.reference(tb).EncodeOrdinary(text))
}

// buildReference builds tiktoken-go's encoder for the named encoding, as the library did
// before: the loader's table, then CoreBPE (which compiles the pattern with regexp2 and keeps a
// decoder map and a sorted token list besides the ranks).
func buildReference(name string) (*tiktokengo.Tiktoken, error) {
	special := referenceSpecial[name]
	ranks, err := tiktoken_loader.NewOfflineLoader().LoadTiktokenBpe(name + ".tiktoken")
	if err != nil {
		return nil, err
	}
	bpe, err := tiktokengo.NewCoreBPE(ranks, special, referencePatterns[name])
	if err != nil {
		return nil, err
	}
	specialSet := make(map[string]any, len(special))
	for k := range special {
		specialSet[k] = true
	}
	return tiktokengo.NewTiktoken(bpe, &tiktokengo.Encoding{
		Name:           name,
		PatStr:         referencePatterns[name],
		MergeableRanks: ranks,
		SpecialTokens:  special,
	}, specialSet), nil
}
