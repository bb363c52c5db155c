package openai_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentctx/agentctx/internal/providertest"
	"github.com/agentctx/agentctx/openai"
	"github.com/agentctx/agentctx/provider"
	"github.com/agentctx/agentctx/transcript"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// bodies converts req both ways and returns the JSON the SDK sends for each.
func bodies(t *testing.T, name string, req provider.Request) (chat, resp []byte, drops []openai.Drop) {
	t.Helper()
	cp, cd, err := openai.ChatParams(req, openai.Options{Model: "gpt-5"})
	require.NoError(t, err, name)
	chat, err = json.Marshal(cp)
	require.NoError(t, err, name)
	rp, rd, err := openai.ResponsesParams(req, openai.Options{Model: "gpt-5"})
	require.NoError(t, err, name)
	resp, err = json.Marshal(rp)
	require.NoError(t, err, name)
	assert.Equal(t, withoutCompaction(cd), withoutCompaction(rd), "%s: both conversions drop the same blocks but compaction items, which only Responses carries", name)
	return chat, resp, cd
}

// withoutCompaction returns drops without those of compaction blocks and reasoning items.
func withoutCompaction(drops []openai.Drop) []openai.Drop {
	var out []openai.Drop
	for _, d := range drops {
		if d.Kind != transcript.KindCompaction && !strings.Contains(d.Reason, "only the Responses API carries it back") {
			out = append(out, d)
		}
	}
	return out
}

func checkBodies(t *testing.T, cases []providertest.Case) map[string]int {
	dropped := map[string]int{}
	for _, c := range cases {
		chat, resp, drops := bodies(t, c.Name, c.Request)
		assert.NoError(t, validateChat(chat), "%s: chat completions body", c.Name)
		assert.NoError(t, validateResponses(resp), "%s: responses body", c.Name)
		for _, d := range drops {
			dropped[string(d.Kind)]++
		}
	}
	return dropped
}

func TestGoldenBodies(t *testing.T) {
	dropped := checkBodies(t, providertest.Goldens(t, "../testdata/cases"))
	t.Logf("blocks dropped, by kind: %v", dropped)
}

func TestCorpusBodies(t *testing.T) {
	cases := providertest.Corpus(t, "..")
	dropped := checkBodies(t, cases)
	t.Logf("%d corpus requests; blocks dropped, by kind: %v", len(cases), dropped)
}

var png = transcript.MediaSource{Type: "base64", MediaType: "image/png", Data: "iVBORw0KGgo="}

// conversation is a turn with what each API carries differently: a system prompt, thinking,
// parallel calls, a failed call, a result with an image, a user image after the results.
func conversation() provider.Request {
	return provider.Request{
		Model: "claude-sonnet-4-5", MaxTokens: 2048,
		System: []*transcript.Text{{Text: "You are terse."}, {Text: "Use tools."}},
		Messages: []provider.Message{
			{Role: transcript.RoleUser, Content: []transcript.Block{&transcript.Text{Text: "Check the page."}}},
			{Role: transcript.RoleAssistant, Content: []transcript.Block{
				&transcript.Thinking{Thinking: "Two calls.", Signature: "sig"},
				&transcript.Text{Text: "Looking."},
				&transcript.ToolUse{ID: "toolu_a", Name: "Screenshot", Input: json.RawMessage(`{}`)},
				&transcript.ToolUse{ID: "toolu_b", Name: "Fetch", Input: json.RawMessage(`{"url":"x"}`)},
			}},
			{Role: transcript.RoleUser, Content: []transcript.Block{
				&transcript.ToolResult{ToolUseID: "toolu_a", Content: []transcript.Block{&transcript.Image{Source: png}}},
				&transcript.ToolResult{ToolUseID: "toolu_b", IsError: true, StringContent: true, Content: []transcript.Block{&transcript.Text{Text: "404"}}},
				&transcript.Image{Source: png},
				&transcript.Text{Text: "Compare with this one."},
			}},
		},
		Tools: []provider.Tool{
			{Name: "Screenshot", Definition: json.RawMessage(`{"name":"Screenshot","description":"Capture.","input_schema":{"type":"object"}}`)},
			{Name: "Fetch", Definition: json.RawMessage(`{"name":"Fetch","input_schema":{"type":"object","properties":{"url":{"type":"string"}}}}`)},
			{Name: "web_search", Definition: json.RawMessage(`{"type":"web_search_20250305","name":"web_search"}`)},
		},
		ToolChoice: &provider.ToolChoice{Type: "any"},
	}
}

