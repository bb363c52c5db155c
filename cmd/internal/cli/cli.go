// Package cli is the agentctx command line, which two binaries share: agentctx
// (cmd/agentctx), which links no provider SDK and no database driver, so that showing a
// session compiles only the library, and agentctx-full (cmd/agentctx-full), which links both
// SDKs and pgx and hands them in through a [Build]: the providers' bodies (--provider), the
// model summarizers (--summarizer) and PostgreSQL sessions (postgres:// addresses, import,
// export, schema). A binary that lacks one of them says so and prints the agentctx-full
// command to run instead.
package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"

	"github.com/agentctx/agentctx/provider"
	"github.com/agentctx/agentctx/summarize"
)

// Build is what one agentctx binary links: the pieces that need a provider SDK or the
// database driver. The zero Build is the light agentctx, which has none of them.
type Build struct {
	// Name is the program's name in its usage lines; "" means agentctx.
	Name string
	// Providers encode the request as a provider's SDK sends it, by --provider name
	// (anthropic, openai-chat, openai-responses).
	Providers map[string]Provider
	// Summarizers make the model summarizer a compaction asks, by --summarizer name
	// (anthropic, openai).
	Summarizers map[string]NewSummarizer
	// Database opens the sessions kept in PostgreSQL (postgres:// addresses), for every
	// command and for import, export and schema; nil: those addresses are refused.
	Database Database
}

// Provider converts req to the body a provider's SDK sends: a value encoding/json marshals as
// the SDK does. Notes are what the body needs or leaves out (a header, a block the API
// cannot carry); the command prints each on stderr.
type Provider func(req provider.Request) (body any, notes []string, err error)

// NewSummarizer makes a model summarizer from --summary-model (model, "" when the flag is
// absent). It returns a [UsageError] when the summarizer cannot do without the flag, and an
// error naming the environment variable when its key is missing.
type NewSummarizer func(model string) (summarize.Summarizer, error)

