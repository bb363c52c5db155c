package openai_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/openai"
	"github.com/agentctx/agentctx/provider"
	"github.com/agentctx/agentctx/session"
	"github.com/agentctx/agentctx/transcript"
	sdk "github.com/openai/openai-go/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// call is a tool call of a scripted answer; args is the arguments string as the model
// wrote it.
type call struct{ id, name, args string }

// chatAnswer is a scripted Chat Completions answer, written as vLLM writes one: a JSON body
// (reasoning_content beside the content, stop_reason beside finish_reason, cached tokens in
// prompt_tokens_details) or a stream of chunks with the same deltas.
type chatAnswer struct {
	id, reasoning, content      string
	calls                       []call
	finish                      string
	stopReason                  any // vLLM's: nil, or the stop string met
	prompt, cached, completion  int
	noUsage                     bool
	streamCutBeforeFinish       bool
	streamErrorAfterFirstChunks string
}

const created = 1764500000

func (a chatAnswer) usage() map[string]any {
	if a.noUsage {
		return nil
	}
	return map[string]any{"prompt_tokens": a.prompt, "completion_tokens": a.completion, "total_tokens": a.prompt + a.completion,
		"prompt_tokens_details": map[string]any{"cached_tokens": a.cached}}
}

func (a chatAnswer) json() string {
	msg := map[string]any{"role": "assistant", "content": nil, "reasoning_content": nil, "tool_calls": []any{}}
	if a.content != "" {
		msg["content"] = a.content
	}
	if a.reasoning != "" {
		msg["reasoning_content"] = a.reasoning
	}
	var calls []any
	for _, c := range a.calls {
		calls = append(calls, map[string]any{"id": c.id, "type": "function", "function": map[string]any{"name": c.name, "arguments": c.args}})
	}
	if len(calls) > 0 {
		msg["tool_calls"] = calls
	}
	return mustJSON(map[string]any{
		"id": a.id, "object": "chat.completion", "created": created, "model": "Qwen/Qwen3-32B",
		"choices": []any{map[string]any{"index": 0, "message": msg, "logprobs": nil, "finish_reason": a.finish, "stop_reason": a.stopReason}},
		"usage":   a.usage(),
	})
}

