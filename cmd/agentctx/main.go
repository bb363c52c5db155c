// Command agentctx shows what an LLM agent's model sees, turn by turn, for a Claude Code
// session file or a session kept in PostgreSQL.
//
// Usage:
//
//	agentctx inspect [flags] FILE
//	agentctx request [flags] FILE
//	agentctx compact [flags] FILE
//	agentctx simulate [flags] FILE
//	agentctx import FILE... ADDRESS
//	agentctx export ADDRESS#SESSION [FILE]
//	agentctx schema
//	agentctx help [COMMAND]
//
// FILE is a session file, or a session in a PostgreSQL database: postgres://user@host/db?
// options#SESSION (see agentctx/postgres), the session id percent-encoded where it has to be.
// import and export move sessions between files and a database, byte for byte; schema prints
// the database schema's SQL.
// inspect summarizes a session: its records, the active chain, the next request's tokens by
// category (system prompt, tool definitions, base context, messages, free space, auto-compact
// buffer), the model's window and pressure levels with the anchored and counted figures, the
// compaction state, the largest records, and what each stage of the pipeline would do on the
// next turn. request prints the provider-ready request body for the session's next turn
// (--provider: the Anthropic SDK's, or an OpenAI Chat Completions or Responses body). When
// the session overflows the window, both compact it in memory first, with the extractive
// summarizer. compact compacts the session now with the extractive summarizer, or with a model
// (--summarizer anthropic or openai, configured from the environment as the SDKs are), and
// appends the compaction's records to FILE, or to a new copy at FILE2, never changing the
// bytes already written. simulate replays the session under a policy (a TOML config file and
// the flags) and reports each turn's tokens, prompt-cache reads and writes and cost, with the
// totals beside the real usage the file holds (--json, --svg for a chart).
// "agentctx COMMAND --help" lists a command's flags.
//
// Exit codes: 0 on success (and for --help), 1 when the command fails (an unreadable FILE, a
// request that cannot be built), 2 on a mistake in the command line.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

