package openai_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/agentctx/agentctx/openai"
	"github.com/agentctx/agentctx/provider"
	"github.com/agentctx/agentctx/transcript"
	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// respAnswer is a scripted Responses API answer: a reasoning item, a message, function
// calls, the status and the usage, as a JSON body or a stream of events.
type respAnswer struct {
	id, summary, text          string
	encrypted                  string
	calls                      []call
	status, incomplete         string
	input, cached, output      int
	errCode, errMessage        string
	streamEndsBeforeCompletion bool
}

func (a respAnswer) response() map[string]any {
	var output []any
	if a.summary != "" {
		item := map[string]any{"type": "reasoning", "id": "rs_" + a.id, "summary": []any{map[string]any{"type": "summary_text", "text": a.summary}}}
		if a.encrypted != "" {
			item["encrypted_content"] = a.encrypted
		}
		output = append(output, item)
	}
	if a.text != "" {
		output = append(output, map[string]any{"type": "message", "id": "msg_" + a.id, "status": "completed", "role": "assistant",
			"content": []any{map[string]any{"type": "output_text", "text": a.text, "annotations": []any{}}}})
	}
	for i, c := range a.calls {
		output = append(output, map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_%s_%d", a.id, i), "call_id": c.id, "name": c.name, "arguments": c.args, "status": "completed"})
	}
	r := map[string]any{"id": a.id, "object": "response", "created_at": created, "status": a.status, "model": "gpt-5-mini",
		"output": output, "error": nil, "incomplete_details": nil, "parallel_tool_calls": true, "store": false,
		"usage": map[string]any{"input_tokens": a.input, "input_tokens_details": map[string]any{"cached_tokens": a.cached},
			"output_tokens": a.output, "output_tokens_details": map[string]any{"reasoning_tokens": 0}, "total_tokens": a.input + a.output}}
	if a.incomplete != "" {
		r["incomplete_details"] = map[string]any{"reason": a.incomplete}
	}
	if a.errCode != "" {
		r["error"] = map[string]any{"code": a.errCode, "message": a.errMessage}
	}
	return r
}

func (a respAnswer) json() string { return mustJSON(a.response()) }

// stream writes the answer as the Responses API streams it: response.created, the text's
// deltas, then the terminal event carrying the whole response.
func (a respAnswer) stream(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	seq := 0
	event := func(typ string, fields map[string]any) {
		fields["type"] = typ
		fields["sequence_number"] = seq
		seq++
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, mustJSON(fields))
	}
	started := a.response()
	started["status"], started["output"], started["usage"] = "in_progress", []any{}, nil
	event("response.created", map[string]any{"response": started})
	for _, p := range pieces(a.text, 9) {
		event("response.output_text.delta", map[string]any{"item_id": "msg_" + a.id, "output_index": 0, "content_index": 0, "delta": p})
	}
	if a.streamEndsBeforeCompletion {
		return
	}
	terminal := map[string]string{"completed": "response.completed", "incomplete": "response.incomplete", "failed": "response.failed"}[a.status]
	event(terminal, map[string]any{"response": a.response()})
}

func respJSON(t *testing.T, req provider.Request) string {
	p, _, err := openai.ResponsesParams(req, openai.Options{})
	require.NoError(t, err)
	b, err := json.Marshal(p)
	require.NoError(t, err)
	return string(b)
}

