package openai_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentctx/agentctx/openai"
	"github.com/agentctx/agentctx/transcript"
	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// recordLines renders records one line each: type, then the message's JSON.
func recordLines(t *testing.T, system []*transcript.Text, records []transcript.Record) string {
	t.Helper()
	var b strings.Builder
	for _, s := range system {
		b.WriteString("system " + s.Text + "\n")
	}
	for _, r := range records {
		var body strings.Builder
		enc := json.NewEncoder(&body)
		enc.SetEscapeHTML(false)
		require.NoError(t, enc.Encode(r.Message))
		b.WriteString(string(r.Type) + " " + body.String())
	}
	return b.String()
}

func TestChatHistoryRecords(t *testing.T) {
	withReasoning := sdk.AssistantMessage("Done.")
	withReasoning.OfAssistant.SetExtraFields(map[string]any{"reasoning_content": "Think."})
	tests := []struct {
		name    string
		msgs    []sdk.ChatCompletionMessageParamUnion
		meta    []openai.MessageMeta
		want    string
		inputs  []string // the calls' inputs, byte for byte
		wantErr string
	}{
		{name: "system and developer messages are the system prompt",
			msgs: []sdk.ChatCompletionMessageParamUnion{sdk.SystemMessage("Be terse."), sdk.DeveloperMessage("Use tools."), sdk.UserMessage("hi")},
			want: "system Be terse.\nsystem Use tools.\nuser " + `{"role":"user","content":[{"type":"text","text":"hi"}]}` + "\n"},
		{name: "user parts: text, inline and linked images, a PDF, a file id kept verbatim",
			msgs: []sdk.ChatCompletionMessageParamUnion{sdk.UserMessage([]sdk.ChatCompletionContentPartUnionParam{
				sdk.TextContentPart("Look."),
				sdk.ImageContentPart(sdk.ChatCompletionContentPartImageImageURLParam{URL: "data:image/png;base64,iVBO"}),
				sdk.ImageContentPart(sdk.ChatCompletionContentPartImageImageURLParam{URL: "https://x/y.png"}),
				sdk.FileContentPart(sdk.ChatCompletionContentPartFileFileParam{FileData: sdk.String("data:application/pdf;base64,JVBE"), Filename: sdk.String("a.pdf")}),
				sdk.FileContentPart(sdk.ChatCompletionContentPartFileFileParam{FileID: sdk.String("file-1")}),
			})},
			want: "user " + `{"role":"user","content":[{"type":"text","text":"Look."},` +
				`{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBO"}},` +
				`{"type":"image","source":{"type":"url","url":"https://x/y.png"}},` +
				`{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"JVBE"},"title":"a.pdf"},` +
				`{"file":{"file_id":"file-1"},"type":"file"}]}` + "\n"},
		{name: "assistant tool calls keep their arguments as written; tool messages answer them",
			msgs: []sdk.ChatCompletionMessageParamUnion{
				{OfAssistant: &sdk.ChatCompletionAssistantMessageParam{Content: sdk.ChatCompletionAssistantMessageParamContentUnion{OfString: sdk.String("Reading.")},
					ToolCalls: []sdk.ChatCompletionMessageToolCallUnionParam{
						{OfFunction: &sdk.ChatCompletionMessageFunctionToolCallParam{ID: "c1", Function: sdk.ChatCompletionMessageFunctionToolCallFunctionParam{Name: "Read", Arguments: `{"path": "a<b"}`}}},
						{OfFunction: &sdk.ChatCompletionMessageFunctionToolCallParam{ID: "c2", Function: sdk.ChatCompletionMessageFunctionToolCallFunctionParam{Name: "Ls"}}},
					}}},
				sdk.ToolMessage("The tool call failed:\nno such file", "c1"),
				sdk.ToolMessage("(the tool returned no output)", "c2"),
				sdk.UserMessage("Next."),
			},
			meta: []openai.MessageMeta{{ID: "chatcmpl-1", StopReason: "tool_use", Usage: &transcript.Usage{InputTokens: 10, OutputTokens: 5}}, {}, {StringContent: true}},
			want: "assistant " + `{"id":"chatcmpl-1","type":"message","role":"assistant","content":[{"type":"text","text":"Reading."},{"type":"tool_use","id":"c1","name":"Read","input":{"path":"a<b"}},{"type":"tool_use","id":"c2","name":"Ls","input":{}}],"stop_reason":"tool_use","usage":{"input_tokens":10,"output_tokens":5}}` + "\n" +
				"user " + `{"role":"user","content":[{"type":"tool_result","tool_use_id":"c1","content":[{"type":"text","text":"no such file"}],"is_error":true},{"type":"tool_result","tool_use_id":"c2","content":""}]}` + "\n" +
				"user " + `{"role":"user","content":[{"type":"text","text":"Next."}]}` + "\n",
			inputs: []string{`{"path": "a<b"}`, `{}`}},
		{name: "assistant content parts, a refusal and a server's reasoning",
			msgs: []sdk.ChatCompletionMessageParamUnion{
				sdk.AssistantMessage([]sdk.ChatCompletionAssistantMessageParamContentArrayOfContentPartUnion{
					{OfText: &sdk.ChatCompletionContentPartTextParam{Text: "One."}}, {OfText: &sdk.ChatCompletionContentPartTextParam{Text: "Two."}},
					{OfRefusal: &sdk.ChatCompletionContentPartRefusalParam{Refusal: "No."}}}),
				withReasoning,
			},
			want: "assistant " + `{"type":"message","role":"assistant","content":[{"type":"text","text":"One.\n\nTwo."},{"type":"text","text":"No."}]}` + "\n" +
				"assistant " + `{"type":"message","role":"assistant","content":[{"type":"thinking","thinking":"Think."},{"type":"text","text":"Done."}]}` + "\n"},
		{name: "media a tool returned, carried in the next user message, and tool references, read back",
			msgs: []sdk.ChatCompletionMessageParamUnion{
				sdk.ToolMessage("The tool returned 1 image(s); they follow in the next message.", "c1"),
				sdk.ToolMessage("The tool Grep is available.\n\nThe tool Glob is available.", "c2"),
				sdk.UserMessage([]sdk.ChatCompletionContentPartUnionParam{
					sdk.TextContentPart("The image(s) returned by tool call c1:"),
					sdk.ImageContentPart(sdk.ChatCompletionContentPartImageImageURLParam{URL: "data:image/png;base64,iVBO"}),
					sdk.TextContentPart("Go on."),
				}),
			},
			want: "user " + `{"role":"user","content":[{"type":"tool_result","tool_use_id":"c1","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBO"}}]},` +
				`{"type":"tool_result","tool_use_id":"c2","content":[{"type":"tool_reference","tool_name":"Grep"},{"type":"tool_reference","tool_name":"Glob"}]},{"type":"text","text":"Go on."}]}` + "\n"},
		{name: "a function message answers no call by id",
			msgs:    []sdk.ChatCompletionMessageParamUnion{{OfFunction: &sdk.ChatCompletionFunctionMessageParam{Name: "f", Content: sdk.String("x")}}},
			wantErr: "agentctx/openai: messages[0].role: a function message (deprecated) answers no tool call by id"},
		{name: "arguments that are no object name the message",
			msgs: []sdk.ChatCompletionMessageParamUnion{{OfAssistant: &sdk.ChatCompletionAssistantMessageParam{ToolCalls: []sdk.ChatCompletionMessageToolCallUnionParam{
				{OfFunction: &sdk.ChatCompletionMessageFunctionToolCallParam{ID: "c1", Function: sdk.ChatCompletionMessageFunctionToolCallFunctionParam{Name: "f", Arguments: "[1]"}}}}}}},
			wantErr: "choices[0].message.tool_calls[0].function.arguments are not a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sys, recs, err := openai.ChatHistory{Messages: tt.msgs, Meta: tt.meta}.Records(openai.RecordOptions{SessionID: "s"})
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, recordLines(t, sys, recs))
			var inputs []string
			for _, r := range recs {
				for _, b := range r.Message.Content {
					if tu, ok := b.(*transcript.ToolUse); ok {
						inputs = append(inputs, string(tu.Input))
					}
				}
			}
			if tt.inputs != nil {
				assert.Equal(t, tt.inputs, inputs)
			}
		})
	}
}

