package openai_test

import (
	"encoding/json"
	"fmt"

	"github.com/agentctx/agentctx/openai"
	"github.com/agentctx/agentctx/transcript"
	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"
)

// A host that keeps its Chat Completions messages makes the records a Pipeline takes with
// ChatHistory.Records: no conversion of its own.
func ExampleChatHistory_Records() {
	call := sdk.ChatCompletionMessageToolCallUnionParam{OfFunction: &sdk.ChatCompletionMessageFunctionToolCallParam{
		ID: "call_1", Function: sdk.ChatCompletionMessageFunctionToolCallFunctionParam{Name: "read", Arguments: `{"path":"notes.txt"}`}}}
	h := openai.ChatHistory{Messages: []sdk.ChatCompletionMessageParamUnion{
		sdk.SystemMessage("You are terse."),
		sdk.UserMessage("What is in notes.txt?"),
		{OfAssistant: &sdk.ChatCompletionAssistantMessageParam{ToolCalls: []sdk.ChatCompletionMessageToolCallUnionParam{call}}},
		sdk.ToolMessage("buy milk", "call_1"),
	}}
	system, records, err := h.Records(openai.RecordOptions{SessionID: "s1"})
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
	// assistant true {"type":"message","role":"assistant","content":[{"type":"tool_use","id":"call_1","name":"read","input":{"path":"notes.txt"}}]}
	// user true {"role":"user","content":[{"type":"tool_result","tool_use_id":"call_1","content":[{"type":"text","text":"buy milk"}]}]}
}

// ChatHistoryOf goes the other way: the records of a conversation (a compaction's summary
// among them) become the messages a host keeps.
func ExampleChatHistoryOf() {
	records := []transcript.Record{
		{Type: transcript.TypeUser, UUID: "u1", Message: &transcript.Message{Role: transcript.RoleUser,
			Content: []transcript.Block{&transcript.Text{Text: "List the files."}}}},
		{Type: transcript.TypeAssistant, UUID: "a1", ParentUUID: "u1", Message: &transcript.Message{Role: transcript.RoleAssistant,
			ID: "chatcmpl-1", Content: []transcript.Block{&transcript.ToolUse{ID: "call_1", Name: "ls", Input: json.RawMessage(`{}`)}}}},
		{Type: transcript.TypeUser, UUID: "u2", ParentUUID: "a1", Message: &transcript.Message{Role: transcript.RoleUser,
			Content: []transcript.Block{&transcript.ToolResult{ToolUseID: "call_1", Content: []transcript.Block{&transcript.Text{Text: "a.go"}}}}}},
	}
	h, drops, err := openai.ChatHistoryOf([]*transcript.Text{{Text: "You are terse."}}, records)
	if err != nil {
		fmt.Println(err)
		return
	}
	for i, m := range h.Messages {
		body, _ := json.Marshal(m)
		fmt.Printf("%s %q\n", body, h.Meta[i].ID)
	}
	fmt.Println(len(drops), "dropped")
	// Output:
	// {"content":"You are terse.","role":"system"} ""
	// {"content":"List the files.","role":"user"} ""
	// {"tool_calls":[{"id":"call_1","function":{"arguments":"{}","name":"ls"},"type":"function"}],"role":"assistant"} "chatcmpl-1"
	// {"content":"a.go","tool_call_id":"call_1","role":"tool"} ""
	// 0 dropped
}

// A host on the Responses API keeps its input items, reasoning items included: the records
// hold a reasoning item as a thinking block with the item's fields.
func ExampleResponsesHistory_Records() {
	reasoning := param.Override[responses.ResponseInputItemUnionParam](json.RawMessage(
		`{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"Check the file."}],"encrypted_content":"gAAAA"}`))
	h := openai.ResponsesHistory{Instructions: "You are terse.", Input: responses.ResponseInputParam{
		responses.ResponseInputItemParamOfMessage("What is in notes.txt?", responses.EasyInputMessageRoleUser),
		reasoning,
		responses.ResponseInputItemParamOfFunctionCall(`{"path":"notes.txt"}`, "call_1", "read"),
	}}
	system, records, err := h.Records(openai.RecordOptions{SessionID: "s1"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("system:", system[0].Text)
	for _, r := range records {
		body, _ := json.Marshal(r.Message)
		fmt.Println(r.Type, string(body))
	}
	// Output:
	// system: You are terse.
	// user {"role":"user","content":[{"type":"text","text":"What is in notes.txt?"}]}
	// assistant {"type":"message","role":"assistant","content":[{"type":"thinking","thinking":"Check the file.","encrypted_content":"gAAAA","id":"rs_1","summary":[{"type":"summary_text","text":"Check the file."}]}]}
	// assistant {"type":"message","role":"assistant","content":[{"type":"tool_use","id":"call_1","name":"read","input":{"path":"notes.txt"}}]}
}

// ResponsesHistoryOf makes input items of records: a reasoning item recorded by
// MessageFromResponse goes back as the same item.
func ExampleResponsesHistoryOf() {
	var extra map[string]json.RawMessage
	_ = json.Unmarshal([]byte(`{"id":"rs_1","summary":[],"encrypted_content":"gAAAA"}`), &extra)
	records := []transcript.Record{
		{Type: transcript.TypeUser, UUID: "u1", Message: &transcript.Message{Role: transcript.RoleUser,
			Content: []transcript.Block{&transcript.Text{Text: "List the files."}}}},
		{Type: transcript.TypeAssistant, UUID: "a1", ParentUUID: "u1", Message: &transcript.Message{Role: transcript.RoleAssistant,
			Content: []transcript.Block{&transcript.Thinking{Extra: extra}, &transcript.ToolUse{ID: "call_1", Name: "ls", Input: json.RawMessage(`{}`)}}}},
	}
	h, _, err := openai.ResponsesHistoryOf(nil, records)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, it := range h.Input {
		body, _ := json.Marshal(it)
		fmt.Println(string(body))
	}
	// Output:
	// {"content":[{"text":"List the files.","type":"input_text"}],"role":"user"}
	// {"encrypted_content":"gAAAA","id":"rs_1","summary":[],"type":"reasoning"}
	// {"arguments":"{}","call_id":"call_1","name":"ls","type":"function_call"}
}
