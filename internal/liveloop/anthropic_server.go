package liveloop

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/agentctx/agentctx/internal/providertest"
	"github.com/agentctx/agentctx/provider"
	"github.com/agentctx/agentctx/transcript"
)

// anthropicServer is an http.Handler speaking the Anthropic Messages API (POST /v1/messages,
// a JSON answer or, when the request says "stream": true, server-sent events) for the fake
// provider.
type anthropicServer struct {
	pv  *fakeProvider
	ids atomic.Int64

	mu   sync.Mutex
	seed maphash.Seed
	// decoded holds the messages of the last request, decoded, by a hash of their bytes:
	// the next request repeats most of them, which are then not decoded again.
	decoded map[msgKey]provider.Message
}

func newAnthropicServer(pv *fakeProvider) *anthropicServer {
	return &anthropicServer{pv: pv, seed: maphash.MakeSeed()}
}

// decode decodes a split request body with [providertest.DecodeRequest], its messages one by
// one, reusing the messages of the last request it decoded.
func (s *anthropicServer) decode(b body) (provider.Request, error) {
	req, err := providertest.DecodeRequest(b.head)
	if err != nil {
		return req, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	next := make(map[msgKey]provider.Message, len(b.messages))
	req.Messages = make([]provider.Message, len(b.messages))
	for i, raw := range b.messages {
		k := keyOf(s.seed, raw)
		m, ok := s.decoded[k]
		if !ok {
			one, err := providertest.DecodeRequest(append(append([]byte(`{"messages":[`), raw...), "]}"...))
			if err != nil {
				return req, fmt.Errorf("messages[%d]: %w", i, err)
			}
			m = one.Messages[0]
		}
		req.Messages[i] = m
		next[k] = m
	}
	s.decoded = next
	return req, nil
}

// cacheControl matches a block's cache marker in a request body, so that the prompt cache
// knows a message by its content whether or not it carries the marker.
var cacheControl = regexp.MustCompile(`,"cache_control":\{[^{}]*\}|"cache_control":\{[^{}]*\},?`)

// unmarked returns raw without cache markers, and whether it held any.
func unmarked(raw []byte) ([]byte, bool) {
	if !bytes.Contains(raw, []byte(`"cache_control"`)) {
		return raw, false
	}
	out := cacheControl.ReplaceAll(raw, nil)
	return out, len(out) != len(raw)
}

func (s *anthropicServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
		anthropicError(w, http.StatusNotFound, "not_found_error", "no such endpoint: "+r.Method+" "+r.URL.Path)
		return
	}
	data, err := io.ReadAll(r.Body)
	if err != nil {
		anthropicError(w, http.StatusBadRequest, "invalid_request_error", "cannot read the body: "+err.Error())
		return
	}
	b, err := splitBody(data)
	if err != nil {
		s.pv.reject("the body is not a JSON object: " + err.Error())
		anthropicError(w, http.StatusBadRequest, "invalid_request_error", "the body is not a JSON object: "+err.Error())
		return
	}
	req, err := s.decode(b)
	if err == nil {
		err = provider.Validate(req, provider.ValidateOptions{})
	}
	if err != nil {
		s.pv.reject(err.Error())
		anthropicError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
		return
	}
	p := s.prompt(&req, b.messages)
	switch v, u := s.pv.judge(p); v {
	case overWindow:
		msg := fmt.Sprintf("input length and `max_tokens` exceed context limit: %d + %d > %d, decrease input length or `max_tokens` and try again", p.tokens, p.maxTokens, s.pv.window)
		if p.tokens > s.pv.window {
			msg = fmt.Sprintf("prompt is too long: %d tokens > %d maximum", p.tokens, s.pv.window)
		}
		anthropicError(w, http.StatusBadRequest, "invalid_request_error", msg)
	case injected:
		anthropicError(w, http.StatusBadRequest, "invalid_request_error",
			fmt.Sprintf("prompt is too long: %d tokens > %d maximum", max(p.tokens, s.pv.window)+s.pv.window/100, s.pv.window))
	default:
		var a answer
		if e, ok := compactEditOf(b.head); ok && !p.summary && p.tokens >= e.trigger {
			a, u = s.pv.compactReply(p, u, s.fixed(p, &req), e.pause)
		} else {
			var out int
			a, out = s.pv.reply(p)
			u.output = out
		}
		id := fmt.Sprintf("msg_liveloop%08d", s.ids.Add(1))
		s.pv.answered(a, b.stream)
		if b.stream {
			s.stream(w, id, req.Model, a, u)
			return
		}
		msg := map[string]any{"id": id, "type": "message", "role": "assistant", "model": req.Model,
			"content": anthropicBlocks(a), "stop_reason": a.stop, "stop_sequence": nil, "usage": anthropicUsage(u, true)}
		writeJSON(w, http.StatusOK, msg)
	}
}

