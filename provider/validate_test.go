package provider

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/agentctx/agentctx/internal/testkit"
	"github.com/agentctx/agentctx/transcript"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var valReadTool = Tool{Name: "Read", Definition: json.RawMessage(`{"name":"Read","description":"read","input_schema":{"type":"object"}}`)}

// valBaseRequest is a valid request: a prompt, a tool call and its result.
func valBaseRequest() Request {
	return Request{
		Model:     "claude-sonnet-4-5",
		MaxTokens: 4096,
		System:    []*transcript.Text{text("be brief")},
		Messages: []Message{
			{Role: transcript.RoleUser, Content: []transcript.Block{text("q")}},
			{Role: transcript.RoleAssistant, Content: []transcript.Block{text("reading"), toolUse("t1", "Read")}},
			{Role: transcript.RoleUser, Content: []transcript.Block{result("t1", "r"), text("and?")}},
		},
		Tools: []Tool{valReadTool},
	}
}

func valMsg(role transcript.Role, bs ...transcript.Block) Message {
	return Message{Role: role, Content: bs}
}

func TestValidate(t *testing.T) {
	think := &transcript.Thinking{Thinking: "hmm", Signature: normSig}
	user := func(bs ...transcript.Block) Message { return valMsg(transcript.RoleUser, bs...) }
	asst := func(bs ...transcript.Block) Message { return valMsg(transcript.RoleAssistant, bs...) }
	img := func(mt, data string) *transcript.Image {
		return &transcript.Image{Source: transcript.MediaSource{Type: "base64", MediaType: mt, Data: data}}
	}
	withCC := func(ttl string) *transcript.Text {
		return &transcript.Text{Text: "x", CacheControl: &transcript.CacheControl{Type: "ephemeral", TTL: ttl}}
	}
	tests := []struct {
		name   string
		mutate func(r *Request)
		opts   ValidateOptions
		want   []string // the rules broken, sorted; nil for a valid request
		paths  []string // when set, the paths of the violations, in order
	}{
		{name: "valid", mutate: func(r *Request) {}},
		{name: "valid with thinking enabled in the tool loop", mutate: func(r *Request) {
			r.Thinking = &Thinking{Type: "enabled", BudgetTokens: 1024}
			r.Messages[1].Content = append([]transcript.Block{think}, r.Messages[1].Content...)
		}},
		{name: "valid with thinking enabled, later loop step without thinking", mutate: func(r *Request) {
			r.Thinking = &Thinking{Type: "enabled", BudgetTokens: 1024}
			r.Messages[1].Content = append([]transcript.Block{think}, r.Messages[1].Content...)
			r.Messages = append(r.Messages, asst(toolUse("t2", "Read")), user(result("t2", "r2")))
		}},
		{name: "valid prefill when allowed", opts: ValidateOptions{AllowPrefill: true}, mutate: func(r *Request) {
			r.Messages = append(r.Messages, asst(text("The answer is")))
		}},
		{name: "1.1 role", mutate: func(r *Request) { r.Messages[0].Role = "system" }, want: []string{"1.1"}},
		{name: "1.1 nil system block", mutate: func(r *Request) { r.System = []*transcript.Text{nil} }, want: []string{"1.1"}},
		{name: "1.2 consecutive users", mutate: func(r *Request) {
			r.Messages = append(r.Messages, user(text("again")))
		}, want: []string{"1.2"}},
		{name: "1.3 no messages", mutate: func(r *Request) { r.Messages = nil; r.Tools = nil }, want: []string{"1.3"}},
		{name: "1.3 first assistant", mutate: func(r *Request) {
			r.Messages = []Message{asst(text("hi")), user(text("q"))}
		}, want: []string{"1.3"}},
		{name: "valid first assistant opening with a provider compaction", mutate: func(r *Request) {
			r.Messages = []Message{asst(unknown(compactionJSON), text("hi")), user(text("q"))}
		}},
		{name: "1.6 provider compaction after the first block", mutate: func(r *Request) {
			r.Messages = []Message{user(text("q")), asst(unknown(compactionJSON), text("hi")), user(text("more"))}
		}, want: []string{"1.6"}},
		{name: "1.6 failed provider compaction sent", mutate: func(r *Request) {
			r.Messages = []Message{user(text("q")), asst(text("hi"), unknown(`{"type":"compaction","content":null}`)), user(text("more"))}
		}, want: []string{"1.6"}},
		{name: "1.4 trailing assistant", mutate: func(r *Request) {
			r.Messages = append(r.Messages, asst(text("done")))
		}, want: []string{"1.4"}},
		{name: "1.4 prefill ending in whitespace", opts: ValidateOptions{AllowPrefill: true}, mutate: func(r *Request) {
			r.Messages = append(r.Messages, asst(text("The answer is ")))
		}, want: []string{"1.4"}},
		{name: "1.5 empty content", mutate: func(r *Request) { r.Messages[2].Content = nil }, want: []string{"1.5", "2.1"}},
		{name: "1.5 cache_edits alone is empty", mutate: func(r *Request) {
			r.Messages = append(r.Messages, asst(text("a")), user(&transcript.CacheEdits{}))
		}, want: []string{"1.5"}},
		{name: "1.5 whitespace text", mutate: func(r *Request) { r.Messages[0].Content = []transcript.Block{text("q"), text(" \n")} }, want: []string{"1.5"}},
		{name: "1.5 empty system text", mutate: func(r *Request) { r.System = []*transcript.Text{text("")} }, want: []string{"1.5"}},
		{name: "1.5 whitespace text in tool_result", mutate: func(r *Request) {
			r.Messages[2].Content[0] = &transcript.ToolResult{ToolUseID: "t1", Content: []transcript.Block{text("\t")}}
		}, want: []string{"1.5"}},
		{name: "2.1 tool_use without result", mutate: func(r *Request) {
			r.Messages[2].Content = []transcript.Block{text("nothing")}
		}, want: []string{"2.1"}},
		{name: "2.1 tool_use in the last message", opts: ValidateOptions{AllowPrefill: true}, mutate: func(r *Request) {
			r.Messages = r.Messages[:2]
		}, want: []string{"2.1"}},
		{name: "2.2 result without use", mutate: func(r *Request) {
			r.Messages[2].Content = append([]transcript.Block{result("t9", "x")}, r.Messages[2].Content...)
		}, want: []string{"2.2"}},
		{name: "2.2 duplicate result", mutate: func(r *Request) {
			r.Messages[2].Content = append([]transcript.Block{result("t1", "x")}, r.Messages[2].Content...)
		}, want: []string{"2.2"}},
		{name: "2.2 result in the first message", mutate: func(r *Request) {
			r.Messages[0].Content = []transcript.Block{result("t1", "x"), text("q")}
		}, want: []string{"2.2"}},
		{name: "2.3 text before tool_result", mutate: func(r *Request) {
			r.Messages[2].Content = []transcript.Block{text("and?"), result("t1", "r")}
		}, want: []string{"2.3"}},
		{name: "2.5 duplicate tool_use id", mutate: func(r *Request) {
			r.Messages = append(r.Messages, asst(toolUse("t1", "Read")), user(result("t1", "again")))
		}, want: []string{"2.5"}},
		{name: "2.6 empty error result", mutate: func(r *Request) {
			r.Messages[2].Content[0] = &transcript.ToolResult{ToolUseID: "t1", IsError: true}
		}, want: []string{"2.6"}},
		{name: "2.6 thinking inside a result", mutate: func(r *Request) {
			r.Messages[2].Content[0] = &transcript.ToolResult{ToolUseID: "t1", Content: []transcript.Block{think}}
		}, want: []string{"2.6"}},
		{name: "valid search_result and declared tool_reference in a result", mutate: func(r *Request) {
			r.Messages[2].Content[0] = &transcript.ToolResult{ToolUseID: "t1", Content: []transcript.Block{
				&transcript.UnknownBlock{Type: transcript.KindSearchResult, JSON: json.RawMessage(`{"type":"search_result"}`)},
				&transcript.ToolReference{ToolName: "Read"},
			}}
		}},
		{name: "2.7 server result without use", mutate: func(r *Request) {
			r.Messages[1].Content = append(r.Messages[1].Content,
				&transcript.ServerToolResult{Type: "web_search_tool_result", ToolUseID: "srvtoolu_1", Content: json.RawMessage(`[]`)})
		}, want: []string{"2.7"}},
		{name: "2.7 server use without result", mutate: func(r *Request) {
			r.Messages[1].Content = append(r.Messages[1].Content,
				&transcript.ServerToolUse{ID: "srvtoolu_1", Name: "web_search", Input: json.RawMessage(`{}`)})
		}, want: []string{"2.7"}},
		{name: "valid server pair", mutate: func(r *Request) {
			r.Messages[1].Content = append(r.Messages[1].Content,
				&transcript.ServerToolUse{ID: "srvtoolu_1", Name: "web_search", Input: json.RawMessage(`{}`)},
				&transcript.ServerToolResult{Type: "web_search_tool_result", ToolUseID: "srvtoolu_1", Content: json.RawMessage(`[]`)})
		}},
		{name: "2.9 no tools", mutate: func(r *Request) { r.Tools = nil }, want: []string{"2.9"}},
		{name: "2.9 undeclared tool", mutate: func(r *Request) {
			r.Messages[1].Content[1] = toolUse("t1", "Bash")
		}, want: []string{"2.9"}},
		{name: "2.9 undeclared tool_reference", mutate: func(r *Request) {
			r.Messages[2].Content[0] = &transcript.ToolResult{ToolUseID: "t1", Content: []transcript.Block{&transcript.ToolReference{ToolName: "Grep"}}}
		}, want: []string{"2.9"}},
		{name: "2.9 duplicate tool", mutate: func(r *Request) { r.Tools = append(r.Tools, valReadTool) }, want: []string{"2.9"}},
		{name: "2.9 tool name mismatch", mutate: func(r *Request) {
			r.Tools = append(r.Tools, Tool{Name: "Bash", Definition: json.RawMessage(`{"name":"Shell"}`)})
		}, want: []string{"2.9"}},
		{name: "2.9 bad tool name", mutate: func(r *Request) {
			r.Tools = append(r.Tools, Tool{Name: "a.b", Definition: json.RawMessage(`{"name":"a.b"}`)})
		}, want: []string{"2.9"}},
		{name: "2.9 client tool without input_schema", mutate: func(r *Request) {
			r.Tools = append(r.Tools, Tool{Name: "Bash", Definition: json.RawMessage(`{"name":"Bash","description":"run"}`)})
		}, want: []string{"2.9"}},
		{name: "server tool needs no input_schema", mutate: func(r *Request) {
			r.Tools = append(r.Tools, Tool{Name: "web_search", Definition: json.RawMessage(`{"type":"web_search_20250305","name":"web_search"}`)})
		}},
		{name: "2.10 bad id", mutate: func(r *Request) {
			r.Messages[1].Content[1] = toolUse("t 1", "Read")
			r.Messages[2].Content[0] = result("t 1", "r")
		}, want: []string{"2.10"}},
		{name: "2.11 unknown block", mutate: func(r *Request) {
			r.Messages[0].Content = append(r.Messages[0].Content, &transcript.UnknownBlock{Type: "fancy", JSON: json.RawMessage(`{"type":"fancy"}`)})
		}, want: []string{"2.11"}},
		{name: "2.11 tool_reference outside a result", mutate: func(r *Request) {
			r.Messages[0].Content = append(r.Messages[0].Content, &transcript.ToolReference{ToolName: "Read"})
		}, want: []string{"2.11"}},
		{name: "2.11 image in an assistant message", mutate: func(r *Request) {
			r.Messages[1].Content = append(r.Messages[1].Content, img("image/png", "iVBORw0KGgo="))
		}, want: []string{"2.11"}},
		{name: "2.11 tool_use in a user message", mutate: func(r *Request) {
			r.Messages[0].Content = append(r.Messages[0].Content, toolUse("t7", "Read"))
		}, want: []string{"2.11"}},
		{name: "2.11 tool input not an object", mutate: func(r *Request) {
			r.Messages[1].Content[1] = &transcript.ToolUse{ID: "t1", Name: "Read", Input: json.RawMessage(`[]`)}
		}, want: []string{"2.11"}},
		{name: "3.1 bad ttl", mutate: func(r *Request) {
			r.Messages[0].Content = []transcript.Block{withCC("10m")}
		}, want: []string{"3.1"}},
		{name: "3.2 five markers", mutate: func(r *Request) {
			r.System = []*transcript.Text{withCC(""), withCC(""), withCC("")}
			r.Messages[0].Content = []transcript.Block{withCC(""), withCC("")}
		}, want: []string{"3.2"}},
		{name: "3.2 tool markers count", mutate: func(r *Request) {
			r.Tools[0].CacheControl = transcript.Ephemeral()
			r.System = []*transcript.Text{withCC(""), withCC("")}
			r.Messages[0].Content = []transcript.Block{withCC(""), withCC("")}
		}, want: []string{"3.2"}},
		{name: "3.4 marker on thinking", mutate: func(r *Request) {
			r.Thinking = &Thinking{Type: "enabled", BudgetTokens: 1024}
			th := &transcript.Thinking{Thinking: "x", Signature: normSig, Extra: map[string]json.RawMessage{"cache_control": json.RawMessage(`{"type":"ephemeral"}`)}}
			r.Messages[1].Content = append([]transcript.Block{th}, r.Messages[1].Content...)
		}, want: []string{"3.4"}},
		{name: "3.7 1h after 5m", mutate: func(r *Request) {
			r.System = []*transcript.Text{withCC("5m")}
			r.Messages[0].Content = []transcript.Block{withCC("1h")}
		}, want: []string{"3.7"}},
		{name: "valid 1h before 5m", mutate: func(r *Request) {
			r.System = []*transcript.Text{withCC("1h")}
			r.Messages[0].Content = []transcript.Block{withCC("5m")}
		}},
		{name: "4.2 thinking enabled, loop without thinking", mutate: func(r *Request) {
			r.Thinking = &Thinking{Type: "adaptive"}
		}, want: []string{"4.2"}},
		{name: "valid thinking enabled, fresh prompt", mutate: func(r *Request) {
			r.Thinking = &Thinking{Type: "adaptive"}
			r.Messages = append(r.Messages, asst(text("ok")), user(text("next")))
		}},
		{name: "4.3 thinking not first", mutate: func(r *Request) {
			r.Messages = append(r.Messages, asst(text("a"), think, text("b")), user(text("next")))
		}, want: []string{"4.3"}},
		{name: "4.4 thinking last", mutate: func(r *Request) {
			r.Messages = append(r.Messages, asst(think), user(text("next")))
		}, want: []string{"4.4"}},
		{name: "4.5 thinking disabled, final turn with thinking", mutate: func(r *Request) {
			r.Messages[1].Content = append([]transcript.Block{think}, r.Messages[1].Content...)
		}, want: []string{"4.5"}},
		{name: "valid thinking disabled, earlier turn with thinking", mutate: func(r *Request) {
			r.Messages[1].Content = append([]transcript.Block{think}, r.Messages[1].Content...)
			r.Messages = append(r.Messages, asst(text("ok")), user(text("next")))
		}},
		{name: "4.7 redacted signature", mutate: func(r *Request) {
			r.Messages = append(r.Messages, asst(&transcript.Thinking{Thinking: "x", Signature: "[REDACTED_SIGNATURE]"}, text("a")), user(text("next")))
		}, want: []string{"4.7"}},
		{name: "4.7 empty redacted_thinking", mutate: func(r *Request) {
			r.Messages = append(r.Messages, asst(&transcript.RedactedThinking{}, text("a")), user(text("next")))
		}, want: []string{"4.7"}},
		{name: "4.8 budget", mutate: func(r *Request) {
			r.Thinking = &Thinking{Type: "enabled", BudgetTokens: 500}
			r.Messages = append(r.Messages, asst(text("ok")), user(text("next")))
		}, want: []string{"4.8"}},
		{name: "4.8 budget over max_tokens", mutate: func(r *Request) {
			r.Thinking = &Thinking{Type: "enabled", BudgetTokens: 8000}
			r.Messages = append(r.Messages, asst(text("ok")), user(text("next")))
		}, want: []string{"4.8"}},
		{name: "valid interleaved budget over max_tokens", opts: ValidateOptions{InterleavedThinking: true}, mutate: func(r *Request) {
			r.Thinking = &Thinking{Type: "enabled", BudgetTokens: 8000}
			r.Messages = append(r.Messages, asst(text("ok")), user(text("next")))
		}},
		{name: "5.1 media type", mutate: func(r *Request) {
			r.Messages[0].Content = append(r.Messages[0].Content, img("image/bmp", "Qk0="))
		}, want: []string{"5.1"}},
		{name: "5.2 image bytes", opts: ValidateOptions{MaxImageBytes: 8}, mutate: func(r *Request) {
			r.Messages[0].Content = append(r.Messages[0].Content, img("image/png", "iVBORw0KGgoAAAA="))
		}, want: []string{"5.2"}},
		{name: "5.2 image count", opts: ValidateOptions{MaxImages: 1}, mutate: func(r *Request) {
			r.Messages[0].Content = append(r.Messages[0].Content, img("image/png", "iVBORw0KGgo="), img("image/png", "iVBORw0KGgo="))
		}, want: []string{"5.2"}},
		{name: "5.2 image pixels", mutate: func(r *Request) {
			r.Messages[0].Content = append(r.Messages[0].Content, img("image/png", testkit.PNG(t, 8001, 1)))
		}, want: []string{"5.2"}},
		{name: "5.2 image pixels with many images", mutate: func(r *Request) {
			for range 21 {
				r.Messages[0].Content = append(r.Messages[0].Content, img("image/png", testkit.PNG(t, 2001, 1)))
			}
		}, want: []string{"5.2"}},
		{name: "valid image", mutate: func(r *Request) {
			r.Messages[0].Content = append(r.Messages[0].Content, img("image/png", testkit.PNG(t, 100, 100)))
		}},
		{name: "1.1 nil block in a user message", mutate: func(r *Request) {
			r.Messages[0].Content = append(r.Messages[0].Content, nil)
		}, want: []string{"1.1"}, paths: []string{"messages[0].content[1]"}},
		{name: "1.1 typed nil block in an assistant message", mutate: func(r *Request) {
			r.Messages[1].Content = append(r.Messages[1].Content, (*transcript.Text)(nil))
		}, want: []string{"1.1"}, paths: []string{"messages[1].content[2]"}},
		{name: "1.1 nil block in a tool_result", mutate: func(r *Request) {
			r.Messages[2].Content[0] = &transcript.ToolResult{ToolUseID: "t1", Content: []transcript.Block{text("r"), nil}}
		}, want: []string{"1.1"}, paths: []string{"messages[2].content[0].content[1]"}},
		{name: "2.5 duplicate server_tool_use id", mutate: func(r *Request) {
			r.Messages = append(r.Messages,
				asst(srvUse("srvtoolu_1", `{}`), srvResult("srvtoolu_1"), text("searched")), user(text("next")),
				asst(srvUse("srvtoolu_1", `{}`), srvResult("srvtoolu_1"), text("again")), user(text("and?")))
		}, want: []string{"2.5"}, paths: []string{"messages[5].content[0]"}},
		{name: "2.6 unknown block in a tool_result", mutate: func(r *Request) {
			r.Messages[2].Content[0] = &transcript.ToolResult{ToolUseID: "t1", Content: []transcript.Block{&transcript.UnknownBlock{Type: "fancy", JSON: json.RawMessage(`{"type":"fancy"}`)}}}
		}, want: []string{"2.6"}, paths: []string{"messages[2].content[0].content[0]"}},
		{name: "2.7 duplicate server tool result", mutate: func(r *Request) {
			r.Messages[1].Content = append(r.Messages[1].Content, srvUse("srvtoolu_1", `{}`), srvResult("srvtoolu_1"), srvResult("srvtoolu_1"))
		}, want: []string{"2.7"}, paths: []string{"messages[1].content[4]"}},
		{name: "2.9 tool without a name", mutate: func(r *Request) {
			r.Tools = append(r.Tools, Tool{Definition: json.RawMessage(`{"name":"","input_schema":{"type":"object"}}`)})
		}, want: []string{"2.9"}, paths: []string{"tools[1]"}},
		{name: "2.9 tool definition not an object", mutate: func(r *Request) {
			r.Tools = append(r.Tools, Tool{Name: "Bash", Definition: json.RawMessage(`["Bash"]`)})
		}, want: []string{"2.9"}, paths: []string{"tools[1]"}},
		{name: "2.11 document in an assistant message", mutate: func(r *Request) {
			r.Messages[1].Content = append(r.Messages[1].Content, &transcript.Document{Source: transcript.MediaSource{Type: "text", MediaType: "text/plain", Data: "notes"}})
		}, want: []string{"2.11"}, paths: []string{"messages[1].content[2]"}},
		{name: "2.11 server_tool_use input not an object", mutate: func(r *Request) {
			r.Messages[1].Content = append(r.Messages[1].Content, srvUse("srvtoolu_1", `"go"`), srvResult("srvtoolu_1"))
		}, want: []string{"2.11"}, paths: []string{"messages[1].content[2]"}},
		{name: "3.1 tool cache_control in the definition is not a marker", mutate: func(r *Request) {
			r.Tools = append(r.Tools, Tool{Name: "Bash", Definition: json.RawMessage(`{"name":"Bash","input_schema":{"type":"object"},"cache_control":"yes"}`)})
		}, want: []string{"3.1"}, paths: []string{"tools[1]", "tools[1]"}}, // not a marker, and so not ephemeral
		{name: "3.1 cache_control type not ephemeral", mutate: func(r *Request) {
			r.Messages[0].Content = []transcript.Block{&transcript.Text{Text: "x", CacheControl: &transcript.CacheControl{Type: "persistent"}}}
		}, want: []string{"3.1"}, paths: []string{"messages[0].content[0]"}},
		{name: "3.4 marker on redacted_thinking", mutate: func(r *Request) {
			red := &transcript.RedactedThinking{Data: "EqQBCkYIBxgCKkBzYW1wbGU=", Extra: map[string]json.RawMessage{"cache_control": json.RawMessage(`{"type":"ephemeral"}`)}}
			r.Messages = append(r.Messages, asst(red, text("a")), user(text("next")))
		}, want: []string{"3.4"}, paths: []string{"messages[3].content[0]"}},
		{name: "4.8 unknown thinking type", mutate: func(r *Request) {
			r.Thinking = &Thinking{Type: "extended"}
		}, want: []string{"4.8"}, paths: []string{"thinking"}},
		{name: "valid url and file images", mutate: func(r *Request) {
			r.Messages[0].Content = append(r.Messages[0].Content,
				&transcript.Image{Source: transcript.MediaSource{Type: "url", URL: "https://example.com/a.png"}},
				&transcript.Image{Source: transcript.MediaSource{Type: "file", FileID: "file_011"}})
		}},
		{name: "5.1 url image without url", mutate: func(r *Request) {
			r.Messages[0].Content = append(r.Messages[0].Content, &transcript.Image{Source: transcript.MediaSource{Type: "url"}})
		}, want: []string{"5.1"}, paths: []string{"messages[0].content[1]"}},
		{name: "5.1 file image without file_id", mutate: func(r *Request) {
			r.Messages[0].Content = append(r.Messages[0].Content, &transcript.Image{Source: transcript.MediaSource{Type: "file"}})
		}, want: []string{"5.1"}, paths: []string{"messages[0].content[1]"}},
		{name: "5.1 image source type", mutate: func(r *Request) {
			r.Messages[0].Content = append(r.Messages[0].Content, &transcript.Image{Source: transcript.MediaSource{Type: "s3", URL: "s3://bucket/a.png"}})
		}, want: []string{"5.1"}, paths: []string{"messages[0].content[1]"}},
		{name: "6.1 request does not encode", mutate: func(r *Request) {
			r.Tools = append(r.Tools, Tool{Name: "Bash", Definition: json.RawMessage(`{"name":"Bash",`)})
		}, want: []string{"2.9", "6.1"}, paths: []string{"tools[1]", ""}},
		{name: "6.1 body size", opts: ValidateOptions{MaxBodyBytes: 100}, mutate: func(r *Request) {}, want: []string{"6.1"}},
		{name: "6.3 window", opts: ValidateOptions{ContextWindow: 5000, InputTokens: 2000}, mutate: func(r *Request) {}, want: []string{"6.3"}},
		{name: "6.6 max_tokens", mutate: func(r *Request) { r.MaxTokens = 0 }, want: []string{"6.6"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := valBaseRequest()
			tt.mutate(&r)
			vs := validate(&r, tt.opts)
			var rules []string
			for _, v := range vs {
				if !slices.Contains(rules, v.Rule) {
					rules = append(rules, v.Rule)
				}
			}
			slices.Sort(rules)
			assert.Equal(t, tt.want, rules, "violations: %v", vs)
			if tt.paths != nil {
				var paths []string
				for _, v := range vs {
					paths = append(paths, v.Path)
				}
				assert.Equal(t, tt.paths, paths, "violations: %v", vs)
			}
			err := Validate(r, tt.opts)
			if tt.want == nil {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			var v *Violation
			require.True(t, errors.As(err, &v))
			assert.True(t, strings.HasPrefix(err.Error(), "agentctx: "))
		})
	}
}

func TestValidateViolationDetail(t *testing.T) {
	r := valBaseRequest()
	r.Messages[2].Content = []transcript.Block{text("and?"), result("t1", "r")}
	vs := validate(&r, ValidateOptions{})
	require.Len(t, vs, 1)
	assert.Equal(t, Violation{Rule: "2.3", Path: "messages[2].content[1]", Msg: "tool_result after other content: tool_result blocks come first"}, *vs[0])
	assert.Equal(t, "agentctx: messages[2].content[1]: tool_result after other content: tool_result blocks come first (rule 2.3)", vs[0].Error())

	r = valBaseRequest()
	r.Messages[2].Content = []transcript.Block{text("nothing")}
	vs = validate(&r, ValidateOptions{})
	require.Len(t, vs, 1)
	assert.Equal(t, "messages[1]", vs[0].Path)
	assert.Contains(t, vs[0].Msg, "t1")
}

func TestValidateJoinsAll(t *testing.T) {
	r := valBaseRequest()
	r.Tools = nil
	r.MaxTokens = 0
	r.Messages = append(r.Messages, valMsg(transcript.RoleAssistant, text("x")))
	err := Validate(r, ValidateOptions{})
	require.Error(t, err)
	joined, ok := err.(interface{ Unwrap() []error })
	require.True(t, ok)
	assert.Len(t, joined.Unwrap(), 4) // undeclared Read, no tools, trailing assistant, max_tokens
}

func asst(bs ...transcript.Block) Message { return valMsg(transcript.RoleAssistant, bs...) }

func srvUse(id, input string) *transcript.ServerToolUse {
	return &transcript.ServerToolUse{ID: id, Name: "web_search", Input: json.RawMessage(input)}
}

func srvResult(id string) *transcript.ServerToolResult {
	return &transcript.ServerToolResult{Type: "web_search_tool_result", ToolUseID: id, Content: json.RawMessage(`[]`)}
}

// TestValidateServerToolOrder checks that violations come in request order, the same on every
// call (no map iteration order leaks into them).
func TestValidateServerToolOrder(t *testing.T) {
	r := valBaseRequest()
	var content []transcript.Block
	for _, id := range []string{"srvtoolu_c", "srvtoolu_a", "srvtoolu_e", "srvtoolu_b", "srvtoolu_d"} {
		content = append(content, &transcript.ServerToolUse{ID: id, Name: "web_search", Input: json.RawMessage(`{}`)})
	}
	r.Messages[1].Content = append(content, r.Messages[1].Content...)
	want := Validate(r, ValidateOptions{}).Error()
	assert.Less(t, strings.Index(want, "srvtoolu_c"), strings.Index(want, "srvtoolu_a"))
	assert.Less(t, strings.Index(want, "srvtoolu_e"), strings.Index(want, "srvtoolu_d"))
	for range 50 {
		require.Equal(t, want, Validate(r, ValidateOptions{}).Error())
	}
}