func main() {
	processIsCommand = true
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

// command is one subcommand.
type command struct {
	name    string
	args    string // after the flags
	summary string // one line, for agentctx --help
	about   string // a paragraph, for agentctx COMMAND --help
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

// commands lists the subcommands in the order agentctx --help shows them.
var commands = []command{
	{
		name: "inspect", args: "FILE",
		summary: "show what the model sees of the session's next turn, by category and by stage",
		about: "Inspect summarizes the session in FILE: its records, the active chain, the next " +
			"request's tokens by category (system prompt, tool definitions, base context, " +
			"messages, free space, auto-compact buffer), the pressure figure and its levels " +
			"with the anchored and counted figures, the compaction state, the largest " +
			"records, and what each stage of the pipeline would do on the next turn. A " +
			"session that overflows the window is compacted in memory first, with the " +
			"extractive summarizer; FILE is never changed.",
		run: inspect,
	},
	{
		name: "request", args: "FILE",
		summary: "print the provider-ready request body for the session's next turn",
		about: "Request prints the Anthropic Messages API body for the next turn of the session " +
			"in FILE, or with --provider the body the provider adapter's SDK sends: anthropic, " +
			"openai-chat (Chat Completions) or openai-responses (Responses), listing on stderr " +
			"what the OpenAI bodies cannot carry. A session that overflows the window is " +
			"compacted in memory first, with the extractive summarizer; FILE is never changed.",
		run: request,
	},
	{
		name: "compact", args: "FILE",
		summary: "compact the session now and append the compaction's records",
		about: "Compact compacts the session in FILE now, with the extractive summarizer or the " +
			"model --summarizer names (anthropic, openai: key and base URL from the environment, " +
			"as their SDKs read them), and appends the compaction's records to FILE, or to a " +
			"new copy of it (--out). The bytes already written are never changed.",
		run: compact,
	},
	{
		name: "simulate", args: "FILE",
		summary: "replay the session under a policy: tokens, prompt cache and cost per turn, beside the real ones",
		about: "Simulate replays the session in FILE as a live agent would have run it under the " +
			"policy of --config (every stage's knobs, in TOML) and the flags: at each response in " +
			"the file it builds the request from the records before it plus the records the " +
			"simulation appended so far (decisions, compactions), and plays it against a model of " +
			"the provider's prompt cache on the records' clock. It prints per turn the request's " +
			"tokens, the cache read and written, the output, the cost and what the stages did; then " +
			"the totals beside the real usage the file holds. Summaries are extractive unless " +
			"--summarizer names a model. The output depends only on FILE and the flags. FILE is " +
			"never changed.",
		run: simulate,
	},
	{
		name: "import", args: "FILE... ADDRESS",
		summary: "copy session files into a PostgreSQL database, byte for byte",
		about: "Import copies each session FILE into the PostgreSQL database at ADDRESS " +
			"(postgres://user@host/db?options), every line byte for byte, as the session " +
			"ADDRESS names after # (one FILE), or else under the FILE's name without " +
			"\".jsonl\". It applies the schema first when the database lacks it. A session " +
			"that already holds other lines is left alone: nothing is imported; one whose import was cut short is completed.",
		run: importCmd,
	},
	{
		name: "export", args: "ADDRESS#SESSION [FILE]",
		summary: "write a session from a PostgreSQL database as its JSONL file, byte for byte",
		about: "Export writes the session ADDRESS names (postgres://user@host/db?options#SESSION) " +
			"as its JSONL file: to FILE, which must not exist yet, or to standard output " +
			"when FILE is absent or -. The bytes are those import read, followed by the " +
			"lines appended since.",
		run: exportCmd,
	},
	{
		name: "schema", args: "",
		summary: "print the SQL of the PostgreSQL schema, for applying it by hand",
		about: "Schema prints the SQL that creates the tables agentctx keeps sessions and " +
			"tool results in, every migration in order in one transaction. Import applies " +
			"it by itself; this is for databases whose schemas an administrator applies.",
		run: schema,
	},
}

func lookup(name string) *command {
	for i := range commands {
		if commands[i].name == name {
			return &commands[i]
		}
	}
	return nil
}

// usage is what agentctx --help prints.
func usage() string {
	var b strings.Builder
	b.WriteString("agentctx shows what an LLM agent's model sees of a Claude Code session file, turn by turn.\n\n")
	b.WriteString("usage: agentctx COMMAND [flags] FILE\n\ncommands:\n")
	for _, c := range commands {
		fmt.Fprintf(&b, "  %-9s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(&b, "  %-9s %s\n", "help", "show a command's usage and flags: agentctx help COMMAND")
	b.WriteString("\nRun \"agentctx COMMAND --help\" for the flags of a command.\n")
	return b.String()
}

// run is the command's body: it returns the exit code (0 ok, 1 failure, 2 usage error).
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage())
		return 2
	}
	name, rest := args[0], args[1:]
	switch name {
	case "-h", "-help", "--help", "help":
		if name != "help" || len(rest) == 0 {
			fmt.Fprint(stdout, usage())
			return 0
		}
		name, rest = rest[0], []string{"--help"}
	}
	c := lookup(name)
	if c == nil {
		fmt.Fprintf(stderr, "agentctx: unknown command %q\n\n%s", name, usage())
		return 2
	}
	err := c.run(ctx, rest, stdout, stderr)
	var help helpRequest
	var ue usageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &help):
		fmt.Fprintf(stdout, "usage: agentctx %s [flags] %s\n\n%s\nflags:\n%s", c.name, c.args, wrap(c.about, "", 92), help.flags)
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "%s\nusage: agentctx %s [flags] %s\nRun \"agentctx %s --help\" for its flags.\n", message(err), c.name, c.args, c.name)
		return 2
	}
	fmt.Fprintln(stderr, message(err))
	return 1
}

// message formats err for the terminal: each line starts with "agentctx: " once, whether or
// not the error (a library error) already does.
func message(err error) string {
	lines := strings.Split(err.Error(), "\n")
	for i, l := range lines {
		lines[i] = "agentctx: " + strings.TrimPrefix(l, "agentctx: ")
	}
	return strings.Join(lines, "\n")
}

// usageError is a mistake in the command line.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// helpRequest is --help on a command: its usage, with flags (each flag and its
// description), goes to stdout, and the exit code is 0.
type helpRequest struct{ flags string }

func (h helpRequest) Error() string { return "help requested" }
