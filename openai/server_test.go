package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/agentctx/agentctx/openai"
	"github.com/agentctx/agentctx/provider"
	"github.com/agentctx/agentctx/summarize"
	"github.com/agentctx/agentctx/transcript"
	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// compatServer is an httptest server speaking Chat Completions under /v1, as vLLM, Ollama
// and llama.cpp serve it (or the Responses API, made with newResponsesServer): it checks
// every request (path, key, the body against OpenAI's rules) and answers with reply.
type compatServer struct {
	t        *testing.T
	srv      *httptest.Server
	reply    func(w http.ResponseWriter, r *http.Request, n int)
	path     string
	validate func(body []byte) error

	mu     sync.Mutex
	bodies []map[string]any
}

func newCompatServer(t *testing.T, reply func(w http.ResponseWriter, r *http.Request, n int)) *compatServer {
	s := &compatServer{t: t, reply: reply, path: "/v1/chat/completions", validate: validateChat}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

// newResponsesServer is a compatServer speaking the Responses API.
func newResponsesServer(t *testing.T, reply func(w http.ResponseWriter, r *http.Request, n int)) *compatServer {
	s := &compatServer{t: t, reply: reply, path: "/v1/responses", validate: validateResponses}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *compatServer) serve(w http.ResponseWriter, r *http.Request) {
	t := s.t
	body, err := io.ReadAll(r.Body)
	if !assert.NoError(t, err) {
		return
	}
	assert.Equal(t, http.MethodPost, r.Method)
	assert.Equal(t, s.path, r.URL.Path)
	assert.Equal(t, "Bearer local-key", r.Header.Get("Authorization"))
	assert.NoError(t, s.validate(body), "the body breaks OpenAI's rules")
	var m map[string]any
	assert.NoError(t, json.Unmarshal(body, &m))
	s.mu.Lock()
	n := len(s.bodies)
	s.bodies = append(s.bodies, m)
	s.mu.Unlock()
	s.reply(w, r, n)
}

func (s *compatServer) summarizer(stream bool) openai.Summarizer {
	return openai.Summarizer{Client: s.sdkClient(), Options: openai.Options{Model: "qwen3:8b"}, Stream: stream}
}

// sdkClient is an SDK client on the server, without retries.
func (s *compatServer) sdkClient() *sdk.Client {
	c := sdk.NewClient(option.WithBaseURL(s.srv.URL+"/v1"), option.WithAPIKey("local-key"), option.WithMaxRetries(0))
	return &c
}

// body returns the n-th request body the server received.
func (s *compatServer) body(n int) map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	require.Greater(s.t, len(s.bodies), n, "request %d was not sent", n)
	return s.bodies[n]
}

// requests returns how many requests the server received.
func (s *compatServer) requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.bodies)
}