// Main runs the command line of the process with b and exits with its exit code.
func Main(b Build) {
	os.Exit((&app{Build: b, process: true}).run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

// Run runs one command line with b, as Main does, and returns its exit code: 0 on success
// (and for --help), 1 when the command fails, 2 on a mistake in the command line.
func Run(ctx context.Context, b Build, args []string, stdout, stderr io.Writer) int {
	return (&app{Build: b}).run(ctx, args, stdout, stderr)
}

// app is one run of the command line.
type app struct {
	Build
	// process is set by Main: the process runs one command and exits (not a test calling
	// Run), so request may set the process's memory limit.
	process bool
}

// name is the program's name, for usage lines.
func (a *app) name() string { return cmp.Or(a.Name, "agentctx") }

// command is one subcommand.
type command struct {
	name    string
	args    string // after the flags
	summary string // one line, for agentctx --help
	about   string // a paragraph, for agentctx COMMAND --help
	run     func(a *app, ctx context.Context, args []string, stdout, stderr io.Writer) error
	// database marks the commands that need the Build's Database.
	database bool
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
		run: (*app).inspect,
	},
	{
		name: "request", args: "FILE",
		summary: "print the provider-ready request body for the session's next turn",
		about: "Request prints the Anthropic Messages API body for the next turn of the session " +
			"in FILE, or with --provider the body the provider adapter's SDK sends: anthropic, " +
			"openai-chat (Chat Completions) or openai-responses (Responses), listing on stderr " +
			"what the OpenAI bodies cannot carry. A session that overflows the window is " +
			"compacted in memory first, with the extractive summarizer; FILE is never changed.",
		run: (*app).request,
	},
	{
		name: "compact", args: "FILE",
		summary: "compact the session now and append the compaction's records",
		about: "Compact compacts the session in FILE now, with the extractive summarizer or the " +
			"model --summarizer names (anthropic, openai: key and base URL from the environment, " +
			"as their SDKs read them), and appends the compaction's records to FILE, or to a " +
			"new copy of it (--out). The bytes already written are never changed.",
		run: (*app).compact,
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
			"the totals beside the real usage the file holds. The comparison is fair by default: " +
			"every request carries a system prompt of the size the file's first usage says it " +
			"lacks (--system, --system-tokens), figures are in provider tokens at the session's " +
			"calibration ratio, and thinking is the session's own (--thinking). --replay policy " +
			"leaves the file's own compactions out, so that only the policy compacts. " +
			"Summaries are extractive unless " +
			"--summarizer names a model. The output depends only on FILE and the flags. FILE is " +
			"never changed.",
		run: (*app).simulate,
	},
	{
		name: "report", args: "FILE -o PAGE",
		summary: "write the session, replayed under a policy, as one HTML page: what the model saw on every turn",
		about: "Report replays the session in FILE as simulate does (the same policy flags) and writes " +
			"one self-contained HTML page to -o: a timeline of every request's tokens by part, the " +
			"prompt cache, the cost and each decision (budget replacements, snips, clearings, " +
			"collapses, compactions, degradations), and for the turn clicked the window by part, " +
			"what each stage did and the request's messages with where each came from; for a " +
			"compaction, its summary beside what it replaced and what of it the summary kept by " +
			"name. The page loads nothing: it opens offline, from a file. FILE is never changed.",
		run: (*app).report,
	},
	{
		name: "import", args: "FILE... ADDRESS", database: true,
		summary: "copy session files into a PostgreSQL database, byte for byte",
		about: "Import copies each session FILE into the PostgreSQL database at ADDRESS " +
			"(postgres://user@host/db?options), every line byte for byte, as the session " +
			"ADDRESS names after # (one FILE), or else under the FILE's name without " +
			"\".jsonl\". It applies the schema first when the database lacks it. A session " +
			"that already holds other lines is left alone: nothing is imported; one whose import was cut short is completed.",
		run: (*app).importCmd,
	},
	{
		name: "export", args: "ADDRESS#SESSION [FILE]", database: true,
		summary: "write a session from a PostgreSQL database as its JSONL file, byte for byte",
		about: "Export writes the session ADDRESS names (postgres://user@host/db?options#SESSION) " +
			"as its JSONL file: to FILE, which must not exist yet, or to standard output " +
			"when FILE is absent or -. The bytes are those import read, followed by the " +
			"lines appended since.",
		run: (*app).exportCmd,
	},
	{
		name: "schema", args: "", database: true,
		summary: "print the SQL of the PostgreSQL schema, for applying it by hand",
		about: "Schema prints the SQL that creates the tables agentctx keeps sessions and " +
			"tool results in, every migration in order in one transaction. Import applies " +
			"it by itself; this is for databases whose schemas an administrator applies.",
		run: (*app).schema,
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
func (a *app) usage() string {
	var b strings.Builder
	b.WriteString("agentctx shows what an LLM agent's model sees of a Claude Code session file, turn by turn.\n\n")
	fmt.Fprintf(&b, "usage: %s COMMAND [flags] FILE\n\ncommands:\n", a.name())
	for _, c := range commands {
		summary := c.summary
		if c.database && a.Database == nil {
			summary += " (" + fullName + ")"
		}
		fmt.Fprintf(&b, "  %-9s %s\n", c.name, summary)
	}
	fmt.Fprintf(&b, "  %-9s %s\n", "help", "show a command's usage and flags: "+a.name()+" help COMMAND")
	fmt.Fprintf(&b, "\nRun \"%s COMMAND --help\" for the flags of a command.\n", a.name())
	if a.Database == nil && len(a.Providers) == 0 && len(a.Summarizers) == 0 {
		b.WriteString("\n" + wrap("This build links no provider SDK and no database driver: --provider, "+
			"--summarizer anthropic or openai, postgres:// sessions, import, export and schema are "+
			fullName+"'s (go run ./"+fullDir+" COMMAND ...).", "", 92))
	}
	return b.String()
}

// run is the command's body: it returns the exit code (0 ok, 1 failure, 2 usage error).
func (a *app) run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, a.usage())
		return 2
	}
	name, rest := args[0], args[1:]
	switch name {
	case "-h", "-help", "--help", "help":
		if name != "help" || len(rest) == 0 {
			fmt.Fprint(stdout, a.usage())
			return 0
		}
		name, rest = rest[0], []string{"--help"}
	}
	c := lookup(name)
	if c == nil {
		fmt.Fprintf(stderr, "agentctx: unknown command %q\n\n%s", name, a.usage())
		return 2
	}
	err := c.run(a, ctx, rest, stdout, stderr)
	var help helpRequest
	var ue UsageError
	var nf needsFull
	switch {
	case err == nil:
		return 0
	case errors.As(err, &help):
		fmt.Fprintf(stdout, "usage: %s %s [flags] %s\n\n%s\nflags:\n%s", a.name(), c.name, c.args, wrap(c.about, "", 92), help.flags)
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "%s\nusage: %s %s [flags] %s\nRun \"%s %s --help\" for its flags.\n", message(err), a.name(), c.name, c.args, a.name(), c.name)
		return 2
	case errors.As(err, &nf):
		fmt.Fprintln(stderr, message(fmt.Errorf("%w:\n  go run ./%s %s", err, fullDir, commandLine(args))))
		return 1
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

// UsageError is a mistake in the command line: the command prints its message and usage,
// and exits with 2.
type UsageError struct{ Msg string }

func (e UsageError) Error() string { return e.Msg }

// helpRequest is --help on a command: its usage, with flags (each flag and its
// description), goes to stdout, and the exit code is 0.
type helpRequest struct{ flags string }

func (h helpRequest) Error() string { return "help requested" }

// The binary that links the provider SDKs and the database driver, and its directory in the
// repository (go run ./cmd/agentctx-full).
const (
	fullName = "agentctx-full"
	fullDir  = "cmd/agentctx-full"
)

// onlyFull is what a flag's description adds, in a build that lacks (lacking) what the flag
// selects: that agentctx-full has it.
func onlyFull(lacking bool) string {
	if !lacking {
		return ""
	}
	return "; this build has only the default: " + fullName + " links the rest"
}

// needsFull is a request for what this build does not link (a provider's body, a model
// summarizer, a PostgreSQL session): what names it as the command line does. The command
// fails with 1 and prints the agentctx-full command line that does it.
type needsFull struct{ what string }

func (e needsFull) Error() string {
	return e.what + " needs " + fullName + ", the build of agentctx that links the provider SDKs and the PostgreSQL driver; run the same command with it"
}

// commandLine writes args for a shell: each quoted when it needs to be, a database
// address's password hidden as in every message.
func commandLine(args []string) string {
	out := make([]string, len(args))
	for i, arg := range args {
		if flag, value, ok := strings.Cut(arg, "="); ok && strings.HasPrefix(flag, "-") && isDatabase(value) {
			arg = flag + "=" + hidePassword(value)
		} else if isDatabase(arg) {
			arg = hidePassword(arg)
		}
		if !shellSafe.MatchString(arg) {
			arg = "'" + strings.ReplaceAll(arg, "'", `'\''`) + "'"
		}
		out[i] = arg
	}
	return strings.Join(out, " ")
}

// shellSafe matches a word a POSIX shell reads as it is.
var shellSafe = regexp.MustCompile(`^[A-Za-z0-9_./:=@%+,-]+$`)
