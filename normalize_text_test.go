package agentctx

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentctx/agentctx/provider"

	"github.com/agentctx/agentctx/internal/wire"

	"github.com/agentctx/agentctx/transcript"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNormalizeInvalidUTF8Transcript reads a transcript whose raw JSON fields hold invalid
// UTF-8 bytes and lone surrogate escapes (tool and server tool inputs, a server tool result,
// citations, a search result, an image source's unknown field) and requires a request body
// that is valid UTF-8 and valid JSON, with the inputs still JSON objects, every repair
// reported, and the thinking block byte for byte as it was.
func TestNormalizeInvalidUTF8Transcript(t *testing.T) {
	bad := "\xff\xfe"
	lines := []string{
		`{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"s","timestamp":"2026-01-02T03:04:05.000Z","message":{"role":"user","content":"search ` + bad + `"}}`,
		`{"type":"assistant","uuid":"a1","parentUuid":"u1","sessionId":"s","timestamp":"2026-01-02T03:04:06.000Z","message":{"id":"m1","role":"assistant","model":"claude-sonnet-4-5","content":[` +
			`{"type":"thinking","thinking":"plan \ud83d\ude00","signature":"` + normSig + `"},` +
			`{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{"query":"caf` + bad + `","lone":"\ud83d"}},` +
			`{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[{"type":"web_search_result","title":"t` + bad + `","url":"https://x"}]},` +
			`{"type":"text","text":"found","citations":[{"type":"web_search_result_location","cited_text":"c` + bad + `"}]},` +
			`{"type":"tool_use","id":"t1","name":"Read","input":{"path":"/tmp/` + bad + `","pair":"\ud83d\ude00","esc":"\\ud83d","low":"\udc00x"}}]}}`,
		`{"type":"user","uuid":"u2","parentUuid":"a1","sessionId":"s","timestamp":"2026-01-02T03:04:07.000Z","message":{"role":"user","content":[` +
			`{"type":"tool_result","tool_use_id":"t1","content":[{"type":"search_result","source":"s","title":"r` + bad + `","content":[{"type":"text","text":"x"}]},` +
			`{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo=","note":"n` + bad + `"}}]}]}}`,
	}
	tr, err := transcript.Read(strings.NewReader(strings.Join(lines, "\n")+"\n"), "bad.jsonl", transcript.ReadOptions{Strict: true})
	require.NoError(t, err)
	res := normPrepare(t, normThinkingOn(normConfig()), Input{Records: tr.Records, Tools: []provider.Tool{valReadTool}})

	body := requestBytes(t, res.Request)
	assert.True(t, utf8.Valid(body), "request body is valid UTF-8")
	assert.False(t, wire.HasLoneSurrogate(body), "no lone surrogate escape in the body")
	require.True(t, json.Valid(body), "request body is valid JSON")

	asst := res.Request.Messages[1].Content
	require.Len(t, asst, 5)
	th, ok := asst[0].(*transcript.Thinking)
	require.True(t, ok)
	assert.Same(t, tr.Records[1].Message.Content[0], th, "thinking is sent as decoded, never rewritten")
	srv := asst[1].(*transcript.ServerToolUse)
	assert.JSONEq(t, `{"query":"caf\ufffd\ufffd","lone":"\ufffd"}`, string(srv.Input))
	assert.Contains(t, string(asst[2].(*transcript.ServerToolResult).Content), "t\ufffd\ufffd")
	assert.Contains(t, string(asst[3].(*transcript.Text).Citations), "c\ufffd\ufffd")
	tu := asst[4].(*transcript.ToolUse)
	assert.Equal(t, `{"path":"/tmp/`+"\ufffd\ufffd"+`","pair":"\ud83d\ude00","esc":"\\ud83d","low":"\ufffdx"}`, string(tu.Input),
		"key order and escapes kept: a surrogate pair and an escaped backslash are not repairs")
	assert.True(t, wire.IsJSONObject(tu.Input))

	results, _ := toolResults(res.Request)
	content := results["t1"].Content
	require.Len(t, content, 2)
	assert.Contains(t, string(content[0].(*transcript.UnknownBlock).JSON), "r\ufffd\ufffd")
	assert.Equal(t, "n\ufffd\ufffd", mustString(t, content[1].(*transcript.Image).Source.Extra["note"]))

	for _, want := range []string{
		"3 invalid UTF-8 sequences replaced by U+FFFD in server_tool_use block (input)",
		"2 invalid UTF-8 sequences replaced by U+FFFD in web_search_tool_result block (content)",
		"2 invalid UTF-8 sequences replaced by U+FFFD in text block (citations)",
		"3 invalid UTF-8 sequences replaced by U+FFFD in tool_use block (input)",
		"4 invalid UTF-8 sequences replaced by U+FFFD in tool_result block (content[0].json, content[1].source.note)",
	} {
		assert.True(t, normHasAction(&res.Report, ActionRepaired, want), "missing %q in %q", want, normDetails(&res.Report))
	}
	assert.Contains(t, string(tr.Records[1].Message.Content[1].(*transcript.ServerToolUse).Input), bad, "the transcript's bytes are not modified")
}