// stream writes the answer as server-sent events: the reasoning and the content in pieces,
// each call's id and name first and then its arguments in pieces, the finish_reason, the
// usage in a chunk of its own, and [DONE].
func (a chatAnswer) stream(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	chunk := func(choices []any, usage map[string]any) {
		c := map[string]any{"id": a.id, "object": "chat.completion.chunk", "created": created, "model": "Qwen/Qwen3-32B", "choices": choices}
		if usage != nil {
			c["usage"] = usage
		}
		fmt.Fprintf(w, "data: %s\n\n", mustJSON(c))
	}
	delta := func(d map[string]any) {
		chunk([]any{map[string]any{"index": 0, "delta": d, "logprobs": nil, "finish_reason": nil}}, nil)
	}
	delta(map[string]any{"role": "assistant", "content": ""})
	for _, p := range pieces(a.reasoning, 9) {
		delta(map[string]any{"reasoning_content": p})
	}
	if a.streamErrorAfterFirstChunks != "" {
		fmt.Fprintf(w, "data: %s\n\n", a.streamErrorAfterFirstChunks)
		return
	}
	for _, p := range pieces(a.content, 9) {
		delta(map[string]any{"content": p})
	}
	for i, c := range a.calls {
		delta(map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": c.id, "type": "function", "function": map[string]any{"name": c.name, "arguments": ""}}}})
		for _, p := range pieces(c.args, 7) {
			delta(map[string]any{"tool_calls": []any{map[string]any{"index": i, "function": map[string]any{"arguments": p}}}})
		}
	}
	if a.streamCutBeforeFinish {
		return
	}
	chunk([]any{map[string]any{"index": 0, "delta": map[string]any{}, "logprobs": nil, "finish_reason": a.finish, "stop_reason": a.stopReason}}, nil)
	if u := a.usage(); u != nil {
		chunk([]any{}, u)
	}
	io.WriteString(w, "data: [DONE]\n\n")
}

func pieces(s string, n int) []string {
	var out []string
	for len(s) > n {
		out = append(out, s[:n])
		s = s[n:]
	}
	if s != "" {
		out = append(out, s)
	}
	return out
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// readTool is the one tool the scripted conversations call.
var readTool = provider.Tool{Name: "Read", Definition: json.RawMessage(
	`{"name":"Read","description":"Read a file.","input_schema":{"type":"object","properties":{"path":{"type":"string"},"lines":{"type":"array"}},"required":["path"]}}`)}

// loop is what a turn loop needs: a pipeline, a session and a clock, all deterministic.
type loop struct {
	p    *agentctx.Pipeline
	sess *session.Session
	in   agentctx.Input
	cfg  agentctx.Config
	now  func() time.Time
}

func newLoop(t *testing.T) *loop {
	clock := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	now := func() time.Time { return clock }
	cfg := agentctx.Config{Model: "Qwen/Qwen3-32B", ContextWindow: 32000, MaxOutputTokens: 2048, Tokens: agentctx.EstimateCounter{}, Now: now, Validate: true}
	p, err := agentctx.New(cfg)
	require.NoError(t, err)
	return &loop{p: p, cfg: cfg, now: now,
		sess: session.New(session.Options{ID: "s-openai-loop", Now: now}),
		in:   agentctx.Input{System: []*transcript.Text{{Text: "You review Go code."}}, Tools: []provider.Tool{readTool}}}
}

// reread returns the session's records as a new process reads them back from the
// transcript's bytes.
func (l *loop) reread(t *testing.T) []transcript.Record {
	var buf bytes.Buffer
	for _, r := range l.sess.Records() {
		line, err := r.MarshalLine()
		require.NoError(t, err)
		buf.Write(line)
		buf.WriteByte('\n')
	}
	tr, err := transcript.Read(&buf, "resumed.jsonl", transcript.ReadOptions{})
	require.NoError(t, err)
	return tr.Records
}

// resumed prepares the next request of a session rebuilt from its transcript's bytes, as a
// new process would after a restart.
func (l *loop) resumed(t *testing.T) provider.Request {
	sess, err := session.Resume(l.reread(t), session.Options{Now: l.now})
	require.NoError(t, err)
	p, err := agentctx.New(l.cfg)
	require.NoError(t, err)
	res, err := sess.Prepare(t.Context(), p, l.in)
	require.NoError(t, err)
	return res.Request
}

func chatJSON(t *testing.T, req provider.Request) string {
	p, _, err := openai.ChatParams(req, openai.Options{})
	require.NoError(t, err)
	b, err := json.Marshal(p)
	require.NoError(t, err)
	return string(b)
}

// TestChatTurnLoop runs a conversation on a server speaking Chat Completions as vLLM does,
// with JSON answers and streamed ones: parallel tool calls with reasoning and cached tokens,
// the tool results, an answer cut at the output cap and the recovery's request, the final
// answer.
func TestChatTurnLoop(t *testing.T) {
	script := []chatAnswer{
		{id: "chatcmpl-1", reasoning: "Both files matter; read them at once.", content: "Reading both files.",
			calls:  []call{{"chatcmpl-tool-a1", "Read", `{"path": "a.go"}`}, {"chatcmpl-tool-b2", "Read", `{"path":"b.go",  "lines": [1, 40]}`}},
			finish: "tool_calls", prompt: 1200, cached: 1024, completion: 40},
		{id: "chatcmpl-2", content: "The first file declares", finish: "length", prompt: 1400, cached: 1152, completion: 64},
		{id: "chatcmpl-3", content: "Both files compile; b.go lacks a test.", finish: "stop", prompt: 1400, cached: 1152, completion: 12},
	}
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			s := newCompatServer(t, func(w http.ResponseWriter, _ *http.Request, n int) {
				if !assert.Less(t, n, len(script), "more requests than the script answers") {
					writeJSON(w, 500, `{"error":{"message":"no more answers","type":"server_error"}}`)
					return
				}
				if stream {
					script[n].stream(w)
					return
				}
				writeJSON(w, 200, script[n].json())
			})
			c := openai.NewClient(s.sdkClient())
			opts := openai.Options{Stream: stream}
			l := newLoop(t)
			ctx := t.Context()

			// Turn 1: two calls at once.
			_, err := l.sess.User("Do a.go and b.go compile?")
			require.NoError(t, err)
			res, err := l.sess.Prepare(ctx, l.p, l.in)
			require.NoError(t, err)
			rec, err := c.Turn(ctx, l.sess, res.Request, opts)
			require.NoError(t, err)
			assert.Equal(t, transcript.TypeAssistant, rec.Type)
			m := rec.Message
			assert.Equal(t, "chatcmpl-1", m.ID)
			assert.Equal(t, "message", m.Type)
			assert.Equal(t, transcript.RoleAssistant, m.Role)
			assert.Equal(t, "Qwen/Qwen3-32B", m.Model)
			assert.Equal(t, "tool_use", m.StopReason)
			require.Len(t, m.Content, 4)
			assert.Equal(t, "Both files matter; read them at once.", m.Content[0].(*transcript.Thinking).Thinking)
			assert.Equal(t, "Reading both files.", m.Content[1].(*transcript.Text).Text)
			a1, b2 := m.Content[2].(*transcript.ToolUse), m.Content[3].(*transcript.ToolUse)
			assert.Equal(t, "chatcmpl-tool-a1", a1.ID)
			assert.Equal(t, "Read", a1.Name)
			assert.Equal(t, `{"path":"a.go"}`, string(a1.Input), "compacted, as the transcript stores it")
			assert.Equal(t, "chatcmpl-tool-b2", b2.ID)
			assert.Equal(t, `{"path":"b.go","lines":[1,40]}`, string(b2.Input))
			assert.Equal(t, &transcript.Usage{InputTokens: 176, CacheReadInputTokens: 1024, OutputTokens: 40}, m.Usage,
				"prompt_tokens count the cached tokens, input_tokens do not")
			first := s.body(0)
			assert.Equal(t, stream, first["stream"] == true)
			if stream {
				assert.Equal(t, map[string]any{"include_usage": true}, first["stream_options"])
			}

			// Turn 2: the results go back; the answer is cut at the output cap.
			_, err = l.sess.ToolResults(transcript.TextResult(a1.ID, "package a\n"), transcript.TextResult(b2.ID, "package b\n"))
			require.NoError(t, err)
			res, err = l.sess.Prepare(ctx, l.p, l.in)
			require.NoError(t, err)
			assert.JSONEq(t, chatJSON(t, res.Request), chatJSON(t, l.resumed(t)), "a resumed session sends the same request")
			rec, err = c.Turn(ctx, l.sess, res.Request, opts)
			require.NoError(t, err)
			assert.Equal(t, "max_tokens", rec.Message.StopReason)
			require.True(t, rec.Message.Truncated())

			second := s.body(1)
			msgs := second["messages"].([]any)
			require.Len(t, msgs, 5, "system, user, assistant, two tool messages")
			asst := msgs[2].(map[string]any)
			assert.Equal(t, "Reading both files.", asst["content"])
			assert.Equal(t, []any{
				map[string]any{"id": "chatcmpl-tool-a1", "type": "function", "function": map[string]any{"name": "Read", "arguments": `{"path":"a.go"}`}},
				map[string]any{"id": "chatcmpl-tool-b2", "type": "function", "function": map[string]any{"name": "Read", "arguments": `{"path":"b.go","lines":[1,40]}`}},
			}, asst["tool_calls"])
			assert.Equal(t, "chatcmpl-tool-a1", msgs[3].(map[string]any)["tool_call_id"])
			assert.Equal(t, "chatcmpl-tool-b2", msgs[4].(map[string]any)["tool_call_id"])
			raw := mustJSON(second)
			assert.NotContains(t, raw, "Both files matter", "the reasoning is not sent back")
			assert.NotContains(t, raw, "reasoning_content")

			// The runtime passes the cut answer to Recover, which asks for it again with a
			// higher cap.
			res, err = l.sess.Recover(ctx, l.p, l.in, provider.ErrOutputTruncated)
			require.NoError(t, err)
			require.NotNil(t, res.Report.Recovery)
			assert.Equal(t, transcript.RungOutputCap, res.Report.Recovery.Rung, res.Report.Recovery.Reason)
			rec, err = c.Turn(ctx, l.sess, res.Request, opts)
			require.NoError(t, err)
			assert.Equal(t, "end_turn", rec.Message.StopReason)
			assert.Equal(t, "Both files compile; b.go lacks a test.", rec.Message.Content[0].(*transcript.Text).Text)

			third := s.body(2)
			assert.Greater(t, third["max_completion_tokens"], second["max_completion_tokens"], "the cap is raised")
			assert.NotContains(t, mustJSON(third), "The first file declares", "the cut answer is withheld")
			assert.Equal(t, second["messages"], third["messages"], "the same conversation is asked again")
			assert.Equal(t, 3, s.requests())

			var kinds []string
			for _, r := range l.sess.Records() {
				k := string(r.Type)
				if r.Subtype != "" {
					k += "/" + string(r.Subtype)
				}
				if r.Message != nil && r.Message.StopReason != "" {
					k += ":" + r.Message.StopReason
				}
				kinds = append(kinds, k)
			}
			assert.Equal(t, []string{"user", "assistant:tool_use", "user", "assistant:max_tokens", "system/" + string(transcript.SubtypeRecovery), "assistant:end_turn"}, kinds)
		})
	}
}

