package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/anthropic"
	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRun plays a turn against a fake Messages API: the model lists the directory, then
// answers; the second request carries the call and its result.
func TestRun(t *testing.T) {
	var bodies []map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var m map[string]any
		require.NoError(t, json.Unmarshal(raw, &m))
		bodies = append(bodies, m)
		// The model's full max_tokens (64,000) is more than the SDK sends non-streaming: the
		// turns arrive streamed.
		assert.Equal(t, true, m["stream"])
		if len(bodies) == 1 {
			stream(w, "msg_1", "tool_use", `{"type":"text","text":"Let me look."}`,
				`{"type":"tool_use","id":"toolu_1","name":"list_directory","input":{"path":"."}}`)
			return
		}
		stream(w, "msg_2", "end_turn", `{"type":"text","text":"Two Go files."}`)
	}))
	defer srv.Close()
	c := sdk.NewClient(option.WithoutEnvironmentDefaults(), option.WithAPIKey("test"), option.WithBaseURL(srv.URL), option.WithMaxRetries(0))
	p, err := agentctx.New(agentctx.Config{Model: "claude-sonnet-4-5", Tokens: agentctx.EstimateCounter{}})
	require.NoError(t, err)

	var out bytes.Buffer
	require.NoError(t, run(t.Context(), anthropic.NewClient(&c), p, "What is here?", &out))
	assert.Equal(t, "Let me look.\n[list_directory {\"path\":\".\"}]\nTwo Go files.\n", out.String())
	require.Len(t, bodies, 2)
	msgs := bodies[1]["messages"].([]any)
	require.Len(t, msgs, 3, "prompt, the call, its result")
	result := msgs[2].(map[string]any)["content"].([]any)[0].(map[string]any)
	assert.Equal(t, "tool_result", result["type"])
	assert.Equal(t, "toolu_1", result["tool_use_id"])
	assert.Contains(t, fmt.Sprint(result["content"]), "main.go")
}

// TestRunRecovers plays a turn whose first answer is cut at max_tokens: the loop asks the
// model to continue (the cap already is the model's maximum), and prints both parts. An
// overloaded API, after the SDK's retries, ends the turn with its class.
func TestRunRecovers(t *testing.T) {
	var bodies []map[string]any
	overloaded := false
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var m map[string]any
		require.NoError(t, json.Unmarshal(raw, &m))
		bodies = append(bodies, m)
		switch {
		case overloaded:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(529)
			io.WriteString(w, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
		case len(bodies) == 1:
			stream(w, "msg_1", "max_tokens", `{"type":"text","text":"Two Go"}`)
		default:
			stream(w, "msg_2", "end_turn", `{"type":"text","text":" files."}`)
		}
	}))
	defer srv.Close()
	c := sdk.NewClient(option.WithoutEnvironmentDefaults(), option.WithAPIKey("test"), option.WithBaseURL(srv.URL), option.WithMaxRetries(0))
	p, err := agentctx.New(agentctx.Config{Model: "claude-sonnet-4-5", Tokens: agentctx.EstimateCounter{}})
	require.NoError(t, err)

	var out bytes.Buffer
	require.NoError(t, run(t.Context(), anthropic.NewClient(&c), p, "What is here?", &out))
	assert.Equal(t, "Two Go files.\n", out.String())
	require.Len(t, bodies, 2)
	msgs := bodies[1]["messages"].([]any)
	require.Len(t, msgs, 3, "prompt, the cut answer, the request to continue")
	assert.Contains(t, fmt.Sprint(msgs[2]), "cut off at the output token limit")

	overloaded = true
	err = run(t.Context(), anthropic.NewClient(&c), p, "And now?", &out)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "turn failed (retryable)")
}

// stream answers with a streamed message of the given complete blocks.
func stream(w http.ResponseWriter, id, stop string, blocks ...string) {
	w.Header().Set("Content-Type", "text/event-stream")
	event := func(name, data string) { fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, data) }
	event("message_start", `{"type":"message_start","message":{"id":"`+id+`","type":"message","role":"assistant","model":"claude-sonnet-4-5",`+
		`"content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":500,"output_tokens":1}}}`)
	for i, b := range blocks {
		event("content_block_start", fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":%s}`, i, b))
		event("content_block_stop", fmt.Sprintf(`{"type":"content_block_stop","index":%d}`, i))
	}
	event("message_delta", `{"type":"message_delta","delta":{"stop_reason":"`+stop+`","stop_sequence":null},"usage":{"output_tokens":30}}`)
	event("message_stop", `{"type":"message_stop"}`)
}

// TestRunLive plays the same turn against the real API.
func TestRunLive(t *testing.T) {
	if os.Getenv("ANTHROPIC_API_KEY") == "" {
		t.Skip("ANTHROPIC_API_KEY not set; the example's run against the real Anthropic API is skipped")
	}
	model := os.Getenv("ANTHROPIC_MODEL")
	if model == "" {
		model = "claude-haiku-4-5"
	}
	c := sdk.NewClient()
	p, err := agentctx.New(agentctx.Config{Model: model, MaxOutputTokens: 1024})
	require.NoError(t, err)
	var out bytes.Buffer
	require.NoError(t, run(t.Context(), anthropic.NewClient(&c), p, "List the current directory with your tool, then name one Go file in it.", &out))
	assert.Contains(t, out.String(), "[list_directory")
}
