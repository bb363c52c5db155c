package session_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/provider"
	"github.com/agentctx/agentctx/session"
	"github.com/agentctx/agentctx/transcript"
)

// ExampleSession writes one turn with a tool call: the session parents each record on the one
// before and checks that tool results answer the calls of the latest response.
func ExampleSession() {
	n := 0
	s := session.New(session.Options{
		ID:      "sess",
		Now:     func() time.Time { return time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC) },
		NewUUID: func() string { n++; return fmt.Sprintf("rec-%d", n) },
	})
	p, err := agentctx.New(agentctx.Config{Model: "claude-sonnet-4-5"})
	if err != nil {
		panic(err)
	}
	if _, err := s.User("How many lines does go.mod have?"); err != nil {
		panic(err)
	}
	res, err := s.Prepare(context.Background(), p, agentctx.Input{})
	if err != nil {
		panic(err)
	}
	fmt.Println("messages sent:", len(res.Request.Messages))
	_, err = s.Response([]byte(`{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5",` +
		`"content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"wc -l go.mod"}}],` +
		`"stop_reason":"tool_use","usage":{"input_tokens":20,"output_tokens":15}}`))
	if err != nil {
		panic(err)
	}
	_, err = s.ToolResults(transcript.TextResult("toolu_9", "3 go.mod"))
	fmt.Println(err)
	r, err := s.ToolResults(transcript.TextResult("toolu_1", "3 go.mod"))
	if err != nil {
		panic(err)
	}
	fmt.Println(r.UUID, "answers", r.SourceToolAssistantUUID, "after", r.ParentUUID)
	for _, r := range s.Records() {
		fmt.Println(r.Type, r.UUID, r.Timestamp)
	}
	// Output:
	// messages sent: 1
	// agentctx: session tool results: result 0: tool_use_id "toolu_9" answers no open tool call of the latest assistant turn
	// rec-3 answers rec-2 after rec-2
	// user rec-1 2026-12-01T09:00:00.000Z
	// assistant rec-2 2026-12-01T09:00:00.000Z
	// user rec-3 2026-12-01T09:00:00.000Z
}

// ExampleSession_Snip offers the model the snip tool and carries out its call: the snip record
// is appended, the call answered, and the next request leaves the snipped messages out.
func ExampleSession_Snip() {
	n := 0
	s := session.New(session.Options{
		ID:      "sess",
		Now:     func() time.Time { return time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC) },
		NewUUID: func() string { n++; return fmt.Sprintf("%d0000000-0000-4000-8000-000000000000", n) },
	})
	p, err := agentctx.New(agentctx.Config{Model: "claude-sonnet-4-5"})
	if err != nil {
		panic(err)
	}
	tools := []provider.Tool{agentctx.SnipTool()}
	ctx := context.Background()
	must := func(_ transcript.Record, err error) {
		if err != nil {
			panic(err)
		}
	}
	must(s.User("We release 1.2 today."))
	must(s.Response([]byte(`{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"text","text":"Noted."}],"usage":{"input_tokens":20,"output_tokens":3}}`)))
	must(s.User("The build log: compiled 212 packages, 0 failures."))
	must(s.Response([]byte(`{"id":"msg_2","type":"message","role":"assistant","content":[{"type":"text","text":"The build is green."}],"usage":{"input_tokens":40,"output_tokens":6}}`)))
	must(s.User("Write the release notes."))
	res, err := s.Prepare(ctx, p, agentctx.Input{Tools: tools})
	if err != nil {
		panic(err)
	}
	fmt.Println("the log sent as:", res.Request.Messages[2].Content[0].(*transcript.Text).Text)
	must(s.Response([]byte(`{"id":"msg_3","type":"message","role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"Snip",` +
		`"input":{"ids":["[id:30000000]","[id:deadbeef]"],"reason":"the log is read"}}],"stop_reason":"tool_use","usage":{"input_tokens":60,"output_tokens":20}}`)))
	for _, tu := range s.Pending().ToolUses {
		out, err := s.Snip(p, tu)
		if err != nil {
			panic(err)
		}
		fmt.Println(out.Text)
		must(s.ToolResults(out.Result(tu.ID)))
	}
	res, err = s.Prepare(ctx, p, agentctx.Input{Tools: tools})
	if err != nil {
		panic(err)
	}
	body, err := res.Request.MarshalJSON()
	if err != nil {
		panic(err)
	}
	fmt.Println("the log sent again:", strings.Contains(string(body), "212 packages"))
	// Output:
	// the log sent as: [id:30000000]
	// Snipped 1 message ([id:30000000]): about 13 tokens left your context. It stays in the session's transcript, but you will not see it again.
	// Not snipped:
	// - [id:deadbeef]: no message has tag "[id:deadbeef]"
	// the log sent again: false
}