// TestResponsesTurnLoop runs a conversation on a server speaking the Responses API: a
// reasoning item and parallel function calls with cached tokens, the outputs, an answer
// incomplete at max_output_tokens and the recovery's request, the final answer.
func TestResponsesTurnLoop(t *testing.T) {
	script := []respAnswer{
		{id: "resp_1", summary: "Two reads, at once.", encrypted: "gAAAAB-opaque", text: "Reading both files.",
			calls:  []call{{"call_a", "Read", `{"path": "a.go"}`}, {"call_b", "Read", `{"path":"b.go"}`}},
			status: "completed", input: 1200, cached: 1024, output: 40},
		{id: "resp_2", text: "The first file declares", status: "incomplete", incomplete: "max_output_tokens", input: 1400, cached: 1152, output: 64},
		{id: "resp_3", text: "Both files compile.", status: "completed", input: 1400, cached: 1152, output: 6},
	}
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			s := newResponsesServer(t, func(w http.ResponseWriter, _ *http.Request, n int) {
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

			_, err := l.sess.User("Do a.go and b.go compile?")
			require.NoError(t, err)
			res, err := l.sess.Prepare(ctx, l.p, l.in)
			require.NoError(t, err)
			rec, err := c.TurnResponses(ctx, l.sess, res.Request, opts)
			require.NoError(t, err)
			m := rec.Message
			assert.Equal(t, "resp_1", m.ID)
			assert.Equal(t, "message", m.Type)
			assert.Equal(t, "gpt-5-mini", m.Model)
			assert.Equal(t, "tool_use", m.StopReason)
			require.Len(t, m.Content, 4)
			th := m.Content[0].(*transcript.Thinking)
			assert.Equal(t, "Two reads, at once.", th.Thinking)
			assert.JSONEq(t, `"gAAAAB-opaque"`, string(th.Extra["encrypted_content"]), "the reasoning item is kept whole")
			assert.JSONEq(t, `"rs_resp_1"`, string(th.Extra["id"]))
			assert.Equal(t, "Reading both files.", m.Content[1].(*transcript.Text).Text)
			a, b := m.Content[2].(*transcript.ToolUse), m.Content[3].(*transcript.ToolUse)
			assert.Equal(t, "call_a", a.ID)
			assert.Equal(t, `{"path":"a.go"}`, string(a.Input))
			assert.Equal(t, map[string]json.RawMessage{"status": json.RawMessage(`"completed"`)}, a.Extra, "the item's id is not the block's")
			assert.Equal(t, "call_b", b.ID)
			assert.Equal(t, &transcript.Usage{InputTokens: 176, CacheReadInputTokens: 1024, OutputTokens: 40}, m.Usage)
			assert.Equal(t, stream, s.body(0)["stream"] == true)

			_, err = l.sess.ToolResults(transcript.TextResult(a.ID, "package a\n"), transcript.TextResult(b.ID, "package b\n"))
			require.NoError(t, err)
			res, err = l.sess.Prepare(ctx, l.p, l.in)
			require.NoError(t, err)
			assert.JSONEq(t, respJSON(t, res.Request), respJSON(t, l.resumed(t)), "a resumed session sends the same request")
			rec, err = c.TurnResponses(ctx, l.sess, res.Request, opts)
			require.NoError(t, err)
			require.True(t, rec.Message.Truncated(), rec.Message.StopReason)

			second := s.body(1)
			var types []string
			for _, it := range second["input"].([]any) {
				item := it.(map[string]any)
				typ, _ := item["type"].(string)
				if typ == "" {
					typ = "message:" + item["role"].(string)
				}
				types = append(types, typ)
				if typ == "function_call" && item["call_id"] == "call_a" {
					assert.Equal(t, `{"path":"a.go"}`, item["arguments"])
				}
			}
			assert.Equal(t, []string{"message:user", "message:assistant", "function_call", "function_call", "function_call_output", "function_call_output"}, types,
				"no reasoning item goes back")
			assert.NotContains(t, mustJSON(second), "gAAAAB-opaque")

			res, err = l.sess.Recover(ctx, l.p, l.in, provider.ErrOutputTruncated)
			require.NoError(t, err)
			assert.Equal(t, transcript.RungOutputCap, res.Report.Recovery.Rung)
			rec, err = c.TurnResponses(ctx, l.sess, res.Request, opts)
			require.NoError(t, err)
			assert.Equal(t, "end_turn", rec.Message.StopReason)
			third := s.body(2)
			assert.Greater(t, third["max_output_tokens"], second["max_output_tokens"])
			assert.Equal(t, second["input"], third["input"])
			assert.NotContains(t, mustJSON(third), "The first file declares")
		})
	}
}

// TestResponsesTurnErrors checks the Responses answers a turn cannot use.
func TestResponsesTurnErrors(t *testing.T) {
	tests := []struct {
		name     string
		stream   bool
		reply    func(w http.ResponseWriter)
		class    provider.ErrorClass
		contains string
	}{
		{
			name: "a failed response",
			reply: func(w http.ResponseWriter) {
				writeJSON(w, 200, respAnswer{id: "resp_f", status: "failed", errCode: "server_error", errMessage: "The model failed to generate a response."}.json())
			},
			class: provider.ClassRetryable, contains: "failed to generate",
		},
		{
			name:   "a failed response, streamed",
			stream: true,
			reply: respAnswer{id: "resp_f", status: "failed", errCode: "invalid_image_format",
				errMessage: "The image is not in a supported format."}.stream,
			class: provider.ClassMediaRejected, contains: "supported format",
		},
		{
			name: "arguments that are not JSON",
			reply: func(w http.ResponseWriter) {
				writeJSON(w, 200, respAnswer{id: "resp_b", text: "Reading.", status: "completed", calls: []call{{"call_a", "Read", `{"path":`}}}.json())
			},
			class: provider.ClassRetryable, contains: "output[1].arguments",
		},
		{
			name: "a response that has not finished",
			reply: func(w http.ResponseWriter) {
				writeJSON(w, 200, respAnswer{id: "resp_q", status: "queued"}.json())
			},
			class: provider.ClassFatal, contains: `status "queued"`,
		},
		{
			name: "an error object in a 200 answer",
			reply: func(w http.ResponseWriter) {
				writeJSON(w, 200, `{"error":{"message":"Rate limit reached.","type":"requests","param":null,"code":"rate_limit_exceeded"}}`)
			},
			class: provider.ClassRetryable, contains: "Rate limit",
		},
		{
			name:   "an error event in the stream",
			stream: true,
			reply: func(w http.ResponseWriter) {
				w.Header().Set("Content-Type", "text/event-stream")
				fmt.Fprintf(w, "event: error\ndata: %s\n\n", `{"type":"error","code":"context_length_exceeded","message":"Your input exceeds the context window of this model.","param":"input","sequence_number":1}`)
			},
			class: provider.ClassPromptTooLong, contains: "context window",
		},
		{
			name:   "a stream that ends before the response is done",
			stream: true,
			reply:  respAnswer{id: "resp_c", text: "Half an answer", status: "completed", streamEndsBeforeCompletion: true}.stream,
			class:  provider.ClassRetryable, contains: "response.completed",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newResponsesServer(t, func(w http.ResponseWriter, _ *http.Request, _ int) { tt.reply(w) })
			l := newLoop(t)
			_, err := l.sess.User("Read a.go.")
			require.NoError(t, err)
			res, err := l.sess.Prepare(t.Context(), l.p, l.in)
			require.NoError(t, err)
			before := len(l.sess.Records())
			_, err = openai.NewClient(s.sdkClient()).TurnResponses(t.Context(), l.sess, res.Request, openai.Options{Stream: tt.stream})
			require.Error(t, err)
			assert.Len(t, l.sess.Records(), before, "nothing is appended")
			assert.Equal(t, tt.class, provider.ClassOf(err), "%v", err)
			_, ok := errors.AsType[*openai.Error](err)
			assert.True(t, ok, "%T", err)
			assert.Contains(t, err.Error(), tt.contains)
		})
	}
}

