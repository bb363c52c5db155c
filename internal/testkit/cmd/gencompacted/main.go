// Command gencompacted writes a long session the way a live runtime writes it: it replays a
// generated session (testkit.Generate) turn by turn through a Pipeline with auto-compaction
// (the extractive summarizer, a 200k window by default), calling Prepare before each model
// response, appending Result.Append, hanging the response off Result.Leaf and setting the
// response's input tokens to the request's. Its compact boundaries are the library's own.
// BENCHMARKS.md measures a cold request on its output against a copy cut at the active tail.
//
// Usage:
//
//	go run ./internal/testkit/cmd/gencompacted -turns 40000 -o /tmp/c40000.jsonl
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/agentctx/agentctx/internal/testkit"
	"github.com/agentctx/agentctx/internal/testkit/compacted"
	"github.com/agentctx/agentctx/transcript"
)

func main() {
	err := run(context.Background(), os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gencompacted:", err)
		os.Exit(1)
	}
}

// run parses args and writes the compacted session they ask for.
func run(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("gencompacted", flag.ContinueOnError)
	fs.SetOutput(stderr)
	turns := fs.Int("turns", 2000, "the `number` of turns to generate")
	seed := fs.Uint64("seed", 1, "the generator's `seed`")
	window := fs.Int("window", 200_000, "the context window, `N` tokens")
	out := fs.String("o", "", "the output `file`")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" {
		return errors.New("-o names no output file")
	}
	recs, compactions, err := compacted.Replay(ctx, testkit.Generate(*turns, testkit.Options{Seed: *seed}), *window)
	if err != nil {
		return err
	}
	if err := write(*out, recs); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "%s: %d records, %d compactions\n", *out, len(recs), compactions)
	return nil
}

// write writes recs to path as JSON lines.
func write(path string, recs []transcript.Record) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	for i := range recs {
		b, err := recs[i].MarshalJSON()
		if err != nil {
			f.Close()
			return fmt.Errorf("record %d: %w", i, err)
		}
		w.Write(b)
		w.WriteByte('\n')
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
