// Command agentctx shows what an LLM agent's model sees, turn by turn, for a Claude Code
// session file.
//
// Usage:
//
//	agentctx inspect [--model M] [--window N] [--now RFC3339] [--json] FILE
//	agentctx request [--model M] [--window N] [--max-tokens N] [--now RFC3339] [--tools FILE] [--store DIR] [--indent] FILE
//	agentctx compact [--instructions TEXT] [--out FILE2] [--rehydrate-files] [--model M] [--window N] [--now RFC3339] FILE
//
// inspect summarizes a session: its records, the active chain, tokens by category, the
// largest records, the anchored and counted totals, the model's window and pressure levels,
// the compaction state, and what each stage of the pipeline would do on the next turn. request
// prints the provider-ready request body for the session's next turn; when the session
// overflows the window it is compacted in memory first, with the extractive summarizer. compact
// compacts the session now with the extractive summarizer and appends the compaction's records
// to FILE, or to a new copy at FILE2, never changing the bytes already written.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `usage:
  agentctx inspect [--model M] [--window N] [--now RFC3339] [--json] FILE
  agentctx request [--model M] [--window N] [--max-tokens N] [--now RFC3339] [--tools FILE] [--store DIR] [--indent] FILE
  agentctx compact [--instructions TEXT] [--out FILE2] [--rehydrate-files] [--model M] [--window N] [--now RFC3339] FILE
`

// run is the command's body: it returns the exit code (0 ok, 1 failure, 2 usage error).
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var err error
	switch args[0] {
	case "inspect":
		err = inspect(ctx, args[1:], stdout, stderr)
	case "request":
		err = request(ctx, args[1:], stdout, stderr)
	case "compact":
		err = compact(ctx, args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "agentctx: unknown command %q\n%s", args[0], usage)
		return 2
	}
	if err == nil {
		return 0
	}
	if _, ok := err.(usageError); ok {
		fmt.Fprintf(stderr, "agentctx: %v\n%s", err, usage)
		return 2
	}
	fmt.Fprintf(stderr, "agentctx: %v\n", err)
	return 1
}

// usageError is a mistake in the command line.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }
