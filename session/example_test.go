package session_test

import (
	"context"
	"fmt"
	"time"

	"github.com/agentctx/agentctx"
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
