// Package tiktoken is an exact, allocation-light token counter for OpenAI's cl100k_base and
// o200k_base encodings, which agentctx uses to count tokens (its default counter is the
// cl100k_base [Encoding]).
//
// The counts are those of OpenAI's tiktoken and of github.com/pkoukk/tiktoken-go's
// EncodeOrdinary: special-token strings count as ordinary text. The rank tables are embedded
// in the binary (github.com/pkoukk/tiktoken-go-loader), so counting never touches the network
// or the file system. The package does not run the encodings' regular expressions: a
// hand-written pre-tokenizer cuts the pieces regexp2 would match, and tiktoken's byte-pair
// merge runs on a rank table laid out for short lookups, without allocating on valid UTF-8.
// The tests compare both with tiktoken-go on adversarial tables, on the shared corpus and
// under a fuzz target.
//
// Only token counts are computed: the package neither encodes to token ids nor decodes.
// Text is counted in chunks cut only where both encodings' pieces end, so the count is the
// count of the whole text, to the token; a long run with no such place (a row of spaces or
// dashes, say) is counted whole, with a byte-pair merge that costs O(n log n) on a piece of n
// bytes where tiktoken's costs O(n²) (see [Encoding]).
//
// Build an [Encoding] once with [New] and share it: it is immutable and safe for concurrent
// use.
package tiktoken
