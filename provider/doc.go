// Package provider is the vocabulary of what a model provider's refusal means for the
// conversation's context, shared by the Pipeline that recovers from it and the adapters that
// report it: an [ErrorClass] for every error ([ClassOf] reads it), the typed errors that carry
// the provider's figures ([PromptTooLongError], [RequestTooLargeError], [MediaRejectedError],
// [OutputTruncatedError]) and their sentinels for errors.Is.
//
// An adapter for another provider classifies its errors with these types, and
// agentctx's Pipeline.Recover does the rest.
package provider
