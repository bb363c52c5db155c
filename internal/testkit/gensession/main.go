// Command gensession writes a generated Claude Code session (testkit.Generate, seed 1) as a
// transcript file, for measuring the CLI on sessions of a given length:
//
//	go run ./internal/testkit/gensession -turns 2000 > session.jsonl
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"

	"github.com/agentctx/agentctx/internal/testkit"
)

func main() {
	turns := flag.Int("turns", 2000, "the number of turns to generate")
	flag.Parse()
	if err := write(*turns); err != nil {
		fmt.Fprintln(os.Stderr, "gensession:", err)
		os.Exit(1)
	}
}

// write writes the session of the given length to standard output, one record a line.
func write(turns int) error {
	w := bufio.NewWriter(os.Stdout)
	for _, r := range testkit.Generate(turns, testkit.Options{Seed: 1}) {
		line, err := r.MarshalJSON()
		if err != nil {
			return err
		}
		w.Write(line)
		w.WriteByte('\n')
	}
	return w.Flush()
}
