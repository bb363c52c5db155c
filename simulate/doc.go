// Package simulate replays a recorded session under a context policy and says what the policy
// would have sent and what it would have cost.
//
// [Run] takes a session's records (a Claude Code session file or a Codex rollout, read with
// [transcript.ReadFile]) and an [agentctx.Config], the policy. At each assistant response of the
// file it calls [agentctx.Pipeline.Prepare] on the transcript as it stood when the agent sent
// that request, plus the decision and compaction records the simulation appended on earlier
// turns, so a simulated compaction shapes every later turn as it would have in a live session.
// Each turn's request is played against a model of the provider's prompt cache, and the
// [Result] holds, per turn and in total, the request's tokens, what each stage did, a
// compaction's outcome, the input split into cache reads, cache writes and uncached tokens
// ([Usage]), and its price ([Prices], by model id) beside what the provider reported in the file.
//
// The cache model follows the Anthropic prompt-caching documentation: a request reads the
// longest byte-identical prefix an earlier request wrote at a breakpoint, if that entry is
// still alive (5 minutes, or an hour for the "1h" TTL, since it was last written or read) and
// lies within 20 blocks before one of the request's breakpoints; it writes from there up to its
// last breakpoint, unless that prefix is shorter than the model's minimum cacheable length
// ([agentctx.Model.MinCacheTokens]); what follows is uncached.
//
// A simulation is deterministic: its clock is the records' timestamps, its summaries are
// extractive and the tool results the budget replaces are kept in memory unless the Config
// names a summarizer or a store, so it sends nothing and writes nothing, and the same records
// and Config give the same Result. The Result encodes to the JSON the agentctx command's
// simulate --json prints (docs/simulate.md describes its fields).
package simulate
