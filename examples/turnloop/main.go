// Command turnloop shows how an agent runtime drives agentctx each turn: append the user's
// message to the durable transcript, Prepare the request, append the turn's decision records,
// send the request (here: print its size), append the model's answer, and climb the recovery
// ladder when the provider refuses the request or cuts the answer at max_tokens.
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
	"github.com/agentctx/agentctx/provider"
	"github.com/agentctx/agentctx/session"
	"github.com/agentctx/agentctx/summarize"
	"github.com/agentctx/agentctx/transcript"
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
		Model: "claude-sonnet-4-5",
		// Recover raises it once, to the model's maximum, when an answer is cut at max_tokens.
		MaxOutputTokens: 16_000,
		Budget:          agentctx.BudgetConfig{Store: agentctx.FileStore{Root: filepath.Join(dir, "tool-results")}},
		// Auto-compact when the session outgrows the window; a model-backed Summarizer goes here.
		Compact: agentctx.CompactConfig{Summarizer: summarize.Extractive{}},
		Now:     func() time.Time { return clock },
	})
	if err != nil {
		return err
	}
	app, err := transcript.OpenAppender(path, transcript.AppendOptions{Sync: true})
	if err != nil {
		return err
	}
	defer app.Close()

	tr, err := transcript.ReadFile(path, transcript.ReadOptions{})
	if err != nil {
		return err
	}
	// The session continues the transcript from its leaf and writes through the Appender.
	sess, err := session.Resume(tr.Records, session.Options{Writer: app, Now: func() time.Time { return clock }})
	if err != nil {
		return err
	}
	ctx := context.Background()
	for turn, prompt := range []string{"Summarize where we are.", "What should we do next?"} {
		// 1. The user's message joins the durable transcript first.
		if _, err := sess.User(prompt); err != nil {
			return err
		}
		// 2. Prepare the request. The session appends the turn's records (decisions, a
		// compaction) before the request is sent — also with a *PromptTooLongError, which
		// still records the failed attempt the circuit breaker counts.
		res, err := sess.Prepare(ctx, p, agentctx.Input{})
		if err != nil {
			return err
		}
		for try := 0; ; try++ {
			body, err := res.Request.MarshalJSON()
			if err != nil {
				return err
			}
			fmt.Fprintf(w, "turn %d: %d messages, %d input tokens, %d bytes, max_tokens %d, %d records appended\n",
				turn+1, len(res.Request.Messages), res.Report.InputTokens, len(body), res.Request.MaxTokens, len(res.Append))

			// 3. Here the runtime would POST body to /v1/messages (through an adapter such as
			// agentctx/anthropic, whose errors are classified) and append the answer; a
			// stand-in provider takes its place. The session parents the answer on res.Leaf.
			answer, perr := standIn(turn, try, res)
			var stop error
			if perr == nil {
				rec, err := sess.Response(answer)
				if err != nil {
					return err
				}
				if !rec.Message.Truncated() {
					break
				}
				stop = provider.ErrOutputTruncated
			} else {
				stop = perr
			}
			// 4. The provider refused the request, or cut the answer: Recover gives the next
			// request and appends the records that make the fix last, or a terminal error.
			// A retryable error (429, 529, a timeout) comes back unchanged: retry it.
			res, err = sess.Recover(ctx, p, agentctx.Input{}, stop)
			if err != nil {
				return err
			}
			rc := res.Report.Recovery
			fmt.Fprintf(w, "  recovered (%s): %s\n", rc.Rung, rc.Reason)
		}
		clock = clock.Add(time.Minute)
	}
	return nil
}

// standIn plays the provider: it refuses the first request of the first turn as too long
// (an adapter's error carries the provider's figures the same way), cuts the first answer of
// the second turn at max_tokens, and otherwise answers.
func standIn(turn, try int, res agentctx.Result) ([]byte, error) {
	if turn == 0 && try == 0 {
		return nil, &provider.PromptTooLongError{Tokens: res.Report.Pressure.Levels.Window + 1_000, Limit: res.Report.Pressure.Levels.Window,
			Reason: "the provider refused the prompt"}
	}
	stop := "end_turn"
	if turn == 1 && try == 0 {
		stop = "max_tokens"
	}
	return fmt.Appendf(nil, `{"id":"msg_turnloop_%d_%d","type":"message","role":"assistant","model":"claude-sonnet-4-5",`+
		`"content":[{"type":"text","text":"(the model's answer)"}],"stop_reason":%q,`+
		`"usage":{"input_tokens":%d,"output_tokens":6}}`, turn+1, try, stop, res.Report.InputTokens), nil
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