// TestChatTurnErrors checks the answers a turn cannot use: each is an *openai.Error with its
// class, naming what is wrong, and the turn appends nothing.
func TestChatTurnErrors(t *testing.T) {
	badArgs := chatAnswer{id: "chatcmpl-9", content: "Reading.", finish: "tool_calls", prompt: 10, completion: 5,
		calls: []call{{"call_1", "Read", `{"path":"a.go"}`}, {"call_2", "Read", `{"path": "b.go"`}}}
	ptlEvent := `{"error":{"object":"error","message":"This model's maximum context length is 32768 tokens. However, you requested 40960 tokens (32768 in the messages, 8192 in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":400}}`
	tests := []struct {
		name     string
		stream   bool
		reply    func(w http.ResponseWriter)
		class    provider.ErrorClass
		contains string
		ptl      *provider.PromptTooLongError
	}{
		{
			name: "no choices",
			reply: func(w http.ResponseWriter) {
				writeJSON(w, 200, `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"m","choices":[]}`)
			},
			class: provider.ClassFatal, contains: "no choices",
		},
		{
			name:  "arguments that are not JSON",
			reply: func(w http.ResponseWriter) { writeJSON(w, 200, badArgs.json()) },
			class: provider.ClassRetryable, contains: "choices[0].message.tool_calls[1].function.arguments",
		},
		{
			name:   "arguments that are not JSON, streamed",
			stream: true,
			reply:  badArgs.stream,
			class:  provider.ClassRetryable, contains: "choices[0].message.tool_calls[1].function.arguments",
		},
		{
			name: "arguments that are JSON but no object",
			reply: func(w http.ResponseWriter) {
				a := badArgs
				a.calls = []call{{"call_1", "Read", `["a.go"]`}}
				writeJSON(w, 200, a.json())
			},
			class: provider.ClassRetryable, contains: "tool_calls[0].function.arguments are not a JSON object (valid JSON, but not an object)",
		},
		{
			name: "a call without a name",
			reply: func(w http.ResponseWriter) {
				a := badArgs
				a.calls = []call{{"call_1", "", `{}`}}
				writeJSON(w, 200, a.json())
			},
			class: provider.ClassRetryable, contains: "tool_calls[0].function.name is empty",
		},
		{
			name: "an error object in a 200 answer",
			reply: func(w http.ResponseWriter) {
				writeJSON(w, 200, `{"error":{"message":"The server had an error while processing your request.","type":"server_error","param":null,"code":null}}`)
			},
			class: provider.ClassRetryable, contains: "The server had an error",
		},
		{
			name: "vLLM's error object in a 200 answer, prompt too long",
			reply: func(w http.ResponseWriter) {
				writeJSON(w, 200, `{"object":"error","message":"This model's maximum context length is 32768 tokens. However, your messages resulted in 40001 tokens. Please reduce the length of the messages.","type":"BadRequestError","param":null,"code":400}`)
			},
			class: provider.ClassPromptTooLong, ptl: &provider.PromptTooLongError{Tokens: 40001, Limit: 32768, Window: 32768},
		},
		{
			name:  "a body that is not JSON",
			reply: func(w http.ResponseWriter) { writeJSON(w, 200, `<html>bad gateway</html>`) },
			class: provider.ClassFatal, contains: "not a chat completion",
		},
		{
			name:   "an error event in the stream",
			stream: true,
			reply:  chatAnswer{id: "chatcmpl-7", reasoning: "Thinking it over.", streamErrorAfterFirstChunks: ptlEvent}.stream,
			class:  provider.ClassPromptTooLong, ptl: &provider.PromptTooLongError{Tokens: 32768, Limit: 24576, Window: 32768},
		},
		{
			name:   "a stream cut before its finish_reason",
			stream: true,
			reply:  chatAnswer{id: "chatcmpl-8", content: "Half an ans", streamCutBeforeFinish: true}.stream,
			class:  provider.ClassRetryable, contains: "finish_reason",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newCompatServer(t, func(w http.ResponseWriter, _ *http.Request, _ int) { tt.reply(w) })
			l := newLoop(t)
			_, err := l.sess.User("Read a.go and b.go.")
			require.NoError(t, err)
			res, err := l.sess.Prepare(t.Context(), l.p, l.in)
			require.NoError(t, err)
			before := len(l.sess.Records())
			_, err = openai.NewClient(s.sdkClient()).Turn(t.Context(), l.sess, res.Request, openai.Options{Stream: tt.stream})
			require.Error(t, err)
			assert.Len(t, l.sess.Records(), before, "nothing is appended")
			assert.Equal(t, tt.class, provider.ClassOf(err), "%v", err)
			_, ok := errors.AsType[*openai.Error](err)
			assert.True(t, ok, "%T", err)
			assert.Contains(t, err.Error(), tt.contains)
			if tt.ptl != nil {
				ptl, ok := errors.AsType[*provider.PromptTooLongError](err)
				require.True(t, ok, "%v", err)
				assert.Equal(t, tt.ptl.Tokens, ptl.Tokens)
				assert.Equal(t, tt.ptl.Limit, ptl.Limit)
				assert.Equal(t, tt.ptl.Window, ptl.Window)
			}
		})
	}
}

