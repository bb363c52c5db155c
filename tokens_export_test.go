package agentctx

import (
	"testing"

	"github.com/agentctx/agentctx/transcript"
)

// CountReference exports countReference, tiktoken-go's count, to the external benchmarks.
func CountReference(tb testing.TB, t *TiktokenCounter, text string) int {
	return t.countReference(tb, text)
}

// WalkTexts and CorpusTexts export the text walkers of the token tests to the external
// benchmarks.
var (
	WalkTexts   func(transcript.Block, func(string))                  = walkTexts
	CorpusTexts func(testing.TB, int) (texts []string, source string) = corpusTexts
)
