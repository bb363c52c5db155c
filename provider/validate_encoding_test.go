package provider

import (
	"encoding/json"
	"testing"

	"github.com/agentctx/agentctx/internal/testkit"
	"github.com/agentctx/agentctx/transcript"

	"github.com/stretchr/testify/assert"
)

// TestValidateEncoding checks that Validate rejects a body that is not valid UTF-8 or holds a
// lone surrogate escape (6.7), naming the part that does; thinking that is not valid UTF-8
// (4.7); and images and documents whose bytes the provider would reject (5.1).
func TestValidateEncoding(t *testing.T) {
	data := testkit.MediaSamples(t)
	img := func(mt, d string) *transcript.Image {
		return &transcript.Image{Source: transcript.MediaSource{Type: "base64", MediaType: mt, Data: d}}
	}
	tests := []struct {
		name   string
		mutate func(r *Request)
		want   []Violation
	}{
		{"tool_use input with invalid UTF-8", func(r *Request) {
			r.Messages[1].Content[1] = &transcript.ToolUse{ID: "t1", Name: "Read", Input: json.RawMessage("{\"p\":\"\xff\"}")}
		}, []Violation{{"6.7", "messages[1].content[1]", "encodes to invalid UTF-8"}}},
		{"tool_use input with a lone surrogate", func(r *Request) {
			r.Messages[1].Content[1] = &transcript.ToolUse{ID: "t1", Name: "Read", Input: json.RawMessage(`{"p":"\ud800"}`)}
		}, []Violation{{"6.7", "messages[1].content[1]", `holds a \u escape of an unpaired surrogate`}}},
		{"a surrogate pair is valid", func(r *Request) {
			r.Messages[1].Content[1] = &transcript.ToolUse{ID: "t1", Name: "Read", Input: json.RawMessage(`{"p":"\ud83d\ude00 \\ud800"}`)}
		}, nil},
		{"search_result in a tool_result", func(r *Request) {
			r.Messages[2].Content[0] = &transcript.ToolResult{ToolUseID: "t1", Content: []transcript.Block{text("ok"),
				&transcript.UnknownBlock{Type: transcript.KindSearchResult, JSON: json.RawMessage("{\"type\":\"search_result\",\"title\":\"\xc3\",\"source\":\"s\",\"content\":[]}")}}}
		}, []Violation{{"6.7", "messages[2].content[0].content[1]", "encodes to invalid UTF-8"}}},
		{"server tool result", func(r *Request) {
			r.Messages[1].Content = append([]transcript.Block{
				&transcript.ServerToolUse{ID: "srvtoolu_1", Name: "web_search", Input: json.RawMessage(`{}`)},
				&transcript.ServerToolResult{Type: "web_search_tool_result", ToolUseID: "srvtoolu_1", Content: json.RawMessage("[\"\xe2\x82\"]")},
			}, r.Messages[1].Content...)
		}, []Violation{{"6.7", "messages[1].content[1]", "encodes to invalid UTF-8"}}},
		{"tool definition", func(r *Request) {
			r.Tools[0].Definition = json.RawMessage("{\"name\":\"Read\",\"description\":\"\xff\",\"input_schema\":{\"type\":\"object\"}}")
		}, []Violation{{"6.7", "tools[0]", "encodes to invalid UTF-8"}}},
		{"strings in Go values are encoded as U+FFFD: the body is valid", func(r *Request) {
			r.System[0] = text("sys \xff")
		}, nil},
		{"thinking text", func(r *Request) {
			r.Thinking = &Thinking{Type: "enabled", BudgetTokens: 1024}
			r.Messages[1].Content = append([]transcript.Block{&transcript.Thinking{Thinking: "\xff", Signature: normSig}}, r.Messages[1].Content...)
		}, []Violation{{"4.7", "messages[1].content[0]", "thinking text is not valid UTF-8: it is not what the provider signed"}}},
		{"redacted thinking data", func(r *Request) {
			r.Thinking = &Thinking{Type: "enabled", BudgetTokens: 1024}
			r.Messages[1].Content = append([]transcript.Block{&transcript.RedactedThinking{Data: "\xff"}}, r.Messages[1].Content...)
		}, []Violation{{"4.7", "messages[1].content[0]", "redacted_thinking data is not valid UTF-8: it is not what the provider sent"}}},
		{"image bytes of another type", func(r *Request) {
			r.Messages[0].Content = append(r.Messages[0].Content, img("image/png", data["jpeg"]))
		}, []Violation{{"5.1", "messages[0].content[1]", `image data is image/jpeg but media_type is "image/png"`}}},
		{"image bytes of no type the provider takes", func(r *Request) {
			r.Messages[0].Content = append(r.Messages[0].Content, img("image/png", data["bmp"]))
		}, []Violation{{"5.1", "messages[0].content[1]", "image data is not a PNG, JPEG, GIF or WebP image"}}},
		{"image base64 that does not decode", func(r *Request) {
			r.Messages[0].Content = append(r.Messages[0].Content, img("image/png", "iVBORw0KGgo"))
		}, []Violation{{"5.1", "messages[0].content[1]", "image data is not valid base64"}}},
		{"document base64 that does not decode", func(r *Request) {
			r.Messages[0].Content = append(r.Messages[0].Content, &transcript.Document{Source: transcript.MediaSource{Type: "base64", MediaType: "application/pdf", Data: "%PDF"}})
		}, []Violation{{"5.1", "messages[0].content[1]", "document data is not valid base64"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := valBaseRequest()
			tt.mutate(&r)
			var got []Violation
			for _, v := range validate(&r, ValidateOptions{}) {
				got = append(got, *v)
			}
			assert.Equal(t, tt.want, got)
		})
	}
}
