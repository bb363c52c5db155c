// Package anthropic sends the requests an [agentctx.Pipeline] builds through the official
// Anthropic Go SDK (github.com/anthropics/anthropic-sdk-go/v2), and brings the answers back
// as transcript records.
//
// A runtime that already holds a configured SDK client (API key, base URL, retries,
// middleware) wraps it in a [Client]; each turn it prepares the request with agentctx and
// sends it:
//
//	c := anthropic.NewClient(sdkClient)
//	res, err := sess.Prepare(ctx, pipeline, agentctx.Input{System: system, Tools: tools})
//	// handle err (see provider.ClassOf)
//	rec, err := c.Turn(ctx, sess, res.Request, anthropic.Options{})
//
// [Params] is the conversion on its own: the SDK's parameters for a request, which marshal to
// the same JSON as [provider.Request.MarshalJSON]. [BetaOptions] sends the request's
// anthropic-beta header values (the cache-editing beta when it carries cache_edits).
//
// # Streaming
//
// The SDK refuses a non-streaming request whose max_tokens could take longer than its
// ten-minute non-streaming limit (about 21,333 tokens, less for some models), and a
// pipeline's default max_tokens is the model's maximum output. [Client.Send] therefore asks
// the SDK's own check ([sdk.CalculateNonStreamingTimeout]) and streams when it would refuse,
// when [Options.Stream] is set, or when [Options.OnEvent] wants the events; a streamed turn
// is accumulated into the same message a non-streaming one returns.
//
// # Errors
//
// Every error [Client.Send] and [github.com/agentctx/agentctx/summarize.Summarizer] return is an [*Error] carrying its
// [provider.ErrorClass] (read it with [provider.ClassOf]): a 400 "prompt is too long: N
// tokens > M maximum" holds an [*provider.PromptTooLongError] with both figures; a 413 is
// request-too-large; a rejected image or document is media-rejected, with the paths of the
// offending blocks when the provider names them; overloaded (529), rate limited (429, with
// the provider's retry-after), server errors and transport failures are retryable — which
// is the SDK's retry policy's business ([option.WithMaxRetries]), not this package's.
package anthropic