func writeJSON(w http.ResponseWriter, status int, body string, headers ...string) {
	for i := 0; i+1 < len(headers); i += 2 {
		w.Header().Set(headers[i], headers[i+1])
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	io.WriteString(w, body)
}

const completion = `{"id":"chatcmpl-1","object":"chat.completion","created":1764500000,"model":"qwen3:8b",` +
	`"choices":[{"index":0,"message":{"role":"assistant","content":"<summary>Parser written; tests pass.</summary>"},"finish_reason":"stop","logprobs":null}],` +
	`"usage":{"prompt_tokens":1200,"completion_tokens":15,"total_tokens":1215,"prompt_tokens_details":{"cached_tokens":1024}}}`

// summaryRequest is a summary request as the pipeline makes one.
func summaryRequest() summarize.Request {
	req := conversation()
	req.ToolChoice = &provider.ToolChoice{Type: "none"}
	last := &req.Messages[len(req.Messages)-1]
	last.Content = append(last.Content, &transcript.Text{Text: "Summarize the conversation."})
	return summarize.Request{Request: req, MaxOutputTokens: req.MaxTokens}
}

func TestSummarizer(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			s := newCompatServer(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
				if !stream {
					writeJSON(w, 200, completion)
					return
				}
				w.Header().Set("Content-Type", "text/event-stream")
				for _, chunk := range []string{
					`{"id":"chatcmpl-2","object":"chat.completion.chunk","created":1764500000,"model":"qwen3:8b","choices":[{"index":0,"delta":{"role":"assistant","content":"<summary>Parser written;"},"finish_reason":null}]}`,
					`{"id":"chatcmpl-2","object":"chat.completion.chunk","created":1764500000,"model":"qwen3:8b","choices":[{"index":0,"delta":{"content":" tests pass.</summary>"},"finish_reason":"stop"}]}`,
					`{"id":"chatcmpl-2","object":"chat.completion.chunk","created":1764500000,"model":"qwen3:8b","choices":[],"usage":{"prompt_tokens":1200,"completion_tokens":15,"total_tokens":1215,"prompt_tokens_details":{"cached_tokens":1024}}}`,
				} {
					fmt.Fprintf(w, "data: %s\n\n", chunk)
				}
				io.WriteString(w, "data: [DONE]\n\n")
			})
			out, err := s.summarizer(stream).Summarize(t.Context(), summaryRequest())
			require.NoError(t, err)
			assert.Equal(t, "<summary>Parser written; tests pass.</summary>", out.Text)
			assert.Equal(t, "qwen3:8b", out.By)
			assert.Equal(t, &transcript.Usage{InputTokens: 176, CacheReadInputTokens: 1024, OutputTokens: 15}, out.Usage)
			require.Len(t, s.bodies, 1)
			assert.Equal(t, "qwen3:8b", s.bodies[0]["model"])
			assert.Equal(t, "none", s.bodies[0]["tool_choice"])
			assert.Equal(t, stream, s.bodies[0]["stream"] == true)
		})
	}
}

