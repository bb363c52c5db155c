package anthropic_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentctx/agentctx/anthropic"
	"github.com/agentctx/agentctx/internal/providertest"
	"github.com/agentctx/agentctx/provider"
	"github.com/agentctx/agentctx/session"
	"github.com/agentctx/agentctx/transcript"
	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeAPI is an httptest server that speaks the Messages API: it checks every request it
// gets (path, headers, the body against the request the test sent and against the contract)
// and answers with reply.
type fakeAPI struct {
	t     *testing.T
	srv   *httptest.Server
	reply func(w http.ResponseWriter, r *http.Request, n int)

	mu     sync.Mutex
	bodies []map[string]any
	betas  [][]string
}

func newFakeAPI(t *testing.T, reply func(w http.ResponseWriter, r *http.Request, n int)) *fakeAPI {
	f := &fakeAPI{t: t, reply: reply}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeAPI) serve(w http.ResponseWriter, r *http.Request) {
	t := f.t
	body, err := io.ReadAll(r.Body)
	if !assert.NoError(t, err) {
		return
	}
	assert.Equal(t, http.MethodPost, r.Method)
	assert.Equal(t, "/v1/messages", r.URL.Path)
	assert.Equal(t, "application/json", r.Header.Get("Content-Type"))
	assert.Equal(t, "2026-10-21", r.Header.Get("Anthropic-Version"), "the API version the v2 SDK sends")
	assert.Equal(t, "Bearer test-key", r.Header.Get("Authorization"))
	var m map[string]any
	if !assert.NoError(t, json.Unmarshal(body, &m)) {
		return
	}
	// Whatever the transport adds (stream), the rest is a request the contract accepts.
	delete(m, "stream")
	plain, _ := json.Marshal(m)
	req, err := providertest.DecodeRequest(plain)
	if assert.NoError(t, err) {
		assert.NoError(t, provider.Validate(req, provider.ValidateOptions{}), "the request the server got breaks the contract")
	}
	m["stream"] = strings.Contains(string(body), `"stream":true`)
	f.mu.Lock()
	n := len(f.bodies)
	f.bodies = append(f.bodies, m)
	f.betas = append(f.betas, r.Header.Values("Anthropic-Beta"))
	f.mu.Unlock()
	f.reply(w, r, n)
}

// client returns a Client on the fake server, without retries unless opts add them.
func (f *fakeAPI) client(opts ...option.RequestOption) *anthropic.Client {
	c := sdk.NewClient(append([]option.RequestOption{option.WithoutEnvironmentDefaults(),
		option.WithAPIKey("test-key"), option.WithBaseURL(f.srv.URL), option.WithMaxRetries(0)}, opts...)...)
	return anthropic.NewClient(&c)
}

func (f *fakeAPI) requests() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.bodies)
}

// turnRequest is a small request with every kind of block a turn sends back: text, a
// thinking block, a tool call, its result with an image, a cache marker, and a cache
// edit with the beta header it needs.
func turnRequest(maxTokens int) provider.Request {
	img := &transcript.Image{Source: transcript.MediaSource{Type: "base64", MediaType: "image/png", Data: "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="}}
	return provider.Request{
		Model:     "claude-sonnet-4-5",
		MaxTokens: maxTokens,
		System:    []*transcript.Text{{Text: "You are a careful coding agent."}},
		Messages: []provider.Message{
			{Role: transcript.RoleUser, Content: []transcript.Block{&transcript.Text{Text: "Take a screenshot."}}},
			{Role: transcript.RoleAssistant, Content: []transcript.Block{
				&transcript.Thinking{Thinking: "The screenshot tool does it.", Signature: "EqQBCkgIARABGAIiQL7sZ0RjdXRzdW0tc2lnbmF0dXJlLWZvci10ZXN0"},
				&transcript.ToolUse{ID: "toolu_01", Name: "Screenshot", Input: json.RawMessage(`{}`)},
			}},
			{Role: transcript.RoleUser, Content: []transcript.Block{
				&transcript.ToolResult{ToolUseID: "toolu_01", CacheReference: "toolu_01", Content: []transcript.Block{&transcript.Text{Text: "taken"}, img}},
				&transcript.CacheEdits{Edits: []transcript.CacheEdit{{Type: "delete", CacheReference: "toolu_00"}}},
				&transcript.Text{Text: "What does it show?", CacheControl: &transcript.CacheControl{Type: "ephemeral", TTL: "1h"}},
			}},
		},
		Tools:    []provider.Tool{{Name: "Screenshot", Definition: json.RawMessage(`{"name":"Screenshot","description":"Capture the screen.","input_schema":{"type":"object"}}`)}},
		Thinking: &provider.Thinking{Type: "enabled", BudgetTokens: 1024},
		Betas:    []string{"cache-editing-test"},
	}
}

