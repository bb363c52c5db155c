package liveloop

import (
	"encoding/json"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/anthropic"
	"github.com/agentctx/agentctx/openai"
	"github.com/agentctx/agentctx/provider"
	"github.com/agentctx/agentctx/summarize"
	"github.com/agentctx/agentctx/transcript"
	oai "github.com/openai/openai-go/v3"
	oaiopt "github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fake is a fake provider on a test server, with its clock.
type fake struct {
	pv  *fakeProvider
	srv *httptest.Server
	clk *clock
	ws  *workspace
}

func newFake(t *testing.T, adapter string, window int) *fake {
	t.Helper()
	sc := corpusScenario(adapter, window, SummarizerModel, 100).withDefaults()
	sc.EventEvery = -1
	ws, err := newWorkspace(t.TempDir(), sc.Tools, sc.Seed, sc.BigRate)
	require.NoError(t, err)
	clk := &clock{t: start}
	pv := newProvider(window, clk.Now, newModel(&sc, ws, idPrefix(adapter)))
	srv := httptest.NewServer(newHandler(adapter, pv))
	t.Cleanup(srv.Close)
	return &fake{pv: pv, srv: srv, clk: clk, ws: ws}
}

// request is a conversation's first request: the system prompt, the scripted tools, and a
// user message of about size bytes.
func (f *fake) request(size, maxTokens int) provider.Request {
	return provider.Request{Model: Model, MaxTokens: maxTokens, System: system, Tools: f.ws.definitions(),
		Messages: []provider.Message{{Role: transcript.RoleUser, Content: []transcript.Block{
			&transcript.Text{Text: "Look at this log.\n" + logText(f.ws.callRand("prompt"), size), CacheControl: &transcript.CacheControl{Type: "ephemeral"}}}}}}
}

func (f *fake) anthropic() *anthropic.Client {
	ad, err := newAdapter(AdapterAnthropic, f.srv.URL)
	if err != nil {
		panic(err)
	}
	return ad.(anthropicAdapter).c
}

func TestAnthropicServer(t *testing.T) {
	f := newFake(t, AdapterAnthropic, 50_000)
	c := f.anthropic()
	req := f.request(20_000, 4096)

	m, err := c.Send(t.Context(), req, anthropic.Options{})
	require.NoError(t, err)
	assert.Contains(t, []string{"tool_use", "end_turn"}, m.StopReason)
	require.NotNil(t, m.Usage)
	assert.Zero(t, m.Usage.CacheReadInputTokens, "nothing is cached yet")
	assert.Positive(t, m.Usage.CacheCreationInputTokens)
	prompt := m.Usage.ContextTokens()
	counted := agentctx.NewCounter(nil).Request(&req)
	assert.InDelta(t, float64(counted)*TokenizerFactor, float64(prompt), float64(counted)*0.01, "the provider counts 1.2 times the library's count")

	f.clk.advance(time.Minute)
	m, err = c.Send(t.Context(), req, anthropic.Options{Stream: true})
	require.NoError(t, err)
	assert.Equal(t, prompt, m.Usage.CacheReadInputTokens, "the same prompt within 5 minutes is read from the cache")
	assert.Positive(t, m.Usage.OutputTokens)
	assert.Equal(t, 1, f.pv.snapshot().Streamed)

	f.clk.advance(6 * time.Minute)
	m, err = c.Send(t.Context(), req, anthropic.Options{})
	require.NoError(t, err)
	assert.Zero(t, m.Usage.CacheReadInputTokens, "the cache expired")

	// Summary requests get a summary of their own, within the cap.
	sum := req
	sum.ToolChoice = &provider.ToolChoice{Type: "none"}
	out, err := anthropic.Summarizer{Client: c}.Summarize(t.Context(), summarize.Request{Request: sum, MaxOutputTokens: 4096})
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(out.Text, "<analysis>"), out.Text[:40])
	assert.True(t, strings.HasSuffix(out.Text, "</summary>"))
	assert.LessOrEqual(t, out.Usage.OutputTokens, 4096)
	assert.Equal(t, 1, f.pv.snapshot().Summaries)
}

