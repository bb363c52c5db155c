package liveloop

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/agentctx/agentctx/transcript"
)

// openaiServer is an http.Handler speaking OpenAI's Chat Completions as vLLM serves it
// (POST /v1/chat/completions, a JSON answer or, with "stream": true, server-sent chunks
// ending in [DONE]) for the fake provider. Prefix caching is automatic: the cached part of a
// prompt is reported as prompt_tokens_details.cached_tokens.
type openaiServer struct {
	pv  *fakeProvider
	ids atomic.Int64

	mu   sync.Mutex
	seed maphash.Seed
	// decoded holds the messages of the last request, decoded and counted, by a hash of
	// their bytes.
	decoded map[msgKey]chatEntry
}

func newOpenAIServer(pv *fakeProvider) *openaiServer {
	return &openaiServer{pv: pv, seed: maphash.MakeSeed()}
}

// chatMessage is one message of a Chat Completions body.
type chatMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCallID string          `json:"tool_call_id"`
	ToolCalls  []struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

// chatPart is one part of a message's content array.
type chatPart struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	ImageURL struct {
		URL string `json:"url"`
	} `json:"image_url"`
}

func (s *openaiServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		vllmError(w, http.StatusNotFound, "NotFoundError", "no such endpoint: "+r.Method+" "+r.URL.Path)
		return
	}
	data, err := io.ReadAll(r.Body)
	if err != nil {
		vllmError(w, http.StatusBadRequest, "BadRequestError", "cannot read the body: "+err.Error())
		return
	}
	b, err := splitBody(data)
	var top struct {
		Model               string            `json:"model"`
		Tools               []json.RawMessage `json:"tools"`
		ToolChoice          json.RawMessage   `json:"tool_choice"`
		MaxTokens           int               `json:"max_tokens"`
		MaxCompletionTokens int               `json:"max_completion_tokens"`
		StreamOptions       struct {
			IncludeUsage bool `json:"include_usage"`
		} `json:"stream_options"`
	}
	if err == nil {
		err = json.Unmarshal(b.head, &top)
	}
	if err != nil {
		s.pv.reject("the body is not a JSON object: " + err.Error())
		vllmError(w, http.StatusBadRequest, "BadRequestError", "the body is not a JSON object: "+err.Error())
		return
	}
	msgs, p, err := s.prompt(b.messages, top.Tools)
	if err == nil {
		err = checkChat(msgs)
	}
	if err != nil {
		s.pv.reject(err.Error())
		vllmError(w, http.StatusBadRequest, "BadRequestError", err.Error())
		return
	}
	p.summary = strings.TrimSpace(string(top.ToolChoice)) == `"none"` || asksSummary(msgs)
	p.maxTokens = top.MaxCompletionTokens
	if p.maxTokens == 0 {
		p.maxTokens = top.MaxTokens
	}
	if p.maxTokens == 0 {
		// vLLM's default: whatever room the window leaves.
		for _, pt := range p.parts {
			p.maxTokens -= pt.tokens
		}
		p.maxTokens = max(1, p.maxTokens+s.pv.window)
	}
	switch v, u := s.pv.judge(p); v {
	case overWindow:
		vllmError(w, http.StatusBadRequest, "BadRequestError", fmt.Sprintf("This model's maximum context length is %d tokens. However, you requested %d tokens (%d in the messages, %d in the completion). Please reduce the length of the messages or completion.",
			s.pv.window, p.tokens+p.maxTokens, p.tokens, p.maxTokens))
	case injected:
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": map[string]any{
			"message": fmt.Sprintf("This model's maximum context length is %d tokens. However, your messages resulted in %d tokens. Please reduce the length of the messages.",
				s.pv.window, max(p.tokens, s.pv.window)+s.pv.window/100),
			"type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}})
	default:
		a, out := s.pv.reply(p)
		u.output = out
		id := fmt.Sprintf("chatcmpl-liveloop%08d", s.ids.Add(1))
		s.pv.answered(a, b.stream)
		if b.stream {
			s.stream(w, id, top.Model, a, u, top.StreamOptions.IncludeUsage)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"id": id, "object": "chat.completion", "created": 1764500000, "model": top.Model,
			"choices": []any{map[string]any{"index": 0, "message": chatAnswer(a), "finish_reason": finishReason(a.stop), "logprobs": nil}},
			"usage":   chatUsage(u)})
	}
}

