package agentctx

import (
	"sync"

	"github.com/agentctx/agentctx/tiktoken"
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

// estimateBytesPerToken is the divisor of [EstimateTokens]. The measured mean on the agent
// transcript mix (Go source, JSON tool output, shell logs, prose) is 2.9 bytes per cl100k token:
// code 2.75, JSON 2.65, logs 3.0, prose 4.3. Dividing by 3 is within a few percent on that
// mix, overcounts prose and undercounts JSON slightly; bytes/4 undercounts the mix by 27 %.
const estimateBytesPerToken = 3

// EstimateTokens is a dependency-free estimate: ceil(len(text) / 3) tokens, counting bytes, not
// runes. It is exact for nothing, fast, and stable across versions, which makes it the counter
// for golden tests.
func EstimateTokens(text string) int {
	return (len(text) + estimateBytesPerToken - 1) / estimateBytesPerToken
}

// EstimateCounter is a [TokenCounter] using [EstimateTokens]. Its zero value is ready to use
// and safe for concurrent use.
type EstimateCounter struct{}

// CountTokens returns [EstimateTokens](text).
func (EstimateCounter) CountTokens(text string) int { return EstimateTokens(text) }

// defaultEncoding is the one lazily initialised package-level value of the library. It is
// allowed because it is an immutable, read-only table (no configuration, no mutable state):
// building it costs tens of milliseconds and megabytes of heap, so building it per Counter or
// per call would dominate every turn.
var defaultEncoding = sync.OnceValues(func() (*tiktoken.Encoding, error) {
	return tiktoken.New(tiktoken.CL100K)
})

// DefaultTokenCounter returns the process-wide cl100k_base [tiktoken.Encoding], building it on
// first use: an exact count of OpenAI's cl100k_base, from tables embedded in the binary. Claude's
// tokenizer is not public, and cl100k_base is a proxy that runs low: on the Claude Code corpus
// it counts 0.79 of the prompt growth the provider reports between responses. The
// provider-reported usage corrects the bulk of it (see [Counter.Totals]). The tables are
// embedded, so building cannot fail in practice; if it did, the dependency-free
// [EstimateCounter] is returned instead.
func DefaultTokenCounter() TokenCounter {
	enc, err := defaultEncoding()
	if err != nil {
		return EstimateCounter{}
	}
	return enc
}