func TestAnthropicServerRefusals(t *testing.T) {
	f := newFake(t, AdapterAnthropic, 20_000)
	c := f.anthropic()

	// Prompt and max_tokens over the window: the provider's real message, classified.
	_, err := c.Send(t.Context(), f.request(40_000, 8192), anthropic.Options{})
	require.Error(t, err)
	assert.Equal(t, provider.ClassPromptTooLong, provider.ClassOf(err), "%v", err)
	ptl, ok := errors.AsType[*provider.PromptTooLongError](err)
	require.True(t, ok)
	assert.Greater(t, ptl.Tokens, 10_000)

	// A prompt over the window alone.
	_, err = c.Send(t.Context(), f.request(120_000, 1024), anthropic.Options{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "prompt is too long")
	assert.Equal(t, provider.ClassPromptTooLong, provider.ClassOf(err))

	// The scripted refusal of a prompt that fits, once it takes three quarters of the window.
	f.pv.model.ptlAt = []int{0}
	_, err = c.Send(t.Context(), f.request(1_000, 1024), anthropic.Options{})
	require.NoError(t, err, "a small prompt is not refused")
	_, err = c.Send(t.Context(), f.request(36_000, 1024), anthropic.Options{})
	require.Error(t, err)
	ptl, ok = errors.AsType[*provider.PromptTooLongError](err)
	require.True(t, ok, "%v", err)
	assert.Greater(t, ptl.Tokens, 20_000)
	assert.Equal(t, 20_000, ptl.Limit)
	_, err = c.Send(t.Context(), f.request(36_000, 1024), anthropic.Options{})
	require.NoError(t, err, "one refusal per scheduled event")

	// A body that breaks the contract: a tool result that answers no call.
	bad := f.request(100, 1024)
	bad.Messages[0].Content = append(bad.Messages[0].Content, transcript.TextResult("toolu_none", "output"))
	_, err = c.Send(t.Context(), bad, anthropic.Options{})
	require.Error(t, err)
	assert.Equal(t, provider.ClassInvalidRequest, provider.ClassOf(err), "%v", err)
	st := f.pv.snapshot()
	assert.Equal(t, 1, st.Rejected)
	assert.Equal(t, 2, st.OverWindow)
	assert.Equal(t, 1, st.Injected)
}

// The answer cut at max_tokens bills the whole cap and stops at "max_tokens".
func TestAnthropicServerCut(t *testing.T) {
	f := newFake(t, AdapterAnthropic, 50_000)
	f.pv.model.cutAt = []int{0}
	m, err := f.anthropic().Send(t.Context(), f.request(1_000, 2048), anthropic.Options{})
	require.NoError(t, err)
	assert.True(t, m.Truncated())
	assert.Equal(t, 2048, m.Usage.OutputTokens)
}

func (f *fake) openaiClient() *oai.Client {
	c := oai.NewClient(oaiopt.WithAPIKey("liveloop-key"), oaiopt.WithBaseURL(f.srv.URL+"/v1"), oaiopt.WithMaxRetries(0))
	return &c
}

func TestOpenAIServer(t *testing.T) {
	f := newFake(t, AdapterOpenAI, 50_000)
	c := f.openaiClient()
	req := f.request(20_000, 4096)
	p, _, err := openai.ChatParams(req, openai.Options{Model: "qwen3-coder-30b"})
	require.NoError(t, err)

	cc, err := c.Chat.Completions.New(t.Context(), p)
	require.NoError(t, err)
	require.Len(t, cc.Choices, 1)
	ch := cc.Choices[0]
	assert.Contains(t, []string{"tool_calls", "stop"}, ch.FinishReason)
	if ch.FinishReason == "tool_calls" {
		require.NotEmpty(t, ch.Message.ToolCalls)
		assert.True(t, json.Valid([]byte(ch.Message.ToolCalls[0].Function.Arguments)))
		assert.True(t, strings.HasPrefix(ch.Message.ToolCalls[0].ID, "call_"))
	}
	assert.Zero(t, cc.Usage.PromptTokensDetails.CachedTokens)
	prompt := cc.Usage.PromptTokens

	// Streamed: the same shape, accumulated, with the cached prefix reported.
	p.StreamOptions = oai.ChatCompletionStreamOptionsParam{IncludeUsage: oai.Bool(true)}
	st := c.Chat.Completions.NewStreaming(t.Context(), p)
	var acc oai.ChatCompletionAccumulator
	for st.Next() {
		acc.AddChunk(st.Current())
	}
	require.NoError(t, st.Err())
	require.Len(t, acc.Choices, 1)
	assert.NotEmpty(t, acc.Choices[0].FinishReason)
	assert.Equal(t, prompt, acc.Usage.PromptTokens)
	assert.Equal(t, prompt, acc.Usage.PromptTokensDetails.CachedTokens, "automatic prefix caching")

	// The summary request, through the package's Summarizer.
	sum := req
	sum.ToolChoice = &provider.ToolChoice{Type: "none"}
	out, err := openai.Summarizer{Client: c, Options: openai.Options{Model: "qwen3-coder-30b"}}.Summarize(t.Context(),
		summarize.Request{Request: sum, MaxOutputTokens: 4096})
	require.NoError(t, err)
	assert.True(t, strings.HasSuffix(out.Text, "</summary>"))
	assert.Equal(t, 1, f.pv.snapshot().Summaries)

	// Over the window: vLLM's message, which the package classifies with its figures.
	sum.MaxTokens = 45_000
	_, err = openai.Summarizer{Client: c, Options: openai.Options{Model: "qwen3-coder-30b"}}.Summarize(t.Context(),
		summarize.Request{Request: sum, MaxOutputTokens: 45_000})
	require.Error(t, err)
	ptl, ok := errors.AsType[*provider.PromptTooLongError](err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, 50_000, ptl.Window)
	assert.Equal(t, 5_000, ptl.Limit, "the window less the completion asked for")

	// The scripted refusal: OpenAI's context_length_exceeded.
	f.pv.model.ptlAt = []int{0}
	big := f.request(95_000, 1024)
	bp, _, err := openai.ChatParams(big, openai.Options{Model: "qwen3-coder-30b"})
	require.NoError(t, err)
	_, err = c.Chat.Completions.New(t.Context(), bp)
	require.Error(t, err)
	ce := openai.Classify(t.Context(), err)
	assert.Equal(t, provider.ClassPromptTooLong, provider.ClassOf(ce), "%v", ce)
	oe, ok := errors.AsType[*openai.Error](ce)
	require.True(t, ok)
	assert.Equal(t, "context_length_exceeded", oe.Code)
}

func TestOpenAIServerRejects(t *testing.T) {
	f := newFake(t, AdapterOpenAI, 50_000)
	c := f.openaiClient()
	p := oai.ChatCompletionNewParams{Model: "qwen3-coder-30b", Messages: []oai.ChatCompletionMessageParamUnion{
		oai.UserMessage("Run the tests."),
		oai.ToolMessage("ok", "call_missing"),
	}}
	_, err := c.Chat.Completions.New(t.Context(), p)
	require.Error(t, err)
	assert.Contains(t, openai.Classify(t.Context(), err).Error(), "answers no open tool call")
	assert.Equal(t, 1, f.pv.snapshot().Rejected)
}

func TestCheckChat(t *testing.T) {
	msg := func(s string) chatMessage {
		var m chatMessage
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			panic(err)
		}
		return m
	}
	call := `{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"Bash","arguments":"{}"}}]}`
	for _, tt := range []struct {
		name string
		msgs []string
		want string
	}{
		{"paired", []string{`{"role":"user","content":"go"}`, call, `{"role":"tool","tool_call_id":"c1","content":"ok"}`}, ""},
		{"unanswered", []string{`{"role":"user","content":"go"}`, call, `{"role":"user","content":"and?"}`}, "no tool message yet"},
		{"answered twice", []string{call, `{"role":"tool","tool_call_id":"c1","content":"ok"}`, `{"role":"tool","tool_call_id":"c1","content":"ok"}`}, "answers no open tool call"},
		{"left open", []string{`{"role":"user","content":"go"}`, call}, "have no tool messages"},
		{"empty user", []string{`{"role":"user","content":" "}`}, "no content"},
		{"empty assistant", []string{`{"role":"user","content":"go"}`, `{"role":"assistant","content":""}`}, "neither content nor tool calls"},
		{"none", nil, "at least one message"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var msgs []chatMessage
			for _, s := range tt.msgs {
				msgs = append(msgs, msg(s))
			}
			err := checkChat(msgs)
			if tt.want == "" {
				assert.NoError(t, err)
				return
			}
			assert.ErrorContains(t, err, tt.want)
		})
	}
}