// answer is a real non-streaming answer body.
const answer = `{"id":"msg_01XFDUDYJgAACzvnptvVoYEL","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929",` +
	`"content":[{"type":"text","text":"A terminal with a passing build."}],"stop_reason":"end_turn","stop_sequence":null,` +
	`"usage":{"input_tokens":12,"cache_creation_input_tokens":40,"cache_read_input_tokens":2048,` +
	`"cache_creation":{"ephemeral_5m_input_tokens":0,"ephemeral_1h_input_tokens":40},"output_tokens":9,"service_tier":"standard"}}`

func writeJSON(w http.ResponseWriter, status int, body string, headers ...string) {
	for i := 0; i+1 < len(headers); i += 2 {
		w.Header().Set(headers[i], headers[i+1])
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Request-Id", "req_011CTest")
	w.WriteHeader(status)
	io.WriteString(w, body)
}

// sse writes a streamed answer, one event per pair of (name, data).
func sse(w http.ResponseWriter, events ...string) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	for i := 0; i+1 < len(events); i += 2 {
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", events[i], events[i+1])
		w.(http.Flusher).Flush()
	}
}

// streamed is a real streamed answer: thinking, text and a tool call in deltas.
var streamed = []string{
	"message_start", `{"type":"message_start","message":{"id":"msg_stream01","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":25,"cache_creation_input_tokens":0,"cache_read_input_tokens":1500,"output_tokens":1}}}`,
	"ping", `{"type":"ping"}`,
	"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`,
	"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Read the file "}}`,
	"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"first."}}`,
	"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQBCgIYAhIM"}}`,
	"content_block_stop", `{"type":"content_block_stop","index":0}`,
	"content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}`,
	"content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Let me read "}}`,
	"content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"it."}}`,
	"content_block_stop", `{"type":"content_block_stop","index":1}`,
	"content_block_start", `{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_02","name":"Read","input":{}}}`,
	"content_block_delta", `{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"file_path\": "}}`,
	"content_block_delta", `{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"\"/src/main.go\"}"}}`,
	"content_block_stop", `{"type":"content_block_stop","index":2}`,
	"message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":42}}`,
	"message_stop", `{"type":"message_stop"}`,
}

func TestSend(t *testing.T) {
	tests := []struct {
		name      string
		maxTokens int
		opts      anthropic.Options
		reply     func(w http.ResponseWriter, r *http.Request, n int)
		wantBody  func(t *testing.T, body map[string]any)
		check     func(t *testing.T, m *transcript.Message)
	}{
		{
			name: "non-streaming answer", maxTokens: 4096,
			reply: func(w http.ResponseWriter, _ *http.Request, _ int) { writeJSON(w, 200, answer) },
			wantBody: func(t *testing.T, body map[string]any) {
				assert.Equal(t, false, body["stream"])
			},
			check: func(t *testing.T, m *transcript.Message) {
				assert.Equal(t, "msg_01XFDUDYJgAACzvnptvVoYEL", m.ID)
				assert.Equal(t, "end_turn", m.StopReason)
				require.Len(t, m.Content, 1)
				assert.Equal(t, "A terminal with a passing build.", m.Content[0].(*transcript.Text).Text)
				require.NotNil(t, m.Usage)
				assert.Equal(t, 12, m.Usage.InputTokens)
				assert.Equal(t, 40, m.Usage.CacheCreationInputTokens)
				assert.Equal(t, 2048, m.Usage.CacheReadInputTokens)
				assert.Equal(t, 9, m.Usage.OutputTokens)
				assert.JSONEq(t, `{"ephemeral_5m_input_tokens":0,"ephemeral_1h_input_tokens":40}`, string(m.Usage.Extra["cache_creation"]), "fields the library does not model are kept")
			},
		},
		{
			name: "the model's full max_tokens streams instead of tripping the SDK's guard", maxTokens: 64000,
			reply: func(w http.ResponseWriter, _ *http.Request, _ int) { sse(w, streamed...) },
			wantBody: func(t *testing.T, body map[string]any) {
				assert.Equal(t, true, body["stream"])
				assert.EqualValues(t, 64000, body["max_tokens"])
			},
			check: checkStreamed,
		},
		{
			name: "asked to stream", maxTokens: 4096, opts: anthropic.Options{Stream: true},
			reply:    func(w http.ResponseWriter, _ *http.Request, _ int) { sse(w, streamed...) },
			wantBody: func(t *testing.T, body map[string]any) { assert.Equal(t, true, body["stream"]) },
			check:    checkStreamed,
		},
		{
			name: "per-turn options", maxTokens: 4096,
			opts: anthropic.Options{StopSequences: []string{"\n\nHuman:"}, UserID: "user-7", ServiceTier: sdk.MessageNewParamsServiceTierStandardOnly,
				Temperature: sdk.Float(0.2), TopP: sdk.Float(0.9)},
			reply: func(w http.ResponseWriter, _ *http.Request, _ int) { writeJSON(w, 200, answer) },
			wantBody: func(t *testing.T, body map[string]any) {
				assert.Equal(t, []any{"\n\nHuman:"}, body["stop_sequences"])
				assert.Equal(t, map[string]any{"user_id": "user-7"}, body["metadata"])
				assert.Equal(t, "standard_only", body["service_tier"])
				assert.Equal(t, 0.2, body["temperature"])
				assert.Equal(t, 0.9, body["top_p"])
			},
			check: func(t *testing.T, m *transcript.Message) { assert.Equal(t, "end_turn", m.StopReason) },
		},
		{
			name: "an empty content list is the model's turn", maxTokens: 4096,
			reply: func(w http.ResponseWriter, _ *http.Request, _ int) {
				writeJSON(w, 200, `{"id":"msg_empty","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":3000,"output_tokens":1}}`)
			},
			check: func(t *testing.T, m *transcript.Message) {
				assert.Empty(t, m.Content)
				assert.Equal(t, 3001, m.Usage.Total())
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeAPI(t, tt.reply)
			req := turnRequest(tt.maxTokens)
			events := 0
			opts := tt.opts
			if opts.Stream {
				opts.OnEvent = func(sdk.MessageStreamEventUnion) { events++ }
			}
			m, err := f.client().Send(t.Context(), req, opts)
			require.NoError(t, err)
			tt.check(t, m)
			require.Equal(t, 1, f.requests())
			want, err := req.MarshalJSON()
			require.NoError(t, err)
			var wantBody map[string]any
			require.NoError(t, json.Unmarshal(want, &wantBody))
			got := f.bodies[0]
			for k, v := range wantBody {
				assert.Equal(t, v, got[k], "body field %s is the request's", k)
			}
			if tt.wantBody != nil {
				tt.wantBody(t, got)
			}
			assert.Equal(t, []string{"cache-editing-test"}, f.betas[0], "the cache-editing beta travels as the anthropic-beta header")
			if opts.OnEvent != nil {
				assert.Equal(t, (len(streamed)/2)-1, events, "every event but the ping reaches OnEvent")
			}
		})
	}
}

func checkStreamed(t *testing.T, m *transcript.Message) {
	assert.Equal(t, "msg_stream01", m.ID)
	assert.Equal(t, "tool_use", m.StopReason)
	require.Len(t, m.Content, 3)
	th := m.Content[0].(*transcript.Thinking)
	assert.Equal(t, "Read the file first.", th.Thinking)
	assert.Equal(t, "EqQBCgIYAhIM", th.Signature)
	assert.Equal(t, "Let me read it.", m.Content[1].(*transcript.Text).Text)
	tu := m.Content[2].(*transcript.ToolUse)
	assert.Equal(t, "toolu_02", tu.ID)
	assert.JSONEq(t, `{"file_path":"/src/main.go"}`, string(tu.Input))
	assert.Equal(t, 1500, m.Usage.CacheReadInputTokens)
	assert.Equal(t, 42, m.Usage.OutputTokens)
}

// The providers' real error answers, and what each means for recovery.
func TestSendErrors(t *testing.T) {
	tests := []struct {
		name    string
		opts    anthropic.Options
		timeout time.Duration
		reply   func(w http.ResponseWriter, r *http.Request, n int)
		class   provider.ErrorClass
		check   func(t *testing.T, e *anthropic.Error)
	}{
		{
			name: "prompt too long, with the figures",
			reply: func(w http.ResponseWriter, _ *http.Request, _ int) {
				writeJSON(w, 400, `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 208310 tokens > 200000 maximum"},"request_id":"req_011CTest"}`)
			},
			class: provider.ClassPromptTooLong,
			check: func(t *testing.T, e *anthropic.Error) {
				ptl, ok := errors.AsType[*provider.PromptTooLongError](e)
				require.True(t, ok)
				assert.Equal(t, 208310, ptl.Tokens)
				assert.Equal(t, 200000, ptl.Limit)
				assert.ErrorIs(t, e, provider.ErrPromptTooLong)
				assert.Equal(t, "req_011CTest", e.RequestID)
			},
		},
		{
			name: "input and max_tokens over the window",
			reply: func(w http.ResponseWriter, _ *http.Request, _ int) {
				writeJSON(w, 400, `{"type":"error","error":{"type":"invalid_request_error","message":"input length and `+"`max_tokens`"+` exceed context limit: 178959 + 64000 > 200000, decrease input length or `+"`max_tokens`"+` and try again"}}`)
			},
			class: provider.ClassPromptTooLong,
			check: func(t *testing.T, e *anthropic.Error) {
				assert.Equal(t, &provider.PromptTooLongError{Tokens: 178959, Limit: 136000, Window: 200000, Reason: e.PromptTooLong.Reason}, e.PromptTooLong)
			},
		},
		{
			name: "413 request too large",
			reply: func(w http.ResponseWriter, _ *http.Request, _ int) {
				writeJSON(w, 413, `{"type":"error","error":{"type":"request_too_large","message":"Request exceeds the maximum allowed number of bytes."}}`)
			},
			class: provider.ClassRequestTooLarge,
			check: func(t *testing.T, e *anthropic.Error) { assert.ErrorIs(t, e, provider.ErrRequestTooLarge) },
		},
		{
			name: "an image over 5 MB, inside a tool result",
			reply: func(w http.ResponseWriter, _ *http.Request, _ int) {
				writeJSON(w, 400, `{"type":"error","error":{"type":"invalid_request_error","message":"messages.2.content.0.tool_result.content.1.image.source.base64: image exceeds 5 MB maximum: 5649924 bytes > 5242880 bytes"}}`)
			},
			class: provider.ClassMediaRejected,
			check: func(t *testing.T, e *anthropic.Error) {
				assert.Equal(t, []string{"messages.2.content.0.content.1"}, e.Paths)
			},
		},
		{
			name: "image dimensions, with the paths in the details",
			reply: func(w http.ResponseWriter, _ *http.Request, _ int) {
				writeJSON(w, 400, `{"type":"error","error":{"type":"invalid_request_error","message":"One or more images exceed the maximum side length.","details":{"error_code":"image_dimensions_too_large","max_side_length_pixels":8000,"paths":["messages.2.content.0.content.1"]}}}`)
			},
			class: provider.ClassMediaRejected,
			check: func(t *testing.T, e *anthropic.Error) {
				assert.Equal(t, "image_dimensions_too_large", e.Code)
				assert.Equal(t, []string{"messages.2.content.0.content.1"}, e.Paths)
			},
		},
		{
			name: "another invalid request",
			reply: func(w http.ResponseWriter, _ *http.Request, _ int) {
				writeJSON(w, 400, `{"type":"error","error":{"type":"invalid_request_error","message":"messages.1.content.1: `+"`tool_use`"+` ids must be unique"}}`)
			},
			class: provider.ClassInvalidRequest,
		},
		{
			name: "429 with retry-after",
			reply: func(w http.ResponseWriter, _ *http.Request, _ int) {
				writeJSON(w, 429, `{"type":"error","error":{"type":"rate_limit_error","message":"This request would exceed the rate limit for your organization of 50,000 input tokens per minute."}}`, "Retry-After", "17")
			},
			class: provider.ClassRetryable,
			check: func(t *testing.T, e *anthropic.Error) {
				assert.Equal(t, 17*time.Second, e.RetryAfter)
				assert.Equal(t, 429, e.StatusCode)
			},
		},
		{
			name: "529 overloaded",
			reply: func(w http.ResponseWriter, _ *http.Request, _ int) {
				writeJSON(w, 529, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
			},
			class: provider.ClassRetryable,
			check: func(t *testing.T, e *anthropic.Error) { assert.Equal(t, "overloaded_error", e.Type) },
		},
		{
			name: "overloaded in the middle of a stream", opts: anthropic.Options{Stream: true},
			reply: func(w http.ResponseWriter, _ *http.Request, _ int) {
				sse(w, streamed[0], streamed[1], "error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
			},
			class: provider.ClassRetryable,
			check: func(t *testing.T, e *anthropic.Error) { assert.Equal(t, "overloaded_error", e.Type) },
		},
		{
			name: "a stream cut off before its end", opts: anthropic.Options{Stream: true},
			reply: func(w http.ResponseWriter, _ *http.Request, _ int) { sse(w, streamed[:8]...) },
			class: provider.ClassRetryable,
		},
		{
			name: "malformed JSON",
			reply: func(w http.ResponseWriter, _ *http.Request, _ int) {
				writeJSON(w, 200, `{"id":"msg_01","type":"message","content":[{"type":"te`)
			},
			class: provider.ClassFatal,
		},
		{
			name: "401",
			reply: func(w http.ResponseWriter, _ *http.Request, _ int) {
				writeJSON(w, 401, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`)
			},
			class: provider.ClassFatal,
		},
		{
			name: "a hung connection ends with the caller's deadline", timeout: 200 * time.Millisecond,
			reply: func(_ http.ResponseWriter, r *http.Request, _ int) { <-r.Context().Done() },
			class: provider.ClassFatal,
			check: func(t *testing.T, e *anthropic.Error) { assert.ErrorIs(t, e, context.DeadlineExceeded) },
		},
		{
			name:  "a hung connection past the SDK's attempt timeout is retryable",
			opts:  anthropic.Options{RequestOptions: []option.RequestOption{option.WithRequestTimeout(200 * time.Millisecond)}},
			reply: func(_ http.ResponseWriter, r *http.Request, _ int) { <-r.Context().Done() },
			class: provider.ClassRetryable,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeAPI(t, tt.reply)
			ctx := t.Context()
			if tt.timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tt.timeout)
				defer cancel()
			}
			start := time.Now()
			m, err := f.client().Send(ctx, turnRequest(4096), tt.opts)
			require.Error(t, err)
			assert.Nil(t, m)
			assert.Less(t, time.Since(start), 5*time.Second)
			assert.Equal(t, tt.class, provider.ClassOf(err), "%v", err)
			e, ok := errors.AsType[*anthropic.Error](err)
			require.True(t, ok, "%T", err)
			if tt.check != nil {
				tt.check(t, e)
			}
		})
	}
}

// Retries are the SDK's: the client's retry policy resends an overloaded turn after the
// delay the provider asked for.
func TestSendRetriesAreTheSDKs(t *testing.T) {
	f := newFakeAPI(t, func(w http.ResponseWriter, _ *http.Request, n int) {
		if n == 0 {
			writeJSON(w, 529, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, "Retry-After-Ms", "10")
			return
		}
		writeJSON(w, 200, answer)
	})
	m, err := f.client(option.WithMaxRetries(1)).Send(t.Context(), turnRequest(4096), anthropic.Options{})
	require.NoError(t, err)
	assert.Equal(t, "end_turn", m.StopReason)
	assert.Equal(t, 2, f.requests())
}

func TestTurnAppendsTheAnswer(t *testing.T) {
	f := newFakeAPI(t, func(w http.ResponseWriter, _ *http.Request, _ int) { writeJSON(w, 200, answer) })
	sess := session.New(session.Options{})
	u, err := sess.User("What does the screenshot show?")
	require.NoError(t, err)
	rec, err := f.client().Turn(t.Context(), sess, turnRequest(4096), anthropic.Options{})
	require.NoError(t, err)
	assert.Equal(t, transcript.TypeAssistant, rec.Type)
	assert.Equal(t, u.UUID, rec.ParentUUID)
	assert.Equal(t, rec.UUID, sess.Leaf())
	assert.Equal(t, 2048, rec.Message.Usage.CacheReadInputTokens)

	f2 := newFakeAPI(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
		writeJSON(w, 529, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
	})
	_, err = f2.client().Turn(t.Context(), sess, turnRequest(4096), anthropic.Options{})
	require.Error(t, err)
	assert.Len(t, sess.Records(), 2, "a failed turn appends nothing")
}
