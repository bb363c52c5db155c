// Package openai sends the requests an [agentctx.Pipeline] builds through the official
// OpenAI Go SDK (github.com/openai/openai-go/v3), over Chat Completions or the Responses
// API, and brings the answers back as transcript records. Any OpenAI-compatible server
// works — vLLM, Ollama, llama.cpp: give the SDK client their base URL.
//
// A runtime that already holds a configured SDK client (API key, base URL, retries,
// middleware) wraps it in a [Client]; each turn it prepares the request with agentctx and
// sends it:
//
//	c := openai.NewClient(sdkClient)
//	res, err := sess.Prepare(ctx, pipeline, agentctx.Input{System: system, Tools: tools})
//	// handle err (see provider.ClassOf)
//	rec, err := c.Turn(ctx, sess, res.Request, openai.Options{Model: "qwen3:8b"})
//	// rec.Message.Truncated(): pass provider.ErrOutputTruncated to sess.Recover;
//	// an error: pass it to sess.Recover, which compacts after a prompt too long
//
// [Client.Turn] and [Client.Send] speak Chat Completions, the API every compatible server
// serves; [Client.TurnResponses] and [Client.SendResponses] the Responses API. Both stream
// when [Options.Stream] is set.
//
// # Requests
//
// The pipeline's request is an Anthropic Messages API body; [ChatParams] and
// [ResponsesParams] carry the same view, one request per turn: the system prompt, the
// messages with each tool call answered by its output (paired by id), images and PDFs, the
// tool definitions and the tool choice. What OpenAI cannot carry — thinking signed by
// Anthropic, Anthropic server tools, cache editing — is left out and listed in the returned
// [Drop] values, so a caller can report it.
//
// # Answers
//
// The library's record model is the Anthropic Messages response, so [MessageFromChat] and
// [MessageFromResponse] convert an answer into that shape: text blocks, tool calls as
// tool_use blocks whose input is the arguments object, finish_reason or the response's
// status as stop_reason ("length" and max_output_tokens become "max_tokens"), and the usage
// with the cached tokens counted apart from the input, as Anthropic counts them. Reasoning —
// vLLM's and llama.cpp's reasoning_content, Ollama's reasoning, Responses reasoning items —
// is kept in the transcript as thinking without a signature, which no later request
// carries, except a Responses reasoning item with its encrypted content: a Pipeline with
// [agentctx.NormalizeConfig.KeepReasoningItems] keeps it, and [ResponsesParams] sends it
// back as the same item. Tool-call arguments that are not a JSON object cannot be sent back as the model
// wrote them, so they make the turn fail with a retryable error naming the field, unless
// the answer was cut at its output cap.
//
// # A host's own history
//
// A runtime that keeps its conversation in the SDK's types converts it with no code of its
// own: [ChatHistory] (Chat Completions messages) and [ResponsesHistory] (Responses input
// items) make records for a Pipeline ([ChatHistory.Records], [ResponsesHistory.Records]),
// and [ChatHistoryOf] and [ResponsesHistoryOf] make messages or items of records, through
// the same conversions as the requests and answers above; [MessageMeta] carries what a
// message cannot (time, an answer's id and usage, a record's flags).
//
// # Errors
//
// Every error [Client] and [github.com/agentctx/agentctx/summarize.Summarizer] return is an [*Error] carrying its
// [provider.ErrorClass] (read it with [provider.ClassOf]): context_length_exceeded and the
// compatible servers' equivalents give an [*provider.PromptTooLongError] with the figures
// the message states, so that [session.Session.Recover] compacts; a 413 is
// request-too-large; a refused image is media-rejected; rate limits, server errors and
// transport failures are retryable — which is the SDK's retry policy's business
// ([option.WithMaxRetries]), not this package's. An error object in a successful answer or
// in a stream is classified as the same error would be; an answer with no choice is fatal.
package openai
