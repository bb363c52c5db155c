// Package liveloop is a closed-loop agent benchmark: it runs an agent loop on agentctx the
// way a production runtime does, against fake provider servers that speak the providers'
// wire protocols, and reports whether the loop survives and at what cost.
//
// # The loop
//
// [Run] drives an [session.Session] with the library's defaults (Config sets only Model,
// ContextWindow, MaxOutputTokens, Compact.Summarizer, Budget.Store, Now and Validate). Each
// turn: Session.Prepare, provider.Validate on the request (window and counted input), the
// adapter's Turn (which sends the request and appends the answer), the answer's tool calls
// run by scripted tools and appended with Session.ToolResults; after an answer that ends
// the model's turn, a new user prompt. A prompt-too-long refusal goes to Session.Recover,
// and so does an answer cut at max_tokens (provider.ErrOutputTruncated). Any error Recover
// returns, and any other error, ends the run: the harness retries nothing the library does
// not ask for.
//
// # The tools
//
// The scripted tools (Read, Bash, Grep, Edit, Write, WebFetch, Task, Glob, and Screenshot,
// which returns a PNG) write seeded, deterministic output — source code, build logs, search
// hits, prose — whose sizes follow the tool results of the shared corpus's Claude Code
// sessions ([CorpusDists], measured by [MeasureCorpus]; TestCorpusDists checks the committed
// table and rewrites it with -update), and [BigOutput] bytes in a share of the Read, Bash
// and Grep calls. Read, Edit and Write work on files of a temporary workspace, the
// session's cwd, so that compaction re-reads them.
//
// # The fake provider
//
// The fake servers (httptest) speak the Anthropic Messages API (JSON, and server-sent
// events for "stream": true) and OpenAI Chat Completions as vLLM serves it (JSON and
// chunks). Behind both, the provider counts each prompt with its own tokenizer — the
// library's default counter ([agentctx.NewCounter](nil)) times [TokenizerFactor], 1.2 — and
// refuses with the provider's real error body a request whose prompt and max_tokens exceed
// the window; it checks the body (provider.Validate for the Messages API, tool-call pairing
// and roles for Chat Completions) and refuses an invalid one; it reports usage with the
// prompt cache's share (the prefix shared with the previous request within [CacheTTL] is
// read, the rest up to the last cache marker written); it answers from a seeded script —
// tool calls drawn by the corpus's call counts, 2–4 at once in a share of the answers — and
// answers summary requests (tool_choice none, or a last user text asking for a <summary>)
// with a summary of realistic size. Once per 300 answers it refuses a prompt that fits as
// too long (when the prompt takes at least three quarters of the window, naming a count
// just over it) and cuts an answer at max_tokens.
//
// The fake Anthropic server also compacts on its side as the provider's documentation says:
// a request whose context_management holds the compact_20260112 edit and whose prompt
// passes its trigger gets an answer that opens with a compaction block holding a summary
// the server writes (its draft left out), billed as the usage's compaction iteration; with
// pause_after_compaction the answer ends there (stop_reason "compaction"), otherwise the
// model answers from the compacted context and the top-level usage is that iteration's.
//
// # The matrix
//
// [Matrix] is every window of [Windows] with the extractive and the model summarizer on
// both adapters, plus [Newcomer], the trial agent a new user built. TestMatrix runs it (150
// turns a cell with -short, 1,000 without), logs the table ([TableHeader], [Metrics.Row])
// and asserts, cell by cell, no terminal error, no invalid body and compactions that free at
// least half of the context on median. TestServerStrategy runs [ServerStrategy], the
// provider compacting (Config.ProviderContext.Strategy server) with the first prompt pinned,
// for 1,000 turns at 200,000 tokens and for 300 with pause_after_compaction, and asserts no
// terminal error, no invalid body and the pinned rule in the request after every
// compaction. cmd/liveloop runs one cell per process, so that its row reports the
// peak resident set, and -all runs them all.
//
// # Folding and session memory
//
// [Producers] runs the same scenarios at the windows of [ProducerWindows] (32,000 and
// 60,000) with facts planted early ([Scenario.Facts]: a constraint, a decision, a file
// path, an error and its fix, an open item; see [FactKinds]) and the collapse producer
// ([Scenario.Fold]) and session memory ([Scenario.Memory]) off, each alone and both on. Each
// run counts its compactions, folds and extractions and checks the request of every turn
// that compacts or folds for each planted fact ([Metrics.Retention], [Metrics.ProducersRow]).
// TestProducers asserts, at 200 turns a run (120 with -short), that with both on there are
// fewer compactions per 100 turns than with neither and at least as large a share of the
// facts kept; cmd/liveloop -producers prints the whole comparison. The fake model's
// summaries are random prose, so the retention says something of the extractive summarizer
// only.
package liveloop