func mustString(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var s string
	require.NoError(t, json.Unmarshal(raw, &s))
	return s
}

// TestNormalizeInvalidUTF8Strings covers blocks built in Go, whose strings may hold any bytes
// (encoding would replace them silently): the system prompt, text, a document's title, a tool
// definition, and thinking, which is dropped rather than rewritten.
func TestNormalizeInvalidUTF8Strings(t *testing.T) {
	k := newTK()
	k.user("hello \xc3")
	k.assistant(&transcript.Thinking{Thinking: "why \xe2\x82", Signature: normSig}, text("answer \x80"), toolUse("t1", "Read"))
	doc := &transcript.Document{Source: transcript.MediaSource{Type: "text", MediaType: "text/plain", Data: "d\xff"}, Title: "t\xff"}
	k.results(&transcript.ToolResult{ToolUseID: "t1", Content: []transcript.Block{doc}})
	tools := []provider.Tool{{Name: "Read", Definition: json.RawMessage("{\"name\":\"Read\",\"description\":\"r\xff\",\"input_schema\":{\"type\":\"object\"}}")}}
	sys := text("sys \xff")
	res := normPrepare(t, normThinkingOn(normConfig()), Input{Records: k.recs, System: []*transcript.Text{sys}, Tools: tools})
	req := res.Request

	assert.Equal(t, "sys \ufffd", req.System[0].Text)
	assert.Equal(t, "hello \ufffd", req.Messages[0].Content[0].(*transcript.Text).Text)
	assert.Equal(t, "answer \ufffd", req.Messages[1].Content[0].(*transcript.Text).Text, "the thinking block is gone")
	results, _ := toolResults(req)
	d := results["t1"].Content[0].(*transcript.Document)
	assert.Equal(t, "t\ufffd", d.Title)
	assert.Equal(t, "d\ufffd", d.Source.Data)
	assert.Equal(t, "{\"name\":\"Read\",\"description\":\"r\ufffd\",\"input_schema\":{\"type\":\"object\"}}", string(req.Tools[0].Definition))
	assert.Equal(t, "t\xff", doc.Title, "the caller's block is not modified")
	assert.Equal(t, "sys \xff", sys.Text, "the caller's system block is not modified")

	for _, want := range []string{
		"1 invalid UTF-8 sequences replaced by U+FFFD in system[0] (text)",
		"1 invalid UTF-8 sequences replaced by U+FFFD in text block (text)",
		"2 invalid UTF-8 sequences replaced by U+FFFD in tool_result block (content[0].source.data, content[0].title)",
		"1 invalid UTF-8 sequences replaced by U+FFFD in tools[0] (definition)",
	} {
		assert.True(t, normHasAction(&res.Report, ActionRepaired, want), "missing %q in %q", want, normDetails(&res.Report))
	}
	assert.True(t, normHasAction(&res.Report, ActionDropped, "thinking text is not valid UTF-8"), "%q", normDetails(&res.Report))
	assert.True(t, res.Report.ThinkingUnavailable, "the turn in flight lost its thinking")
}

// TestNormalizeInvalidRedactedThinking drops redacted thinking whose data is not valid UTF-8:
// it cannot be what the provider sent, and rewriting it would not make it so.
func TestNormalizeInvalidRedactedThinking(t *testing.T) {
	k := newTK()
	k.user("q")
	k.assistant(&transcript.RedactedThinking{Data: "abc\xff"}, text("a"))
	k.user("next")
	res := normPrepare(t, normThinkingOn(normConfig()), Input{Records: k.recs})
	assert.Equal(t, normLines("user: text(q)", "assistant: text(a)", "user: text(next)"), normSketch(res.Request.Messages))
	assert.True(t, normHasAction(&res.Report, ActionDropped, "redacted_thinking data is not valid UTF-8"))
}
