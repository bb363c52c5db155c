package openai_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/openai"
	"github.com/agentctx/agentctx/provider"
	"github.com/agentctx/agentctx/session"
	"github.com/agentctx/agentctx/transcript"
	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// A turn on a local OpenAI-compatible server (vLLM here, faked): the pipeline prepares the
// request, the Client sends it and appends the answer to the session, and the tool call
// comes back as a tool_use block for the runtime to run.
func ExampleClient_Turn() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"chatcmpl-7f3a","object":"chat.completion","created":1764500000,"model":"Qwen/Qwen3-32B",`+
			`"choices":[{"index":0,"message":{"role":"assistant","content":null,"reasoning_content":"The user wants the file.",`+
			`"tool_calls":[{"id":"chatcmpl-tool-1","type":"function","function":{"name":"Read","arguments":"{\"path\": \"go.mod\"}"}}]},`+
			`"finish_reason":"tool_calls","stop_reason":null}],`+
			`"usage":{"prompt_tokens":812,"completion_tokens":31,"total_tokens":843,"prompt_tokens_details":{"cached_tokens":768}}}`)
	}))
	defer srv.Close()

	ctx := context.Background()
	sdkClient := sdk.NewClient(option.WithBaseURL(srv.URL+"/v1"), option.WithAPIKey("local"))
	c := openai.NewClient(&sdkClient)
	p, err := agentctx.New(agentctx.Config{Model: "Qwen/Qwen3-32B", ContextWindow: 32000})
	if err != nil {
		panic(err)
	}
	sess := session.New(session.Options{})
	tools := []provider.Tool{{Name: "Read", Definition: json.RawMessage(
		`{"name":"Read","description":"Read a file.","input_schema":{"type":"object","properties":{"path":{"type":"string"}}}}`)}}

	if _, err := sess.User("What does go.mod require?"); err != nil {
		panic(err)
	}
	res, err := sess.Prepare(ctx, p, agentctx.Input{Tools: tools})
	if err != nil {
		panic(err)
	}
	rec, err := c.Turn(ctx, sess, res.Request, openai.Options{})
	if err != nil {
		panic(err) // a runtime passes it to sess.Recover (see provider.ClassOf)
	}
	m := rec.Message
	fmt.Println("stop_reason:", m.StopReason)
	for _, b := range m.Content {
		switch b := b.(type) {
		case *transcript.Thinking:
			fmt.Println("thinking:", b.Thinking)
		case *transcript.ToolUse:
			fmt.Printf("tool_use %s %s %s\n", b.ID, b.Name, b.Input)
		}
	}
	fmt.Printf("usage: input %d, cache read %d, output %d\n", m.Usage.InputTokens, m.Usage.CacheReadInputTokens, m.Usage.OutputTokens)
	// Output:
	// stop_reason: tool_use
	// thinking: The user wants the file.
	// tool_use chatcmpl-tool-1 Read {"path":"go.mod"}
	// usage: input 44, cache read 768, output 31
}
