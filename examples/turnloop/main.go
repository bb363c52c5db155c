// Command turnloop shows how an agent runtime drives agentctx each turn: append the user's
// message to the durable transcript, Prepare the request, append the turn's decision records,
// send the request (here: print its size), and append the model's answer.
//
// It works on a copy of a session file so the original stays untouched:
//
//	go run ./examples/turnloop [SESSION.jsonl]
//
// Without an argument it uses the bundled session in testdata/sessions.
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/google/uuid"
)

func main() {
	src := filepath.Join("testdata", "sessions", "claude-code-log", "worktrees-ef958aa1.jsonl")
	if len(os.Args) > 1 {
		src = os.Args[1]
	}
	dir, err := os.MkdirTemp("", "turnloop")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := run(src, dir, os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// run plays two turns on a copy of src made in dir.
func run(src, dir string, w io.Writer) error {
	path := filepath.Join(dir, "session.jsonl")
	if err := copyFile(src, path); err != nil {
		return err
	}

	clock := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	p, err := agentctx.New(agentctx.Config{
		Model:  "claude-sonnet-4-5",
		Budget: agentctx.BudgetConfig{Store: agentctx.FileStore{Root: filepath.Join(dir, "tool-results")}},
		// Auto-compact when the session outgrows the window; a model-backed Summarizer goes here.
		Compact: agentctx.CompactConfig{Summarizer: agentctx.Extractive{}},
		Now:     func() time.Time { return clock },
	})
	if err != nil {
		return err
	}
	app, err := agentctx.OpenAppender(path, agentctx.AppendOptions{Sync: true})
	if err != nil {
		return err
	}
	defer app.Close()

	ctx := context.Background()
	for turn, prompt := range []string{"Summarize where we are.", "What should we do next?"} {
		tr, err := agentctx.ReadFile(path, agentctx.ReadOptions{})
		if err != nil {
			return err
		}
		chain, err := agentctx.BuildChain(tr.Records, agentctx.ChainOptions{})
		if err != nil {
			return err
		}
		// 1. The user's message joins the durable transcript first.
		user := newRecord(agentctx.TypeUser, chain, clock)
		user.Message = &agentctx.Message{Role: agentctx.RoleUser, StringContent: true,
			Content: []agentctx.Block{&agentctx.Text{Text: prompt}}}
		if err := app.Append(user); err != nil {
			return err
		}
		records := append(tr.Records, user)

		// 2. Prepare the request and persist the turn's records (decisions, a compaction)
		// before sending it. A *PromptTooLongError still comes with records to append: the
		// failed attempt the circuit breaker counts.
		res, err := p.Prepare(ctx, agentctx.Input{Records: records})
		if aerr := app.Append(res.Append...); aerr != nil {
			return aerr
		}
		if err != nil {
			return err
		}
		body, err := res.Request.MarshalJSON()
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "turn %d: %d messages, %d input tokens, %d bytes, %d decision records appended\n",
			turn+1, len(res.Request.Messages), res.Report.InputTokens, len(body), len(res.Append))

		// 3. Here the runtime would POST body to /v1/messages; we append a stand-in answer. Its
		// parent is res.Leaf: after a compaction, the last record the compaction appended.
		answer := newRecord(agentctx.TypeAssistant, &agentctx.Chain{Leaf: &agentctx.Record{UUID: res.Leaf, SessionID: user.SessionID}}, clock.Add(5*time.Second))
		answer.Message = &agentctx.Message{ID: "msg_" + answer.UUID[:8], Type: "message", Role: agentctx.RoleAssistant,
			Model: "claude-sonnet-4-5", Content: []agentctx.Block{&agentctx.Text{Text: "(the model's answer)"}},
			Usage: &agentctx.Usage{InputTokens: res.Report.InputTokens, OutputTokens: 6}}
		if err := app.Append(answer); err != nil {
			return err
		}
		clock = clock.Add(time.Minute)
	}
	return nil
}

// newRecord returns a record parented on the chain's leaf.
func newRecord(typ agentctx.RecordType, chain *agentctx.Chain, at time.Time) agentctx.Record {
	r := agentctx.Record{Type: typ, UUID: uuid.NewString(), Timestamp: at.Format(time.RFC3339Nano)}
	if chain.Leaf != nil {
		r.ParentUUID, r.SessionID = chain.Leaf.UUID, chain.Leaf.SessionID
	}
	return r
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
