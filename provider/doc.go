// Package provider is the contract between agentctx and a model provider, shared by the
// Pipeline that builds requests and the adapters that send them.
//
// The request: a [Request] is a Messages API body (its [Message] list, [Tool] definitions,
// [ToolChoice] and [Thinking] setting) that [Request.MarshalJSON] and [Request.WriteTo]
// encode with a fixed key order, so the same Request always gives the same bytes; an
// [EncodeMemo] lets the requests of one conversation copy the parts encoded before instead of
// encoding them again. [Validate] checks a request against the provider's rules
// (docs/contract.md) and reports each broken rule as a [Violation].
//
// The refusals: an [ErrorClass] for every error ([ClassOf] reads it), the typed errors that
// carry the provider's figures ([PromptTooLongError], [RequestTooLargeError],
// [MediaRejectedError], [OutputTruncatedError]) and their sentinels for errors.Is. An adapter
// for another provider classifies its errors with these types, and agentctx's
// Pipeline.Recover does the rest.
package provider
