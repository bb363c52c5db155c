// Package summarize is the vocabulary of the summaries that replace a conversation's history
// when agentctx compacts it: a [Summarizer] (or a [Func]) answers a [Request] — the
// conversation as a provider-ready request built to share its prompt cache, and the same
// conversation message by message ([Message], each with its [Source]) — with a [Summary],
// whose reply [FromReply] reads.
//
// [Extractive] is the summarizer that calls no model: it quotes the user's messages and lists
// the files, commands, errors and open items of the conversation. It is the command-line
// tool's summarizer and the fallback when a model's summarizer fails. The adapters
// (anthropic, openai) provide model-backed ones; the root package's compaction calls them
// (see github.com/agentctx/agentctx.CompactConfig).
package summarize
