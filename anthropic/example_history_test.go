package anthropic_test

import (
	"encoding/json"
	"fmt"

	"github.com/agentctx/agentctx/anthropic"
	"github.com/agentctx/agentctx/transcript"
	sdk "github.com/anthropics/anthropic-sdk-go/v2"
)

// A host that keeps its conversation in the SDK's types makes the records a Pipeline takes
// with History.Records: no conversion of its own.
func ExampleHistory_Records() {
	h := anthropic.History{
		System: []sdk.TextBlockParam{{Text: "You are terse."}},
		Messages: []sdk.MessageParam{
			sdk.NewUserMessage(sdk.NewTextBlock("What is in notes.txt?")),
			sdk.NewAssistantMessage(sdk.NewToolUseBlock("toolu_1", map[string]string{"path": "notes.txt"}, "read")),
			sdk.NewUserMessage(sdk.NewToolResultBlock("toolu_1", "buy milk", false)),
		},
	}
	system, records, err := h.Records(anthropic.RecordOptions{SessionID: "s1"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("system:", system[0].Text)
	for i, r := range records {
		body, _ := json.Marshal(r.Message)
		fmt.Println(r.Type, i == 0 || r.ParentUUID == records[i-1].UUID, string(body))
	}
	// Output:
	// system: You are terse.
	// user true {"role":"user","content":[{"type":"text","text":"What is in notes.txt?"}]}
	// assistant true {"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"read","input":{"path":"notes.txt"}}]}
	// user true {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"buy milk"}],"is_error":false}]}
}

// HistoryOf goes the other way: the records of a conversation (the library's own, a
// compaction's summary among them) become the message params a host keeps.
func ExampleHistoryOf() {
	records := []transcript.Record{
		{Type: transcript.TypeUser, UUID: "u1", Message: &transcript.Message{Role: transcript.RoleUser,
			Content: []transcript.Block{&transcript.Text{Text: "Think first."}}}},
		{Type: transcript.TypeAssistant, UUID: "a1", ParentUUID: "u1", Message: &transcript.Message{Role: transcript.RoleAssistant,
			ID: "msg_1", Usage: &transcript.Usage{InputTokens: 12, OutputTokens: 30},
			Content: []transcript.Block{&transcript.Thinking{Thinking: "Easy.", Signature: "sig"}, &transcript.Text{Text: "Done."}}}},
	}
	h, err := anthropic.HistoryOf(nil, records)
	if err != nil {
		fmt.Println(err)
		return
	}
	for i, m := range h.Messages {
		body, _ := json.Marshal(m)
		fmt.Printf("%s %q\n", body, h.Meta[i].ID)
	}
	// Output:
	// {"content":[{"text":"Think first.","type":"text"}],"role":"user"} ""
	// {"content":[{"signature":"sig","thinking":"Easy.","type":"thinking"},{"text":"Done.","type":"text"}],"role":"assistant"} "msg_1"
}
