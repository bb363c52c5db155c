// Package agentctx decides, every turn, what an LLM agent's model sees.
//
// An agent runtime calls it before each model request. It reads the session's durable
// transcript, relieves context pressure in stages, normalizes the result into a request the
// provider accepts, places one cache breakpoint, and reports what it did. It never loses a word
// of the transcript, and the same transcript always gives the same bytes, so the provider's
// prompt cache keeps hitting.
// The repository's docs/architecture.md gives the invariants, a turn's steps and the packages.
//
// # The transcript
//
// A transcript is an append-only JSONL file of [transcript.Record] values in Claude Code's session format
// (~/.claude/projects/*/*.jsonl), so a Claude Code session file can be read directly with
// [transcript.ReadFile] and extended with an [transcript.Appender]. Unknown record types, fields and content blocks
// survive a read/write round trip. A torn last line left by a crash is reported and skipped;
// nothing already written is ever rewritten. Damage costs only what is damaged: a field that
// cannot be read (a usage figure like 1e400) is dropped from its record, which is kept; a line
// that is no record at all is skipped; each is named by line ([transcript.Record.Damage],
// [Report.Damage]).
//
// The conversation is rebuilt from the parentUuid graph by [transcript.BuildChain]: it walks from the leaf
// to the latest compact boundary and re-attaches what a plain parent walk loses — the split
// records of one assistant response and the results of its parallel tool calls. Where a
// parent link breaks at an unreadable line, the walk bridges it in file order, and a record or
// response written twice is kept once; both are reported ([transcript.ChainProblem], [transcript.Replay]).
//
// # The turn
//
// [Pipeline.Prepare] runs these stages, in this order, each in its own file with its own
// config struct whose zero value is the documented default:
//
//  1. boundary slice: only records after the latest compact boundary reach the view (and the
//     tail that compaction kept, relinked after its summary; pinned content, re-placed);
//  2. tool-result budget ([BudgetConfig]): oversize new results are stored in full in a
//     [ResultStore] and replaced by a stable preview;
//  3. snip ([SnipConfig]): records named by snip records leave the view (the model writes
//     them through the snip tool, [SnipTool] and [Pipeline.HandleSnip]), and the model is
//     reminded to snip as the view grows;
//  4. microcompact ([MicrocompactConfig]): after an idle gap, old tool results are cleared
//     (or, in cached mode, deleted from the provider's cache with cache_edits);
//  5. collapse ([CollapseConfig]): committed spans are replaced by their summaries;
//  6. base context ([ContextConfig]): system and user context are added;
//  7. normalize ([NormalizeConfig]): the view is repaired into a valid provider request;
//  8. cache breakpoint ([CacheConfig]): exactly one message-level cache marker.
//
// Then it measures the request's pressure: what the provider will count, anchored on the last
// response's reported usage and calibrated on the session's own usage history (see
// [PressureConfig]). With a collapse producer ([CollapseConfig.Producer], [FoldOldest]), at 90 %
// of the auto-compact threshold it first folds the oldest rounds into a new collapse commit
// and builds the view again. At the auto-compact threshold, when a [github.com/agentctx/agentctx/summarize.Summarizer] is configured, it
// compacts — the transaction of [CompactConfig]: a summary replaces the history, the most
// recent messages stay verbatim, the files and skills the conversation worked with are
// re-injected — and builds the request from the compacted view, in the same call. Without a
// Summarizer it waits for the blocking limit and compacts with [github.com/agentctx/agentctx/summarize.Extractive] rather than refuse
// the request. When compaction is disabled, failed or cannot help, it returns a
// [*provider.PromptTooLongError] instead of a request that cannot fit. [Pipeline.Compact] compacts on
// request, with optional instructions.
//
// A typical turn:
//
//	res, err := p.Prepare(ctx, agentctx.Input{Records: records, System: system, Tools: tools})
//	if err != nil { … } // *PromptTooLongError: append res.Append anyway, then stop or ask the user
//	app.Append(res.Append...) // decisions, and a compaction's records, before sending
//	// send res.Request; append the answer with parentUuid = res.Leaf
//
// # Defaults scale with the window
//
// The zero Config works at any window from 8,000 tokens to 1,000,000 once the window is known.
// Every budget's default is Claude Code's value at its own window of 200,000 tokens, kept as it
// is at 200,000 tokens and above, and scaled below by s = window / 200,000, down to a floor
// that still makes sense at 8,000. Results of a tool exempt from the budget (Claude Code's
// Read) are exempt only up to a share of the window: the library cannot assume the runtime
// bounds its tools. The levels keep Claude Code's reserves, each capped by a share of the window
// (see [DefaultLevels]; the table assumes a maximum output of at least 20,000 tokens). W is the
// window; characters and bytes for the budget, tokens for the rest:
//
//	default                           rule                          8k     32k     128k    200k    1M
//	auto-compact threshold            effective − min(13,000, W/8)  5000   20000   95000   167000  967000
//	blocking limit                    effective − min(3,000, W/32)  5750   23000   105000  177000  977000
//	Budget.MaxResultChars             50,000 × s, ≥ 2,000           2000   8000    32000   50000   50000
//	Budget.MaxMessageChars            200,000 × s, ≥ 8,000          8000   32000   128000  200000  200000
//	Budget.ExemptMaxChars             100,000 × s, ≥ 4,000          4000   16000   64000   100000  100000
//	Budget.PreviewBytes               2,000 × s, ≥ 500              500    500     1280    2000    2000
//	Bash cap (ToolMaxChars)           30,000 × s, ≥ 2,000           2000   4800    19200   30000   30000
//	Grep cap (ToolMaxChars)           20,000 × s, ≥ 2,000           2000   3200    12800   20000   20000
//	Compact.SummaryMaxTokens          20,000 × s, ≥ min(1,024, W/8) 1000   3200    12800   20000   20000
//	Compact.PinnedMaxTokens           8,000 × s, ≥ 500              500    1280    5120    8000    8000
//	Tail.MinTokens                    10,000 × s, ≥ 400             400    1600    6400    10000   10000
//	Tail.MaxTokens                    40,000 × s, ≥ 1,600           1600   6400    25600   40000   40000
//	Rehydrate.MaxFileTokens           5,000 × s, ≥ 200              200    800     3200    5000    5000
//	Rehydrate.MaxFilesTokens          50,000 × s, ≥ 2,000           2000   8000    32000   50000   50000
//	Rehydrate.MaxSkillTokens          5,000 × s, ≥ 200              200    800     3200    5000    5000
//	Rehydrate.MaxSkillsTokens         25,000 × s, ≥ 1,000           1000   4000    16000   25000   25000
//	Microcompact.CachedTriggerTokens  100,000 × s, ≥ 4,000          4000   16000   64000   100000  100000
//
// When a request still does not fit, compaction degrades rather than refuses: it climbs a
// ladder of smaller kept tails, no re-injected files, cleared older results, and as a last
// resort the latest input's tool results as previews (see [CompactRung]). Only a request whose
// system prompt, tools, pinned context and newest typed prompt alone are over the blocking
// limit gets a [*provider.PromptTooLongError]. Each rung, a fallback summary, an open circuit breaker
// and the aggressive mode after thrash are reported ([Report.Degradations]) and logged
// ([Config.Logger]).
//
// # Recovery
//
// When the provider refuses a request anyway, [Pipeline.Recover] (or [github.com/agentctx/agentctx/session.Session.Recover]) takes
// its error, classified by the adapters ([provider.ClassOf]), and climbs a bounded ladder: a prompt too
// long records the provider's count and compacts once (a prompt that fits, refused only for
// max_tokens on top of it, gets max_tokens lowered instead); a body too large records its size
// and compacts once; refused images and documents are replaced by a text marker from then on; a
// response cut at max_tokens ([provider.ErrOutputTruncated]) gets the output cap raised for its retry
// (and the retry's continuations), then at most 3 "continue" turns. Each rung
// is a record, so a restart or a fork climbs the same ladder, and a second refusal right after
// a rung is terminal. Rate limits, overload, server and transport errors are the caller's retry
// policy's: Recover returns them as they are.
//
// # The provider contract
//
// The request satisfies the rules listed in docs/contract.md, which this repository ships:
// normalize repairs what a transcript can break, reporting each repair, and [provider.Validate] checks
// a request against them (with [Config.Validate], inside Prepare). Rule ids such as "2.1" in
// comments and in [provider.Violation.Rule] are the ids of that list.
//
// # Determinism and persistence
//
// Every decision that changes the model's view — a replaced tool result, a snip, a cleared
// result, a collapse, a compaction and its summary, a failed compaction attempt — is a record
// that Prepare returns in [Result.Append]. The caller appends those records to the transcript
// before the next turn; later turns, a resume or a fork replay them byte for byte, and the
// circuit breaker and thrash guard read their state from them. Prepare is therefore a pure
// function of (records, config, now, the summarizer's replies): a [Pipeline] holds no
// per-conversation state that can change a request and is safe for concurrent use. Its memos
// (token counts, encoded messages, cleaned blocks, the chain's index and the calibration fit's
// sums of the conversations served last) carry a steady turn's work over from the previous turn; they are derivable
// from the records, change nothing but time, and hold at most [Config.MemoBytes] together, which
// [Pipeline.MemoStats] reports.
//
// The same property lets package simulate (github.com/agentctx/agentctx/simulate) replay a
// recorded session under any Config, turn by turn, and measure what the policy would have sent
// and what the provider's prompt cache would have charged for it.
//
// # Tokens
//
// Counting goes through the one-method [TokenCounter] interface. The default
// ([DefaultTokenCounter]) counts with tiktoken's cl100k_base tables, embedded in the binary
// (the library never touches the network), through the pre-tokenizer and byte-pair merge of
// package [github.com/agentctx/agentctx/tiktoken]: the counts are tiktoken-go's, at many times
// its speed and without its allocations. Long unbroken runs, which make the merge quadratic,
// are split at safe boundaries.
package agentctx