func TestChatParams(t *testing.T) {
	chat, _, drops := bodies(t, "conversation", conversation())
	require.NoError(t, validateChat(chat))
	assert.JSONEq(t, `{
		"model":"gpt-5","max_completion_tokens":2048,
		"messages":[
			{"role":"system","content":"You are terse.\n\nUse tools."},
			{"role":"user","content":"Check the page."},
			{"role":"assistant","content":"Looking.","tool_calls":[
				{"id":"toolu_a","type":"function","function":{"name":"Screenshot","arguments":"{}"}},
				{"id":"toolu_b","type":"function","function":{"name":"Fetch","arguments":"{\"url\":\"x\"}"}}]},
			{"role":"tool","tool_call_id":"toolu_a","content":"The tool returned 1 image(s); they follow in the next message."},
			{"role":"tool","tool_call_id":"toolu_b","content":"The tool call failed:\n404"},
			{"role":"user","content":[
				{"type":"text","text":"The image(s) returned by tool call toolu_a:"},
				{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}},
				{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}},
				{"type":"text","text":"Compare with this one."}]}],
		"tools":[
			{"type":"function","function":{"name":"Screenshot","description":"Capture.","parameters":{"type":"object"}}},
			{"type":"function","function":{"name":"Fetch","parameters":{"type":"object","properties":{"url":{"type":"string"}}}}}],
		"tool_choice":"required"}`, string(chat))
	assert.Equal(t, []openai.Drop{
		{Path: "messages.1.content.0", Kind: transcript.KindThinking, Reason: drops[0].Reason},
		{Path: "tools.2", Kind: "tool", Reason: drops[1].Reason},
	}, drops, "thinking and the server tool are dropped, and said so")
}

func TestResponsesParams(t *testing.T) {
	_, resp, _ := bodies(t, "conversation", conversation())
	require.NoError(t, validateResponses(resp))
	assert.JSONEq(t, `{
		"model":"gpt-5","max_output_tokens":2048,"store":false,
		"instructions":"You are terse.\n\nUse tools.",
		"input":[
			{"role":"user","content":[{"type":"input_text","text":"Check the page."}]},
			{"role":"assistant","content":"Looking."},
			{"type":"function_call","call_id":"toolu_a","name":"Screenshot","arguments":"{}"},
			{"type":"function_call","call_id":"toolu_b","name":"Fetch","arguments":"{\"url\":\"x\"}"},
			{"type":"function_call_output","call_id":"toolu_a","output":[
				{"type":"input_text","text":"The tool returned 1 image(s); they follow in the next message."},
				{"type":"input_image","image_url":"data:image/png;base64,iVBORw0KGgo="}]},
			{"type":"function_call_output","call_id":"toolu_b","output":"The tool call failed:\n404"},
			{"role":"user","content":[
				{"type":"input_image","image_url":"data:image/png;base64,iVBORw0KGgo=","detail":"auto"},
				{"type":"input_text","text":"Compare with this one."}]}],
		"tools":[
			{"type":"function","name":"Screenshot","description":"Capture.","parameters":{"type":"object"},"strict":false},
			{"type":"function","name":"Fetch","parameters":{"type":"object","properties":{"url":{"type":"string"}}},"strict":false}],
		"tool_choice":"required"}`, string(resp))
}

func TestToolChoice(t *testing.T) {
	tests := []struct {
		choice    provider.ToolChoice
		chat, rsp string
	}{
		{provider.ToolChoice{Type: "auto"}, `"auto"`, `"auto"`},
		{provider.ToolChoice{Type: "any"}, `"required"`, `"required"`},
		{provider.ToolChoice{Type: "none"}, `"none"`, `"none"`},
		{provider.ToolChoice{Type: "tool", Name: "Fetch"}, `{"type":"function","function":{"name":"Fetch"}}`, `{"type":"function","name":"Fetch"}`},
	}
	for _, tt := range tests {
		t.Run(tt.choice.Type, func(t *testing.T) {
			req := conversation()
			req.ToolChoice = &tt.choice
			chat, resp, _ := bodies(t, tt.choice.Type, req)
			var c, r struct {
				ToolChoice json.RawMessage `json:"tool_choice"`
			}
			require.NoError(t, json.Unmarshal(chat, &c))
			require.NoError(t, json.Unmarshal(resp, &r))
			assert.JSONEq(t, tt.chat, string(c.ToolChoice))
			assert.JSONEq(t, tt.rsp, string(r.ToolChoice))
		})
	}
}

// An assistant message of nothing but thinking leaves no empty message behind.
func TestThinkingOnlyAssistant(t *testing.T) {
	req := provider.Request{Model: "m", MaxTokens: 10, Messages: []provider.Message{
		{Role: transcript.RoleUser, Content: []transcript.Block{&transcript.Text{Text: "a"}}},
		{Role: transcript.RoleAssistant, Content: []transcript.Block{&transcript.RedactedThinking{Data: "x"}}},
		{Role: transcript.RoleUser, Content: []transcript.Block{&transcript.Text{Text: "b"}}},
	}}
	chat, resp, drops := bodies(t, "thinking only", req)
	assert.NoError(t, validateChat(chat))
	assert.NoError(t, validateResponses(resp))
	assert.Len(t, drops, 1)
	var c chatBody
	require.NoError(t, json.Unmarshal(chat, &c))
	assert.Len(t, c.Messages, 2)
}

func TestLegacyMaxTokens(t *testing.T) {
	p, _, err := openai.ChatParams(conversation(), openai.Options{LegacyMaxTokens: true})
	require.NoError(t, err)
	body, err := json.Marshal(p)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(body, &m))
	assert.EqualValues(t, 2048, m["max_tokens"])
	assert.NotContains(t, m, "max_completion_tokens")
	assert.Equal(t, "claude-sonnet-4-5", m["model"], "no Model: the request's")
}