// prompt measures the request for the provider: tools, system prompt and messages, each a
// part of the prompt cache, counted by the provider's tokenizer.
func (s *anthropicServer) prompt(req *provider.Request, messages []json.RawMessage) *prompt {
	c := s.pv.counter
	p := &prompt{maxTokens: req.MaxTokens, summary: isSummary(req)}
	add := func(raw []byte, marked bool, n int) {
		p.parts = append(p.parts, s.pv.newPart(raw, n))
		if marked {
			p.cached = len(p.parts)
		}
	}
	for _, t := range req.Tools {
		add(t.Definition, t.CacheControl != nil, c.Text(string(t.Definition)))
	}
	if len(req.System) > 0 {
		var text strings.Builder
		n, marked := 0, false
		for _, b := range req.System {
			n += c.Block(b)
			text.WriteString(b.Text)
			marked = marked || b.CacheControl != nil
		}
		add([]byte(text.String()), marked, n)
	}
	for i, raw := range messages {
		raw, marked := unmarked(raw)
		add(raw, marked, c.MessageOverhead()+c.Blocks(req.Messages[i].Content))
	}
	return p
}

// isSummary tells a summary request from a turn of the conversation: it allows no tool
// (tool_choice none), or its last user text asks for a <summary>.
func isSummary(req *provider.Request) bool {
	if tc := req.ToolChoice; tc != nil && tc.Type == "none" {
		return true
	}
	if len(req.Messages) == 0 {
		return false
	}
	last := req.Messages[len(req.Messages)-1]
	for _, b := range last.Content {
		if t, ok := b.(*transcript.Text); ok && last.Role == transcript.RoleUser && strings.Contains(t.Text, "<summary>") {
			return true
		}
	}
	return false
}

// fixed returns the provider's count of the prompt's tools and system prompt: what an answer
// after a server-side compaction reads besides the summary.
func (s *anthropicServer) fixed(p *prompt, req *provider.Request) int {
	n := 0
	for _, pt := range p.parts[:len(p.parts)-len(req.Messages)] {
		n += pt.tokens
	}
	return n
}

// anthropicBlocks returns the content blocks of an answer.
func anthropicBlocks(a answer) []map[string]any {
	var out []map[string]any
	if a.compaction != "" {
		out = append(out, map[string]any{"type": "compaction", "content": a.compaction})
	}
	if a.text != "" {
		out = append(out, map[string]any{"type": "text", "text": a.text})
	}
	for _, c := range a.calls {
		out = append(out, map[string]any{"type": "tool_use", "id": c.id, "name": c.name, "input": c.input})
	}
	if out == nil {
		out = []map[string]any{}
	}
	return out
}

// anthropicUsage returns the usage object; withOutput leaves the output out (a stream's
// message_start reports it later).
func anthropicUsage(u usage, withOutput bool) map[string]any {
	m := map[string]any{"input_tokens": u.input, "cache_creation_input_tokens": u.cacheWrite, "cache_read_input_tokens": u.cacheRead,
		"cache_creation": map[string]int{"ephemeral_5m_input_tokens": u.cacheWrite, "ephemeral_1h_input_tokens": 0}, "service_tier": "standard"}
	if withOutput {
		m["output_tokens"] = u.output
	} else {
		m["output_tokens"] = 1
	}
	if u.iterations != nil {
		m["iterations"] = anthropicIterations(u.iterations)
	}
	return m
}

// stream sends the answer as the Messages API's events.
func (s *anthropicServer) stream(w http.ResponseWriter, id, model string, a answer, u usage) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	event := func(name string, data any) {
		b, err := json.Marshal(data)
		if err != nil {
			panic("liveloop: unreachable: " + err.Error())
		}
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
	}
	event("message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": id, "type": "message", "role": "assistant",
		"model": model, "content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": anthropicUsage(u, false)}})
	event("ping", map[string]any{"type": "ping"})
	i := 0
	if a.compaction != "" {
		event("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "compaction", "content": nil}})
		event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "compaction_delta", "content": a.compaction}})
		event("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
		i++
	}
	if a.text != "" {
		event("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "text", "text": ""}})
		for _, piece := range chunks(a.text, 2048) {
			event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "text_delta", "text": piece}})
		}
		event("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
		i++
	}
	for _, c := range a.calls {
		event("content_block_start", map[string]any{"type": "content_block_start", "index": i,
			"content_block": map[string]any{"type": "tool_use", "id": c.id, "name": c.name, "input": map[string]any{}}})
		for _, piece := range chunks(string(c.input), 512) {
			event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "input_json_delta", "partial_json": piece}})
		}
		event("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
		i++
	}
	event("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": a.stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": u.output}})
	event("message_stop", map[string]any{"type": "message_stop"})
}

// chunks cuts s into pieces of at most n bytes, at UTF-8 boundaries.
func chunks(s string, n int) []string {
	var out []string
	for len(s) > n {
		k := n
		for k > 0 && !utf8RuneStart(s[k]) {
			k--
		}
		out = append(out, s[:k])
		s = s[k:]
	}
	return append(out, s)
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }

func anthropicError(w http.ResponseWriter, status int, typ, msg string) {
	writeJSON(w, status, map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}, "request_id": "req_liveloop"})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic("liveloop: unreachable: " + err.Error())
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Request-Id", "req_liveloop")
	w.WriteHeader(status)
	w.Write(b)
}
