// Command anthropic is a complete agent turn loop on the official Anthropic Go SDK: the
// user's prompt joins a session, agentctx prepares each request, the SDK client sends it,
// the answer joins the session, and the tool calls it makes are run and answered until the
// model ends its turn.
//
//	ANTHROPIC_API_KEY=… go run ./examples/anthropic "What is in this directory?"
//
// The SDK client reads its key, base URL and retry policy from the environment; the model
// is ANTHROPIC_MODEL, or claude-sonnet-4-5. The one tool lists a directory.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"strings"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/anthropic"
	"github.com/agentctx/agentctx/provider"
	"github.com/agentctx/agentctx/session"
	"github.com/agentctx/agentctx/transcript"
	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
)

func main() {
	prompt := "What is in the current directory? Answer in one sentence."
	if len(os.Args) > 1 {
		prompt = strings.Join(os.Args[1:], " ")
	}
	model := os.Getenv("ANTHROPIC_MODEL")
	if model == "" {
		model = "claude-sonnet-4-5"
	}
	c := sdk.NewClient(option.WithMaxRetries(4)) // retries and backoff are the SDK's
	p, err := agentctx.New(agentctx.Config{Model: model})
	if err != nil {
		log.Fatal(err)
	}
	if err := run(context.Background(), anthropic.NewClient(&c), p, prompt, os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// maxRounds bounds the model's tool-call rounds in one turn.
const maxRounds = 8

var system = []*transcript.Text{{Text: "You are a helpful agent with a tool that lists directories. Be brief."}}

var tools = []provider.Tool{{Name: "list_directory", Definition: json.RawMessage(`{"name":"list_directory",` +
	`"description":"List the names of the entries of a directory.",` +
	`"input_schema":{"type":"object","properties":{"path":{"type":"string","description":"The directory; . for the current one."}},"required":["path"]}}`)}}

// run plays one user turn: the prompt, then requests and answers until the model stops
// calling tools. It prints the model's text and the tool calls to w.
func run(ctx context.Context, c *anthropic.Client, p *agentctx.Pipeline, prompt string, w io.Writer) error {
	sess := session.New(session.Options{})
	if _, err := sess.User(prompt); err != nil {
		return err
	}
	for range maxRounds {
		res, err := sess.Prepare(ctx, p, agentctx.Input{System: system, Tools: tools})
		if err != nil {
			return err
		}
		rec, err := send(ctx, c, sess, p, res, w)
		if err != nil {
			return err
		}
		var results []*transcript.ToolResult
		for _, b := range rec.Message.Content {
			switch b := b.(type) {
			case *transcript.Text:
				fmt.Fprintln(w, b.Text)
			case *transcript.ToolUse:
				fmt.Fprintf(w, "[%s %s]\n", b.Name, b.Input)
				results = append(results, call(b))
			}
		}
		if rec.Message.StopReason != "tool_use" || len(results) == 0 {
			return nil
		}
		if _, err := sess.ToolResults(results...); err != nil {
			return err
		}
	}
	return errors.New("the model kept calling tools")
}

// send sends the turn's request and, while the provider refuses it or cuts the answer at
// max_tokens, climbs agentctx's recovery ladder: every rung is bounded, so the loop ends.
func send(ctx context.Context, c *anthropic.Client, sess *session.Session, p *agentctx.Pipeline, res agentctx.Result, w io.Writer) (transcript.Record, error) {
	for {
		rec, err := c.Turn(ctx, sess, res.Request, anthropic.Options{})
		if err == nil && !rec.Message.Truncated() {
			return rec, nil
		}
		if err == nil {
			for _, b := range rec.Message.Content {
				if t, ok := b.(*transcript.Text); ok {
					fmt.Fprint(w, t.Text)
				}
			}
			err = provider.ErrOutputTruncated
		}
		// A retryable error already went through the SDK's retries: Recover returns it as it
		// is. The other classes (prompt too long, media rejected, a cut answer) get the next
		// request, or a terminal error.
		if res, err = sess.Recover(ctx, p, agentctx.Input{System: system, Tools: tools}, err); err != nil {
			return transcript.Record{}, fmt.Errorf("turn failed (%s): %w", provider.ClassOf(err), err)
		}
	}
}

// call runs a tool call and returns its result.
func call(tu *transcript.ToolUse) *transcript.ToolResult {
	if tu.Name != "list_directory" {
		return transcript.ErrorResult(tu.ID, "unknown tool "+tu.Name)
	}
	var in struct {
		Path string `json:"path"`
	}
	if err := json.Unmarshal(tu.Input, &in); err != nil || in.Path == "" {
		return transcript.ErrorResult(tu.ID, "the input needs a path")
	}
	entries, err := os.ReadDir(in.Path)
	if err != nil {
		return transcript.ErrorResult(tu.ID, err.Error())
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return transcript.TextResult(tu.ID, strings.Join(names, "\n"))
}