// TestChatCutCall: an answer cut at the output cap in the middle of a call's arguments is
// no error: the cut arguments are kept as a JSON string, the message is truncated, the
// recovery withholds it and asks again; when the second answer is cut too, the
// continuation's request carries the cut answer, valid for both providers.
func TestChatCutCall(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			cut := chatAnswer{id: "chatcmpl-5", content: "Reading.", finish: "length", prompt: 900, completion: 2048,
				calls: []call{{"call_1", "Read", `{"path":"a.go"}`}, {"call_2", "Read", `{"path":"<b&c>.go`}}}
			again := cut
			again.id = "chatcmpl-6"
			script := []chatAnswer{cut, again, {id: "chatcmpl-7", content: "Done.", finish: "stop", prompt: 900, completion: 3}}
			s := newCompatServer(t, func(w http.ResponseWriter, _ *http.Request, n int) {
				if stream {
					script[n].stream(w)
					return
				}
				writeJSON(w, 200, script[n].json())
			})
			c := openai.NewClient(s.sdkClient())
			opts := openai.Options{Stream: stream}
			l := newLoop(t)
			ctx := t.Context()
			_, err := l.sess.User("Read a.go and b.go.")
			require.NoError(t, err)
			res, err := l.sess.Prepare(ctx, l.p, l.in)
			require.NoError(t, err)
			rec, err := c.Turn(ctx, l.sess, res.Request, opts)
			require.NoError(t, err)
			require.True(t, rec.Message.Truncated())
			require.Len(t, rec.Message.Content, 3)
			assert.Equal(t, `{"path":"a.go"}`, string(rec.Message.Content[1].(*transcript.ToolUse).Input))
			assert.Equal(t, `"{\"path\":\"<b&c>.go"`, string(rec.Message.Content[2].(*transcript.ToolUse).Input), "kept as the model wrote it")
			back := l.reread(t)
			assert.Equal(t, rec.Message.Content[2].(*transcript.ToolUse).Input, back[len(back)-1].Message.Content[2].(*transcript.ToolUse).Input,
				"the record survives the transcript")

			for n, rung := range []string{transcript.RungOutputCap, transcript.RungContinue} {
				res, err = l.sess.Recover(ctx, l.p, l.in, provider.ErrOutputTruncated)
				require.NoError(t, err)
				assert.Equal(t, rung, res.Report.Recovery.Rung)
				rec, err = c.Turn(ctx, l.sess, res.Request, opts)
				require.NoError(t, err)
				if n == 0 {
					assert.NotContains(t, mustJSON(s.body(1)), "call_2", "the cut answer is withheld")
				}
			}
			assert.Equal(t, "end_turn", rec.Message.StopReason)
			// The continuation shows the model its cut answer; the cut call goes as {} (the
			// pipeline reports the repair) and is answered as interrupted.
			msgs := s.body(2)["messages"].([]any)
			require.Len(t, msgs, 6)
			calls := msgs[2].(map[string]any)["tool_calls"].([]any)
			require.Len(t, calls, 2)
			assert.Equal(t, map[string]any{"name": "Read", "arguments": "{}"}, calls[1].(map[string]any)["function"])
			assert.Equal(t, "call_2", msgs[4].(map[string]any)["tool_call_id"])
		})
	}
}