// The servers' real error answers, and what each means for recovery.
func TestSummarizerErrors(t *testing.T) {
	tests := []struct {
		name    string
		timeout time.Duration
		reply   func(w http.ResponseWriter, r *http.Request, n int)
		class   provider.ErrorClass
		ptl     *provider.PromptTooLongError
		check   func(t *testing.T, e *openai.Error)
	}{
		{
			name: "OpenAI context_length_exceeded",
			reply: func(w http.ResponseWriter, _ *http.Request, _ int) {
				writeJSON(w, 400, `{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130415 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`)
			},
			class: provider.ClassPromptTooLong, ptl: &provider.PromptTooLongError{Tokens: 130415, Limit: 128000, Window: 128000},
		},
		{
			name: "vLLM, with the completion counted in",
			reply: func(w http.ResponseWriter, _ *http.Request, _ int) {
				writeJSON(w, 400, `{"object":"error","message":"This model's maximum context length is 32768 tokens. However, you requested 40960 tokens (32768 in the messages, 8192 in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":400}`)
			},
			class: provider.ClassPromptTooLong, ptl: &provider.PromptTooLongError{Tokens: 32768, Limit: 24576, Window: 32768},
		},
		{
			name: "llama.cpp exceed_context_size_error",
			reply: func(w http.ResponseWriter, _ *http.Request, _ int) {
				writeJSON(w, 400, `{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":5120,"n_ctx":4096}}`)
			},
			class: provider.ClassPromptTooLong, ptl: &provider.PromptTooLongError{Tokens: 5120, Limit: 4096, Window: 4096},
		},
		{
			name: "413",
			reply: func(w http.ResponseWriter, _ *http.Request, _ int) {
				writeJSON(w, 413, `{"error":{"message":"Request too large","type":"invalid_request_error"}}`)
			},
			class: provider.ClassRequestTooLarge,
		},
		{
			name: "an invalid image",
			reply: func(w http.ResponseWriter, _ *http.Request, _ int) {
				writeJSON(w, 400, `{"error":{"message":"You uploaded an unsupported image. Please make sure your image is below 20 MB in size and is of one the following formats: ['png', 'jpeg', 'gif', 'webp'].","type":"invalid_request_error","param":null,"code":"invalid_image_format"}}`)
			},
			class: provider.ClassMediaRejected,
		},
		{
			name: "429 with retry-after",
			reply: func(w http.ResponseWriter, _ *http.Request, _ int) {
				writeJSON(w, 429, `{"error":{"message":"Rate limit reached for gpt-5 on tokens per min (TPM): Limit 30000, Used 30000, Requested 1200.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}`, "Retry-After", "3")
			},
			class: provider.ClassRetryable,
			check: func(t *testing.T, e *openai.Error) { assert.Equal(t, 3*time.Second, e.RetryAfter) },
		},
		{
			name: "429 out of quota",
			reply: func(w http.ResponseWriter, _ *http.Request, _ int) {
				writeJSON(w, 429, `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`)
			},
			class: provider.ClassFatal,
		},
		{
			name: "503 overloaded",
			reply: func(w http.ResponseWriter, _ *http.Request, _ int) {
				writeJSON(w, 503, `{"error":{"message":"The server is overloaded or not ready yet.","type":"server_error"}}`)
			},
			class: provider.ClassRetryable,
		},
		{
			name: "malformed JSON",
			reply: func(w http.ResponseWriter, _ *http.Request, _ int) {
				writeJSON(w, 200, `{"id":"chatcmpl-1","choices":[{"mess`)
			},
			class: provider.ClassFatal,
		},
		{
			name: "an error object in a 200 answer",
			reply: func(w http.ResponseWriter, _ *http.Request, _ int) {
				writeJSON(w, 200, `{"error":{"message":"The server is overloaded or not ready yet.","type":"server_error","param":null,"code":null}}`)
			},
			class: provider.ClassRetryable,
		},
		{
			name: "no choices",
			reply: func(w http.ResponseWriter, _ *http.Request, _ int) {
				writeJSON(w, 200, `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"qwen3:8b","choices":[]}`)
			},
			class: provider.ClassFatal,
		},
		{
			name: "a hung connection ends with the caller's deadline", timeout: 200 * time.Millisecond,
			reply: func(_ http.ResponseWriter, r *http.Request, _ int) { <-r.Context().Done() },
			class: provider.ClassFatal,
			check: func(t *testing.T, e *openai.Error) { assert.ErrorIs(t, e, context.DeadlineExceeded) },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newCompatServer(t, tt.reply)
			ctx := t.Context()
			if tt.timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tt.timeout)
				defer cancel()
			}
			_, err := s.summarizer(false).Summarize(ctx, summaryRequest())
			require.Error(t, err)
			assert.Equal(t, tt.class, provider.ClassOf(err), "%v", err)
			e, ok := errors.AsType[*openai.Error](err)
			require.True(t, ok, "%T", err)
			if tt.ptl != nil {
				ptl, ok := errors.AsType[*provider.PromptTooLongError](err)
				require.True(t, ok)
				assert.Equal(t, tt.ptl.Tokens, ptl.Tokens)
				assert.Equal(t, tt.ptl.Limit, ptl.Limit)
				assert.Equal(t, tt.ptl.Window, ptl.Window)
			}
			if tt.check != nil {
				tt.check(t, e)
			}
		})
	}
}

// TestLive sends the summary request to the real API (or the server of OPENAI_BASE_URL).
func TestLive(t *testing.T) {
	if os.Getenv("OPENAI_API_KEY") == "" {
		t.Skip("OPENAI_API_KEY not set; the test against the real OpenAI API is skipped")
	}
	c := sdk.NewClient()
	model := os.Getenv("OPENAI_MODEL")
	if model == "" {
		model = "gpt-5-mini"
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	req := summaryRequest()
	req.Request.Messages = req.Request.Messages[:1]
	req.Request.Messages[0].Content = []transcript.Block{&transcript.Text{Text: "Reply with <summary>ready</summary> and nothing else."}}
	out, err := openai.Summarizer{Client: &c, Options: openai.Options{Model: model}}.Summarize(ctx, req)
	require.NoError(t, err)
	assert.Contains(t, out.Text, "ready")
	assert.Positive(t, out.Usage.InputTokens+out.Usage.CacheReadInputTokens)
}
