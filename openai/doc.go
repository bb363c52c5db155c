// Package openai converts the requests an [agentctx.Pipeline] builds into the bodies of
// OpenAI's Chat Completions and Responses APIs, on the official OpenAI Go SDK
// (github.com/openai/openai-go/v3), and provides a [Summarizer] over Chat Completions for
// any OpenAI-compatible server (vLLM, Ollama, llama.cpp: give the SDK client their base URL).
//
// The pipeline's request is an Anthropic Messages API body; [ChatParams] and
// [ResponsesParams] carry the same view, one request per turn: the system prompt, the
// messages with each tool call answered by its output (paired by id), images and PDFs, the
// tool definitions and the tool choice. What OpenAI cannot carry — thinking signed by
// Anthropic, Anthropic server tools, cache editing — is left out and listed in the returned
// [Drop] values, so a caller can report it.
//
// Errors of the [Summarizer] are [*Error] values with their [agentctx.ErrorClass]:
// context_length_exceeded and the compatible servers' equivalents give an
// [*agentctx.PromptTooLongError] with the figures the message states.
package openai
