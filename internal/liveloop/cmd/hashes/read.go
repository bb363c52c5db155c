package main

import (
	"fmt"
	"os"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/transcript"
)

// read returns the records of the session at f and the model its last response names (one
// the model table knows), or claude-sonnet-4-5.
func read(f string) ([]transcript.Record, string) {
	tr, err := transcript.ReadFile(f, transcript.ReadOptions{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "hashes:", err)
		os.Exit(1)
	}
	recs := tr.Records
	for i := len(recs) - 1; i >= 0; i-- {
		if m := recs[i].Message; m != nil && recs[i].Type == transcript.TypeAssistant {
			if _, ok := agentctx.DefaultModels().Lookup(m.Model); ok {
				return recs, m.Model
			}
		}
	}
	return recs, "claude-sonnet-4-5"
}
