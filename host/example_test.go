package host_test

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/host"
	"github.com/agentctx/agentctx/transcript"
)

// A host keeps its messages under its own ids; the Conversation keeps the decisions. The big
// tool result is replaced once, and the decision is replayed on the next turn; after the host
// edits that message, the decision is reported and the edited result is sent as it is.
func Example() {
	dir, err := os.MkdirTemp("", "host-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	p, err := agentctx.New(agentctx.Config{ContextWindow: 24_000, Tokens: agentctx.EstimateCounter{},
		Budget: agentctx.BudgetConfig{Store: agentctx.FileStore{Root: dir}}})
	if err != nil {
		panic(err)
	}
	msg := func(role transcript.Role, b transcript.Block) *transcript.Message {
		return &transcript.Message{Role: role, Content: []transcript.Block{b}}
	}
	msgs := []host.Message{
		{ID: "r1", Message: msg(transcript.RoleUser, &transcript.Text{Text: "Read the log."})},
		{ID: "r2", Message: msg(transcript.RoleAssistant, &transcript.ToolUse{ID: "toolu_1", Name: "read_log", Input: []byte(`{}`)})},
		{ID: "r3", Message: msg(transcript.RoleUser, transcript.TextResult("toolu_1", strings.Repeat("a log line\n", 8_000)))},
	}
	c := host.Conversation{ID: "conv-1", Store: &host.MemoryStore{}}
	ctx := context.Background()
	for _, step := range []string{"first", "again", "edited"} {
		if step == "edited" {
			msgs[2].Message = msg(transcript.RoleUser, transcript.TextResult("toolu_1", "a shorter log\n"))
		}
		res, err := c.Prepare(ctx, p, msgs, agentctx.Input{})
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s: %d records stored, %d dropped", step, len(res.Append), len(res.Dropped))
		if len(res.Dropped) > 0 {
			fmt.Printf(" (%s)", res.Dropped[0].Reason)
		}
		fmt.Println()
	}
	// Output:
	// first: 1 records stored, 0 dropped
	// again: 0 records stored, 0 dropped
	// edited: 0 records stored, 1 dropped (the host no longer has message "r3" as it was (deleted or edited))
}
