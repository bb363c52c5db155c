// Package wire holds what the Messages API accepts, as predicates shared by the root
// package's normalize stage, which repairs a request until it holds, and package provider's
// Validate, which checks that it does: tool ids and names, replayable thinking signatures,
// blank text, the final assistant turn, text that is valid UTF-8 without lone surrogates,
// the image formats and sizes the provider reads, and its limits (cache markers, body bytes).
//
// Keeping them in one place keeps the repair and the check from drifting apart.
package wire
