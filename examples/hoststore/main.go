// Command hoststore shows a runtime that keeps its conversation in its own database — here
// an in-memory table standing in for one, rows in the runtime's own shape — and uses agentctx
// for its decisions only: each step it reads its rows, converts them (glue.go) and lets a
// host.Conversation build the request, replaying the decisions agentctx keeps in a
// DecisionStore of their own. No transcript is kept beside the table.
//
//	go run ./examples/hoststore
//
// A stand-in model calls a log-reading tool each turn and answers; every third output is too
// big for the window and is replaced by a preview naming the file the full output went to,
// which the runtime's own tools can open.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/host"
	"github.com/agentctx/agentctx/provider"
	"github.com/agentctx/agentctx/summarize"
	"github.com/agentctx/agentctx/transcript"
)

// Runtime is the agent runtime: its database, and what it hands agentctx.
type Runtime struct {
	DB        *Table
	Decisions host.DecisionStore
	Pipeline  *agentctx.Pipeline
	System    []*transcript.Text
	Tools     []provider.Tool
	Now       func() time.Time
	// memos holds each conversation's host.Memo (glue.go), made at its first step.
	memos sync.Map
}

// readLog is the runtime's one tool.
var readLog = provider.Tool{Name: "read_log", Definition: json.RawMessage(
	`{"name":"read_log","description":"Read the log of a shard.","input_schema":{"type":"object","properties":{"shard":{"type":"integer"}},"required":["shard"]}}`)}

// NewRuntime returns a runtime whose replaced tool outputs and decisions go under dir.
func NewRuntime(dir string, now func() time.Time) (*Runtime, error) {
	p, err := agentctx.New(agentctx.Config{
		ContextWindow: 24_000,
		// The full outputs go to files the runtime's own tools can read: the preview names the path.
		Budget:  agentctx.BudgetConfig{Store: agentctx.FileStore{Root: filepath.Join(dir, "tool-results")}},
		Compact: agentctx.CompactConfig{Summarizer: summarize.Extractive{}},
		Now:     now,
	})
	if err != nil {
		return nil, err
	}
	return &Runtime{
		DB: &Table{}, Decisions: host.FileStore{Root: filepath.Join(dir, "decisions")}, Pipeline: p,
		System: []*transcript.Text{{Text: "You inspect shard logs."}}, Tools: []provider.Tool{readLog}, Now: now,
	}, nil
}

// Turn runs one turn of conv: the prompt, then steps until the model answers in text.
func (rt *Runtime) Turn(ctx context.Context, conv, prompt string, w io.Writer) error {
	rt.DB.Insert(Row{Conv: conv, Role: "user", Text: prompt, CreatedAt: rt.Now()})
	for {
		res, err := rt.Prepare(ctx, conv)
		if err != nil {
			return err
		}
		body, err := res.Request.MarshalJSON()
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "%s: %d messages, %d tokens, %d bytes, %d decisions stored\n", conv, len(res.Request.Messages), res.Report.InputTokens, len(body), len(res.Append))
		// Here the runtime sends body to its provider; the stand-in answers.
		row := standIn(res.Request)
		row.Conv, row.CreatedAt = conv, rt.Now()
		id := rt.DB.Insert(row)
		// The step reports its usage after the answer is written.
		rt.DB.SetUsage(id, res.Report.InputTokens, 20)
		if row.CallID == "" {
			return nil
		}
		rt.DB.Insert(Row{Conv: conv, Role: "tool", CallID: row.CallID, Text: runTool(row.Args), CreatedAt: rt.Now()})
	}
}

// standIn plays the model: it calls read_log for a prompt and answers a tool's output.
func standIn(req provider.Request) Row {
	last := req.Messages[len(req.Messages)-1]
	if last.Content[0].Kind() == transcript.KindToolResult {
		return Row{Role: "assistant", Text: "The shard looks healthy."}
	}
	n := len(req.Messages)
	return Row{Role: "assistant", CallID: fmt.Sprintf("call_%d", n), Tool: "read_log", Args: fmt.Sprintf(`{"shard":%d}`, n)}
}

// runTool runs read_log: every third shard's log is long.
func runTool(args string) string {
	var in struct{ Shard int }
	_ = json.Unmarshal([]byte(args), &in)
	lines := 100
	if in.Shard%3 == 0 {
		lines = 2_000
	}
	return strings.Repeat(fmt.Sprintf("shard %d: request served in 12ms, 4096 bytes\n", in.Shard), lines)
}

func main() {
	dir, err := os.MkdirTemp("", "hoststore")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	clock := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	rt, err := NewRuntime(dir, func() time.Time { return clock })
	if err != nil {
		log.Fatal(err)
	}
	for k := range 12 {
		if err := rt.Turn(context.Background(), "conv-1", fmt.Sprintf("Check shard %d.", k), os.Stdout); err != nil {
			log.Fatal(err)
		}
		clock = clock.Add(time.Minute)
	}
}