// The cache markers are left out of a message's bytes, so that the message that carried the
// last request's marker is still a cache hit.
func TestUnmarked(t *testing.T) {
	for _, s := range []string{
		`{"type":"text","text":"x","cache_control":{"type":"ephemeral"}}`,
		`{"cache_control":{"type":"ephemeral","ttl":"1h"},"type":"text","text":"x"}`,
	} {
		got, marked := unmarked([]byte(s))
		assert.True(t, marked)
		assert.JSONEq(t, `{"type":"text","text":"x"}`, string(got))
	}
	got, marked := unmarked([]byte(`{"type":"text","text":"cache_control"}`))
	assert.False(t, marked)
	assert.Equal(t, `{"type":"text","text":"cache_control"}`, string(got))
}

func TestSplitBody(t *testing.T) {
	b, err := splitBody([]byte(`{"model":"m","messages":[{"role":"user","content":"a"}, {"role":"assistant","content":"b"}],"stream":true,"max_tokens":5}`))
	require.NoError(t, err)
	assert.True(t, b.stream)
	require.Len(t, b.messages, 2)
	assert.Equal(t, `{"role":"assistant","content":"b"}`, string(b.messages[1]))
	assert.JSONEq(t, `{"model":"m","max_tokens":5}`, string(b.head))
	_, err = splitBody([]byte(`{"model":`))
	assert.Error(t, err)
}
