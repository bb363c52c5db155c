package provider_test

import (
	"fmt"

	"github.com/agentctx/agentctx/provider"
	"github.com/agentctx/agentctx/transcript"
)

// A caller that sends a request each turn keeps one buffer for the bodies: once the provider
// has read a turn's body, the next one is appended to body[:0], into the same memory.
func ExampleRequest_AppendJSON() {
	var body []byte
	for turn := 1; turn <= 2; turn++ {
		req := provider.Request{Model: "claude-sonnet-4-5", MaxTokens: 1024, Messages: []provider.Message{{
			Role:    transcript.RoleUser,
			Content: []transcript.Block{&transcript.Text{Text: fmt.Sprintf("turn %d", turn)}},
		}}}
		var err error
		if body, err = req.AppendJSON(body[:0]); err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(string(body))
	}
	// Output:
	// {"model":"claude-sonnet-4-5","max_tokens":1024,"messages":[{"role":"user","content":[{"type":"text","text":"turn 1"}]}]}
	// {"model":"claude-sonnet-4-5","max_tokens":1024,"messages":[{"role":"user","content":[{"type":"text","text":"turn 2"}]}]}
}