// prompt decodes and measures the request's messages: each tool definition and each
// message is a part of the prompt cache, counted by the provider's tokenizer (the library's
// counter on the same text, images by their size, times [TokenizerFactor]). Messages the
// last request held are not decoded again.
func (s *openaiServer) prompt(raws, tools []json.RawMessage) ([]chatMessage, *prompt, error) {
	c := s.pv.counter
	p := &prompt{}
	for _, raw := range tools {
		p.parts = append(p.parts, s.pv.newPart(raw, c.Text(string(raw))))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	next := make(map[msgKey]chatEntry, len(raws))
	msgs := make([]chatMessage, len(raws))
	for i, raw := range raws {
		k := keyOf(s.seed, raw)
		e, ok := s.decoded[k]
		if !ok {
			var err error
			if e, err = s.measure(raw); err != nil {
				return nil, nil, fmt.Errorf("messages[%d]: %w", i, err)
			}
		}
		next[k] = e
		msgs[i] = e.msg
		p.parts = append(p.parts, s.pv.newPart(raw, e.tokens))
	}
	s.decoded = next
	p.cached = len(p.parts)
	return msgs, p, nil
}

// chatEntry is a decoded message and its count.
type chatEntry struct {
	msg    chatMessage
	tokens int
}

// measure decodes one message and counts it.
func (s *openaiServer) measure(raw json.RawMessage) (chatEntry, error) {
	c := s.pv.counter
	var e chatEntry
	if err := json.Unmarshal(raw, &e.msg); err != nil {
		return e, err
	}
	text, parts, err := chatContent(e.msg.Content)
	if err != nil {
		return e, fmt.Errorf("content: %w", err)
	}
	e.tokens = c.MessageOverhead() + c.Text(text)
	for _, pt := range parts {
		switch pt.Type {
		case "text":
			e.tokens += c.Text(pt.Text)
		case "image_url":
			src, ok := dataURL(pt.ImageURL.URL)
			if !ok {
				return e, errors.New("content: an image_url that is no base64 data URL")
			}
			e.tokens += c.Block(&transcript.Image{Source: src})
		default:
			return e, fmt.Errorf("content: unsupported part type %q", pt.Type)
		}
	}
	for _, tc := range e.msg.ToolCalls {
		e.tokens += c.Text(tc.Function.Name) + c.Text(tc.Function.Arguments)
	}
	return e, nil
}

// chatContent reads a message's content: a string, or an array of parts.
func chatContent(raw json.RawMessage) (string, []chatPart, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil, nil
	}
	if raw[0] == '"' {
		var s string
		err := json.Unmarshal(raw, &s)
		return s, nil, err
	}
	var parts []chatPart
	err := json.Unmarshal(raw, &parts)
	return "", parts, err
}

// dataURL decodes a data:MEDIA;base64,DATA URL into a media source.
func dataURL(u string) (transcript.MediaSource, bool) {
	rest, ok := strings.CutPrefix(u, "data:")
	if !ok {
		return transcript.MediaSource{}, false
	}
	media, data, ok := strings.Cut(rest, ";base64,")
	return transcript.MediaSource{Type: "base64", MediaType: media, Data: data}, ok
}

// asksSummary reports whether the last message is a user message asking for a <summary>.
func asksSummary(msgs []chatMessage) bool {
	if len(msgs) == 0 || msgs[len(msgs)-1].Role != "user" {
		return false
	}
	text, parts, _ := chatContent(msgs[len(msgs)-1].Content)
	for _, p := range parts {
		text += p.Text
	}
	return strings.Contains(text, "<summary>")
}

