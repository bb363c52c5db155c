package openai_test

import (
	"encoding/json"
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
	"github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pixel is the base64 PNG the conversation's user message carries.
const pixel = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="

// TestRecoverProviderErrors sends a turn's Chat Completions body to a compatible server that
// answers with the real error bodies of OpenAI, vLLM and llama.cpp, classifies the SDK's
// error with Classify, and checks the rung Pipeline.Recover climbs and the body it sends next.
func TestRecoverProviderErrors(t *testing.T) {
	tests := []struct {
		name    string
		status  int
		body    string
		rung    string
		outcome agentctx.RecoveryOutcome
		check   func(t *testing.T, res agentctx.Result, next string)
	}{
		{
			name: "OpenAI context_length_exceeded", status: 400,
			body: `{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130415 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`,
			rung: transcript.RungPromptTooLong, outcome: agentctx.RecoveryRecovered,
			check: func(t *testing.T, res agentctx.Result, _ string) {
				assert.Equal(t, 130415, res.Append[0].Recovery.Tokens)
				assert.Equal(t, agentctx.CompactCompacted, res.Report.Compaction.Outcome, res.Report.Compaction.Reason)
			},
		},
		{
			name: "vLLM, with the completion counted in", status: 400,
			body: `{"object":"error","message":"This model's maximum context length is 32768 tokens. However, you requested 40960 tokens (32768 in the messages, 8192 in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":400}`,
			rung: transcript.RungPromptTooLong, outcome: agentctx.RecoveryRecovered,
			check: func(t *testing.T, res agentctx.Result, _ string) {
				assert.Equal(t, 24576, res.Append[0].Recovery.Limit)
			},
		},
		{
			name: "llama.cpp exceed_context_size_error", status: 400,
			body: `{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":5120,"n_ctx":4096}}`,
			rung: transcript.RungPromptTooLong, outcome: agentctx.RecoveryRecovered,
		},
		{
			name: "413", status: 413,
			body: `{"error":{"message":"Request too large","type":"invalid_request_error"}}`,
			rung: transcript.RungRequestTooLarge, outcome: agentctx.RecoveryRecovered,
		},
		{
			name: "an unsupported image: no path, the latest message's media go", status: 400,
			body: `{"error":{"message":"You uploaded an unsupported image. Please make sure your image is below 20 MB in size and is of one the following formats: ['png', 'jpeg', 'gif', 'webp'].","type":"invalid_request_error","param":null,"code":"invalid_image_format"}}`,
			rung: transcript.RungMediaRejected, outcome: agentctx.RecoveryRecovered,
			check: func(t *testing.T, _ agentctx.Result, next string) {
				assert.NotContains(t, next, pixel, "the refused image is not sent again")
			},
		},
		{name: "429 with retry-after", status: 429, body: `{"error":{"message":"Rate limit reached for gpt-5 on tokens per min (TPM): Limit 30000, Used 30000, Requested 1200.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}`, outcome: agentctx.RecoveryPassed},
		{name: "429 out of quota", status: 429, body: `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`, outcome: agentctx.RecoveryPassed},
		{name: "503 overloaded", status: 503, body: `{"error":{"message":"The server is overloaded or not ready yet.","type":"server_error"}}`, outcome: agentctx.RecoveryPassed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newCompatServer(t, func(w http.ResponseWriter, _ *http.Request, n int) {
				if n == 0 {
					writeJSON(w, tt.status, tt.body)
					return
				}
				writeJSON(w, 200, completion)
			})
			c := sdk.NewClient(option.WithBaseURL(s.srv.URL+"/v1"), option.WithAPIKey("local-key"), option.WithMaxRetries(0))
			clock := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
			p, err := agentctx.New(agentctx.Config{Model: "qwen3:8b", ContextWindow: 32_768, MaxOutputTokens: 4096,
				Tokens: agentctx.EstimateCounter{}, Now: func() time.Time { return clock }})
			require.NoError(t, err)
			sess := session.New(session.Options{ID: "s-openai", Now: func() time.Time { return clock }})
			_, err = sess.User("Profile the build. " + strings.Repeat("Every step counts. ", 60))
			require.NoError(t, err)
			_, err = sess.Assistant(&transcript.Message{ID: "chatcmpl-0", Type: "message", Role: transcript.RoleAssistant, Model: "qwen3:8b",
				Content: []transcript.Block{&transcript.Text{Text: "Profiled: " + strings.Repeat("the linker dominates. ", 60)}}, Usage: &transcript.Usage{InputTokens: 500, OutputTokens: 300}})
			require.NoError(t, err)
			_, err = sess.UserBlocks(&transcript.Text{Text: "Here is the flame graph."},
				&transcript.Image{Source: transcript.MediaSource{Type: "base64", MediaType: "image/png", Data: pixel}})
			require.NoError(t, err)
			ctx := t.Context()
			send := func(req provider.Request) error {
				params, _, err := openai.ChatParams(req, openai.Options{Model: "qwen3:8b"})
				require.NoError(t, err)
				_, err = c.Chat.Completions.New(ctx, params)
				return openai.Classify(ctx, err)
			}

			res, err := sess.Prepare(ctx, p, agentctx.Input{})
			require.NoError(t, err)
			sendErr := send(res.Request)
			require.Error(t, sendErr)
			before := len(sess.Records())
			rres, rerr := sess.Recover(ctx, p, agentctx.Input{}, sendErr)
			rc := rres.Report.Recovery
			require.NotNil(t, rc)
			assert.Equal(t, tt.rung, rc.Rung, rc.Reason)
			assert.Equal(t, tt.outcome, rc.Outcome, rc.Reason)
			if tt.outcome == agentctx.RecoveryPassed {
				assert.Same(t, sendErr, rerr)
				assert.Len(t, sess.Records(), before, "nothing is recorded")
				return
			}
			require.NoError(t, rerr)
			assert.Equal(t, transcript.SubtypeRecovery, rres.Append[0].Subtype)
			require.NoError(t, send(rres.Request), "the recovered request is accepted")
			s.mu.Lock()
			next, _ := json.Marshal(s.bodies[1])
			s.mu.Unlock()
			if tt.check != nil {
				tt.check(t, rres, string(next))
			}
		})
	}
}