// TestMessageFromChat converts answers of the compatible servers' shapes.
func TestMessageFromChat(t *testing.T) {
	tests := []struct {
		name  string
		body  string
		check func(t *testing.T, m *transcript.Message)
	}{
		{
			name: "stop",
			body: `{"id":"c1","object":"chat.completion","created":1,"model":"gpt-5","choices":[{"index":0,"message":{"role":"assistant","content":"Done."},"finish_reason":"stop"}],"usage":{"prompt_tokens":50,"completion_tokens":2,"total_tokens":52}}`,
			check: func(t *testing.T, m *transcript.Message) {
				assert.Equal(t, "end_turn", m.StopReason)
				assert.Equal(t, []transcript.Block{&transcript.Text{Text: "Done."}}, m.Content)
				assert.Equal(t, &transcript.Usage{InputTokens: 50, OutputTokens: 2}, m.Usage)
			},
		},
		{
			name: "vLLM names the stop string it met",
			body: `{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"42"},"finish_reason":"stop","stop_reason":"</answer>"}]}`,
			check: func(t *testing.T, m *transcript.Message) {
				assert.Equal(t, "stop_sequence", m.StopReason)
				assert.Equal(t, "</answer>", m.StopSequence)
				assert.Nil(t, m.Usage, "no usage reported: none anchors the count")
			},
		},
		{
			name: "a stop token id is no stop sequence",
			body: `{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"42"},"finish_reason":"stop","stop_reason":151645}]}`,
			check: func(t *testing.T, m *transcript.Message) {
				assert.Equal(t, "end_turn", m.StopReason)
				assert.Empty(t, m.StopSequence)
			},
		},
		{
			name: "tool calls under finish_reason stop, Ollama's reasoning field, a call without an id",
			body: `{"id":"chatcmpl-42","object":"chat.completion","created":1764500000,"model":"qwen3:8b","choices":[{"index":0,"message":{"role":"assistant","content":"","reasoning":"Need the file.","tool_calls":[{"type":"function","function":{"name":"Read","arguments":""}}]},"finish_reason":"stop"}],"usage":{"prompt_tokens":80,"completion_tokens":20,"total_tokens":100}}`,
			check: func(t *testing.T, m *transcript.Message) {
				assert.Equal(t, "tool_use", m.StopReason)
				require.Len(t, m.Content, 2)
				assert.Equal(t, "Need the file.", m.Content[0].(*transcript.Thinking).Thinking)
				tu := m.Content[1].(*transcript.ToolUse)
				assert.Regexp(t, `^call_[0-9a-f]{24}$`, tu.ID)
				assert.Equal(t, `{}`, string(tu.Input), "empty arguments are no arguments")
			},
		},
		{
			name: "the deprecated function_call",
			body: `{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"function_call":{"name":"Read","arguments":"{\"path\":\"a\"}"}},"finish_reason":"function_call"}]}`,
			check: func(t *testing.T, m *transcript.Message) {
				assert.Equal(t, "tool_use", m.StopReason)
				require.Len(t, m.Content, 1)
				tu := m.Content[0].(*transcript.ToolUse)
				assert.Equal(t, "Read", tu.Name)
				assert.Equal(t, `{"path":"a"}`, string(tu.Input))
				assert.NotEmpty(t, tu.ID)
			},
		},
		{
			name: "content_filter",
			body: `{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"Here is"},"finish_reason":"content_filter"}]}`,
			check: func(t *testing.T, m *transcript.Message) {
				assert.Equal(t, "refusal", m.StopReason)
				assert.False(t, m.Truncated())
			},
		},
		{
			name: "a refusal",
			body: `{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":"I can't help with that."},"finish_reason":"stop"}]}`,
			check: func(t *testing.T, m *transcript.Message) {
				assert.Equal(t, "refusal", m.StopReason)
				assert.Equal(t, []transcript.Block{&transcript.Text{Text: "I can't help with that."}}, m.Content)
			},
		},
		{
			name:  "an unknown finish_reason is kept",
			body:  `{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"Par"},"finish_reason":"abort"}]}`,
			check: func(t *testing.T, m *transcript.Message) { assert.Equal(t, "abort", m.StopReason) },
		},
		{
			name: "only the first choice is read",
			body: `{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"first"},"finish_reason":"stop"},{"index":1,"message":{"role":"assistant","content":"second"},"finish_reason":"stop"}]}`,
			check: func(t *testing.T, m *transcript.Message) {
				assert.Equal(t, []transcript.Block{&transcript.Text{Text: "first"}}, m.Content)
			},
		},
		{
			name: "whitespace around calls is no text; an answer without id gets one",
			body: `{"object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"\n\n","tool_calls":[{"id":"call_1","type":"function","function":{"name":"Read","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}`,
			check: func(t *testing.T, m *transcript.Message) {
				require.Len(t, m.Content, 1)
				assert.Regexp(t, `^chatcmpl-[0-9a-f]{24}$`, m.ID)
			},
		},
		{
			name: "a custom tool call is kept as an unknown block",
			body: `{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"custom","custom":{"name":"grammar","input":"x"}}]},"finish_reason":"tool_calls"}]}`,
			check: func(t *testing.T, m *transcript.Message) {
				require.Len(t, m.Content, 1)
				u := m.Content[0].(*transcript.UnknownBlock)
				assert.Equal(t, transcript.BlockKind("custom"), u.Type)
				assert.JSONEq(t, `{"id":"call_1","type":"custom","custom":{"name":"grammar","input":"x"}}`, string(u.JSON))
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var cc sdk.ChatCompletion
			require.NoError(t, json.Unmarshal([]byte(tt.body), &cc))
			m, err := openai.MessageFromChat(&cc)
			require.NoError(t, err)
			assert.Equal(t, "message", m.Type)
			assert.Equal(t, transcript.RoleAssistant, m.Role)
			tt.check(t, m)
			_, err = json.Marshal(m)
			assert.NoError(t, err, "the record can be written")
		})
	}
	_, err := openai.MessageFromChat(nil)
	assert.Equal(t, provider.ClassFatal, provider.ClassOf(err))
}

// TestSummarizerStreamsWithOptions: Options.Stream makes the Summarizer stream too.
func TestSummarizerStreamsWithOptions(t *testing.T) {
	s := newCompatServer(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
		chatAnswer{id: "chatcmpl-s", content: "<summary>ok</summary>", finish: "stop", prompt: 100, cached: 64, completion: 5}.stream(w)
	})
	sum := s.summarizer(false)
	sum.Options.Stream = true
	out, err := sum.Summarize(t.Context(), summaryRequest())
	require.NoError(t, err)
	assert.Equal(t, "<summary>ok</summary>", out.Text)
	assert.Equal(t, &transcript.Usage{InputTokens: 36, CacheReadInputTokens: 64, OutputTokens: 5}, out.Usage)
	assert.Equal(t, true, s.body(0)["stream"])
	assert.True(t, strings.HasPrefix(out.By, "Qwen/"))
}