// checkChat checks the rules of a conversation a Chat Completions server enforces: known
// roles, non-empty messages, and every tool call of an assistant message answered by one
// tool message, before the next message of another role.
func checkChat(msgs []chatMessage) error {
	if len(msgs) == 0 {
		return errors.New("messages: at least one message is required")
	}
	open := map[string]bool{}
	for i, m := range msgs {
		text, parts, _ := chatContent(m.Content)
		empty := strings.TrimSpace(text) == "" && len(parts) == 0
		if m.Role != "tool" && len(open) > 0 {
			return fmt.Errorf("messages[%d]: a %s message follows tool calls that have no tool message yet", i, m.Role)
		}
		switch m.Role {
		case "system", "developer", "user":
			if empty {
				return fmt.Errorf("messages[%d]: a %s message with no content", i, m.Role)
			}
		case "assistant":
			if empty && len(m.ToolCalls) == 0 {
				return fmt.Errorf("messages[%d]: an assistant message with neither content nor tool calls", i)
			}
			for j, tc := range m.ToolCalls {
				if tc.ID == "" || tc.Function.Name == "" || !json.Valid([]byte(tc.Function.Arguments)) {
					return fmt.Errorf("messages[%d].tool_calls[%d]: an id, a name and JSON arguments are required", i, j)
				}
				if open[tc.ID] {
					return fmt.Errorf("messages[%d].tool_calls[%d]: tool call id %q is repeated", i, j, tc.ID)
				}
				open[tc.ID] = true
			}
		case "tool":
			if !open[m.ToolCallID] {
				return fmt.Errorf("messages[%d]: tool_call_id %q answers no open tool call", i, m.ToolCallID)
			}
			delete(open, m.ToolCallID)
		default:
			return fmt.Errorf("messages[%d]: unknown role %q", i, m.Role)
		}
	}
	if len(open) > 0 {
		return errors.New("messages: the last assistant message's tool calls have no tool messages")
	}
	return nil
}

// chatAnswer returns the assistant message of an answer.
func chatAnswer(a answer) map[string]any {
	m := map[string]any{"role": "assistant", "content": nil}
	if a.text != "" {
		m["content"] = a.text
	}
	if len(a.calls) > 0 {
		calls := make([]any, len(a.calls))
		for i, c := range a.calls {
			calls[i] = map[string]any{"id": c.id, "type": "function", "function": map[string]any{"name": c.name, "arguments": string(c.input)}}
		}
		m["tool_calls"] = calls
	}
	return m
}

func finishReason(stop string) string {
	switch stop {
	case "tool_use":
		return "tool_calls"
	case "max_tokens":
		return "length"
	}
	return "stop"
}

func chatUsage(u usage) map[string]any {
	prompt := u.input + u.cacheRead + u.cacheWrite
	return map[string]any{"prompt_tokens": prompt, "completion_tokens": u.output, "total_tokens": prompt + u.output,
		"prompt_tokens_details": map[string]any{"cached_tokens": u.cacheRead}}
}

// stream sends the answer as chunks, as vLLM streams it.
func (s *openaiServer) stream(w http.ResponseWriter, id, model string, a answer, u usage, withUsage bool) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	chunk := func(delta map[string]any, finish any) {
		b, err := json.Marshal(map[string]any{"id": id, "object": "chat.completion.chunk", "created": 1764500000, "model": model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": nil}}})
		if err != nil {
			panic("liveloop: unreachable: " + err.Error())
		}
		fmt.Fprintf(w, "data: %s\n\n", b)
	}
	chunk(map[string]any{"role": "assistant", "content": ""}, nil)
	if a.text != "" {
		for _, piece := range chunks(a.text, 2048) {
			chunk(map[string]any{"content": piece}, nil)
		}
	}
	for i, c := range a.calls {
		chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": c.id, "type": "function",
			"function": map[string]any{"name": c.name, "arguments": ""}}}}, nil)
		for _, piece := range chunks(string(c.input), 512) {
			chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "function": map[string]any{"arguments": piece}}}}, nil)
		}
	}
	chunk(map[string]any{}, finishReason(a.stop))
	if withUsage {
		b, err := json.Marshal(map[string]any{"id": id, "object": "chat.completion.chunk", "created": 1764500000, "model": model,
			"choices": []any{}, "usage": chatUsage(u)})
		if err != nil {
			panic("liveloop: unreachable: " + err.Error())
		}
		fmt.Fprintf(w, "data: %s\n\n", b)
	}
	io.WriteString(w, "data: [DONE]\n\n")
}

func vllmError(w http.ResponseWriter, status int, typ, msg string) {
	writeJSON(w, status, map[string]any{"object": "error", "message": msg, "type": typ, "param": nil, "code": status})
}