// TestMessageFromResponse converts Responses answers beside the loop's.
func TestMessageFromResponse(t *testing.T) {
	tests := []struct {
		name  string
		body  string
		check func(t *testing.T, m *transcript.Message)
	}{
		{
			name: "a refusal",
			body: `{"id":"resp_1","object":"response","created_at":1,"status":"completed","model":"gpt-5","output":[{"type":"message","id":"msg_1","role":"assistant","status":"completed","content":[{"type":"refusal","refusal":"I can't help with that."}]}]}`,
			check: func(t *testing.T, m *transcript.Message) {
				assert.Equal(t, "refusal", m.StopReason)
				assert.Equal(t, []transcript.Block{&transcript.Text{Text: "I can't help with that."}}, m.Content)
				assert.Nil(t, m.Usage)
			},
		},
		{
			name: "incomplete for the content filter",
			body: `{"id":"resp_1","object":"response","created_at":1,"status":"incomplete","incomplete_details":{"reason":"content_filter"},"model":"gpt-5","output":[]}`,
			check: func(t *testing.T, m *transcript.Message) {
				assert.Equal(t, "refusal", m.StopReason)
				assert.False(t, m.Truncated())
			},
		},
		{
			name: "a hosted tool's call is kept as an unknown block; annotations are kept on the text",
			body: `{"id":"resp_1","object":"response","created_at":1,"status":"completed","model":"gpt-5","output":[{"type":"web_search_call","id":"ws_1","status":"completed","action":{"type":"search","query":"go 1.26"}},{"type":"message","id":"msg_1","role":"assistant","status":"completed","content":[{"type":"output_text","text":"Go 1.26 is out.","annotations":[{"type":"url_citation","url":"https://go.dev/doc/go1.26","title":"Go 1.26","start_index":0,"end_index":7}]}]}]}`,
			check: func(t *testing.T, m *transcript.Message) {
				require.Len(t, m.Content, 2)
				u := m.Content[0].(*transcript.UnknownBlock)
				assert.Equal(t, transcript.BlockKind("web_search_call"), u.Type)
				assert.Contains(t, string(u.JSON), `"query":"go 1.26"`)
				text := m.Content[1].(*transcript.Text)
				assert.Contains(t, string(text.Extra["annotations"]), "go.dev/doc/go1.26")
				assert.Equal(t, "end_turn", m.StopReason)
			},
		},
		{
			name: "reasoning without a summary keeps its text",
			body: `{"id":"resp_1","object":"response","created_at":1,"status":"completed","model":"gpt-oss-20b","output":[{"type":"reasoning","id":"rs_1","summary":[],"content":[{"type":"reasoning_text","text":"Compute 6*7."}]},{"type":"message","id":"m","role":"assistant","status":"completed","content":[{"type":"output_text","text":"42","annotations":[]}]}]}`,
			check: func(t *testing.T, m *transcript.Message) {
				assert.Equal(t, "Compute 6*7.", m.Content[0].(*transcript.Thinking).Thinking)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r responses.Response
			require.NoError(t, json.Unmarshal([]byte(tt.body), &r))
			m, err := openai.MessageFromResponse(&r)
			require.NoError(t, err)
			assert.Equal(t, "resp_1", m.ID)
			assert.Equal(t, transcript.RoleAssistant, m.Role)
			tt.check(t, m)
			_, err = json.Marshal(m)
			assert.NoError(t, err, "the record can be written")
		})
	}
	_, err := openai.MessageFromResponse(nil)
	assert.Equal(t, provider.ClassFatal, provider.ClassOf(err))
}
