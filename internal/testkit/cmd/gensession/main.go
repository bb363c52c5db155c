// Command gensession writes a generated Claude Code session (testkit.Generate) as a JSONL
// transcript file, one record a line, the way Claude Code writes its transcripts. The
// benchmarks that run outside Go (bench/peer) read these files.
//
// Usage:
//
//	go run ./internal/testkit/cmd/gensession -turns 2000 -o session.jsonl
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/agentctx/agentctx/internal/testkit"
)

func main() {
	err := run(os.Args[1:], os.Stdout)
	if errors.Is(err, flag.ErrHelp) {
		return // the flag package printed the usage
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gensession:", err)
		os.Exit(2)
	}
}

// run parses args and writes the session to the file they name, or to stdout.
func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("gensession", flag.ContinueOnError)
	turns := fs.Int("turns", 200, "the number of model calls (API rounds) in the session")
	seed := fs.Uint64("seed", 1, "selects the session; the same seed and turns give the same file")
	out := fs.String("o", "", "the `FILE` to write (default: stdout)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if *turns <= 0 {
		return fmt.Errorf("-turns must be positive, got %d", *turns)
	}
	if *out == "" {
		return write(stdout, *turns, *seed)
	}
	f, err := os.Create(*out)
	if err != nil {
		return err
	}
	return errors.Join(write(f, *turns, *seed), f.Close())
}

// write encodes the generated session on w, one record a line.
func write(w io.Writer, turns int, seed uint64) error {
	bw := bufio.NewWriter(w)
	for i, r := range testkit.Generate(turns, testkit.Options{Seed: seed}) {
		line, err := r.MarshalJSON()
		if err != nil {
			return fmt.Errorf("record %d (%s): %w", i+1, r.UUID, err)
		}
		bw.Write(line)
		bw.WriteByte('\n')
	}
	return bw.Flush()
}