func TestResponsesHistoryRecords(t *testing.T) {
	reasoning := param.Override[responses.ResponseInputItemUnionParam](json.RawMessage(
		`{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"Plan."}],"encrypted_content":"gAAAA"}`))
	tests := []struct {
		name    string
		h       openai.ResponsesHistory
		want    string
		wantErr string
	}{
		{name: "instructions, developer message and a user message with parts",
			h: openai.ResponsesHistory{Instructions: "Be terse.", Input: responses.ResponseInputParam{
				responses.ResponseInputItemParamOfMessage("Use tools.", responses.EasyInputMessageRoleDeveloper),
				responses.ResponseInputItemParamOfMessage(responses.ResponseInputMessageContentListParam{
					{OfInputText: &responses.ResponseInputTextParam{Text: "Look."}},
					{OfInputImage: &responses.ResponseInputImageParam{ImageURL: sdk.String("data:image/png;base64,iVBO"), Detail: responses.ResponseInputImageDetailAuto}},
					{OfInputFile: &responses.ResponseInputFileParam{FileURL: sdk.String("https://x/a.pdf")}},
				}, responses.EasyInputMessageRoleUser)}},
			want: "system Be terse.\nsystem Use tools.\nuser " + `{"role":"user","content":[{"type":"text","text":"Look."},` +
				`{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBO"}},{"type":"document","source":{"type":"url","url":"https://x/a.pdf"}}]}` + "\n"},
		{name: "reasoning, message and calls of one answer; outputs after",
			h: openai.ResponsesHistory{Input: responses.ResponseInputParam{
				reasoning,
				responses.ResponseInputItemParamOfMessage("Reading.", responses.EasyInputMessageRoleAssistant),
				responses.ResponseInputItemParamOfFunctionCall(`{"path": "a"}`, "c1", "Read"),
				{OfFunctionCallOutput: &responses.ResponseInputItemFunctionCallOutputParam{CallID: sdk.String("c1"),
					Output: responses.ResponseInputItemFunctionCallOutputOutputUnionParam{OfString: sdk.String("The tool call failed:\nno such file")}}},
			}, Meta: []openai.MessageMeta{{ID: "resp_1"}, {ID: "resp_1"}, {ID: "resp_1", StopReason: "tool_use"}}},
			want: "assistant " + `{"id":"resp_1","type":"message","role":"assistant","content":[{"type":"thinking","thinking":"Plan.","encrypted_content":"gAAAA","id":"rs_1","summary":[{"type":"summary_text","text":"Plan."}]}]}` + "\n" +
				"assistant " + `{"id":"resp_1","type":"message","role":"assistant","content":[{"type":"text","text":"Reading."}]}` + "\n" +
				"assistant " + `{"id":"resp_1","type":"message","role":"assistant","content":[{"type":"tool_use","id":"c1","name":"Read","input":{"path":"a"}}],"stop_reason":"tool_use"}` + "\n" +
				"user " + `{"role":"user","content":[{"type":"tool_result","tool_use_id":"c1","content":[{"type":"text","text":"no such file"}],"is_error":true}]}` + "\n"},
		{name: "an output with media, an assistant message of output parts",
			h: openai.ResponsesHistory{Input: responses.ResponseInputParam{
				{OfFunctionCallOutput: &responses.ResponseInputItemFunctionCallOutputParam{CallID: sdk.String("c1"),
					Output: responses.ResponseInputItemFunctionCallOutputOutputUnionParam{OfResponseFunctionCallOutputItemArray: responses.ResponseFunctionCallOutputItemListParam{
						{OfInputText: &responses.ResponseInputTextContentParam{Text: "The tool returned 1 image(s); they follow in the next message."}},
						{OfInputImage: &responses.ResponseInputImageContentParam{ImageURL: sdk.String("data:image/png;base64,iVBO")}},
					}}}},
				responses.ResponseInputItemParamOfOutputMessage([]responses.ResponseOutputMessageContentUnionParam{
					{OfOutputText: &responses.ResponseOutputTextParam{Text: "Seen."}}}, "msg_1", responses.ResponseOutputMessageStatusCompleted),
			}},
			want: "user " + `{"role":"user","content":[{"type":"tool_result","tool_use_id":"c1","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBO"}}]}]}` + "\n" +
				"assistant " + `{"type":"message","role":"assistant","content":[{"type":"text","text":"Seen."}]}` + "\n"},
		{name: "a compaction item is kept as it came",
			h:    openai.ResponsesHistory{Input: responses.ResponseInputParam{responses.ResponseInputItemParamOfCompaction("gAAAB")}},
			want: "assistant " + `{"type":"message","role":"assistant","content":[{"encrypted_content":"gAAAB","type":"compaction"}]}` + "\n"},
		{name: "a system message of another role is refused",
			h:       openai.ResponsesHistory{Input: responses.ResponseInputParam{responses.ResponseInputItemParamOfInputMessage(nil, "tool")}},
			wantErr: `agentctx/openai: input[0].role: "tool" is no role of a Responses message`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sys, recs, err := tt.h.Records(openai.RecordOptions{SessionID: "s"})
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, recordLines(t, sys, recs))
		})
	}
}

// TestReasoningItemRoundTrip sends a recorded reasoning item back: ResponsesParams makes the
// item of the block MessageFromResponse made of it, every field as it came, before the
// message's text and calls; Chat Completions drops it and says why.
func TestReasoningItemRoundTrip(t *testing.T) {
	item := `{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"Plan."}],"encrypted_content":"gAAAA","status":"completed"}`
	h := openai.ResponsesHistory{Input: responses.ResponseInputParam{
		param.Override[responses.ResponseInputItemUnionParam](json.RawMessage(item)),
		responses.ResponseInputItemParamOfFunctionCall(`{}`, "c1", "Ls"),
	}}
	_, recs, err := h.Records(openai.RecordOptions{})
	require.NoError(t, err)
	h2, drops, err := openai.ResponsesHistoryOf(nil, recs)
	require.NoError(t, err)
	assert.Empty(t, drops)
	require.Len(t, h2.Input, 2)
	assert.JSONEq(t, item, jsonOf(t, h2.Input[0]))
	_, drops, err = openai.ChatHistoryOf(nil, recs)
	require.NoError(t, err)
	require.Len(t, drops, 1)
	assert.Equal(t, "reasoning an OpenAI model wrote: only the Responses API carries it back", drops[0].Reason)
}
