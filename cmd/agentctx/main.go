// Command agentctx shows what an LLM agent's model sees, turn by turn, for a Claude Code
// session file or an OpenAI Codex rollout. It links the library and no provider SDK or
// database driver, so that it builds in seconds; agentctx-full (cmd/agentctx-full) is the
// same command with the SDKs and the PostgreSQL driver linked.
//
// Usage:
//
//	agentctx inspect [flags] FILE
//	agentctx request [flags] FILE
//	agentctx compact [flags] FILE
//	agentctx simulate [flags] FILE
//	agentctx help [COMMAND]
//
// inspect summarizes a session: its records, the active chain, the next request's tokens by
// category (system prompt, tool definitions, base context, messages, free space, auto-compact
// buffer), the model's window and pressure levels with the anchored and counted figures, the
// compaction state, the largest records, and what each stage of the pipeline would do on the
// next turn. request prints the Anthropic Messages API body for the session's next turn. When
// the session overflows the window, both compact it in memory first, with the extractive
// summarizer. compact compacts the session now with the extractive summarizer and appends
// the compaction's records to FILE, or to a new copy at --out, never changing the bytes
// already written. simulate replays the session under a policy (a TOML config file and the
// flags) and reports each turn's tokens, prompt-cache reads and writes and cost, with the
// totals beside the real usage the file holds (--json, --svg for a chart).
// "agentctx COMMAND --help" lists a command's flags.
//
// What needs a provider SDK or the database driver is agentctx-full's: request --provider
// (the SDKs' bodies), --summarizer anthropic or openai (a model writes the summary),
// postgres:// sessions, import, export and schema. Asked for one of them, agentctx fails and
// prints the agentctx-full command line that does it.
//
// Exit codes: 0 on success (and for --help), 1 when the command fails (an unreadable FILE, a
// request that cannot be built, a feature of agentctx-full), 2 on a mistake in the command
// line.
package main

import "github.com/agentctx/agentctx/cmd/internal/cli"

func main() {
	cli.Main(cli.Build{})
}
