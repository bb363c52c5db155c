package openai_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// The OpenAI rules a body must satisfy, checked on the JSON the SDK sends (the wire form,
// not our own structures), as the APIs' own errors state them: "messages with role 'tool'
// must be a response to a preceding message with 'tool_calls'", "An assistant message with
// 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'", "No
// tool output found for function call …".

type chatBody struct {
	Messages []struct {
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
	} `json:"messages"`
	Tools []struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
	ToolChoice json.RawMessage `json:"tool_choice"`
}

// validateChat checks a Chat Completions body: a tool message answers a call of the
// assistant message before its run of tool messages, every call is answered there, ids are
// unique, no message or part is empty.
func validateChat(body []byte) error {
	var b chatBody
	if err := json.Unmarshal(body, &b); err != nil {
		return err
	}
	var errs []error
	fail := func(i int, format string, args ...any) {
		errs = append(errs, fmt.Errorf("messages[%d]: %s", i, fmt.Sprintf(format, args...)))
	}
	if len(b.Messages) == 0 {
		return errors.New("no messages")
	}
	calls, answered := map[string]bool{}, map[string]bool{}
	open := map[string]bool{} // calls of the last assistant message not answered yet
	for i, m := range b.Messages {
		if m.Role != "tool" {
			for id := range open {
				fail(i, "tool_call %s has no tool message before this %s message", id, m.Role)
			}
			clear(open)
		}
		switch m.Role {
		case "system", "developer", "user":
			if err := nonEmptyContent(m.Content); err != nil {
				fail(i, "%s: %v", m.Role, err)
			}
		case "assistant":
			if len(m.ToolCalls) == 0 {
				if err := nonEmptyContent(m.Content); err != nil {
					fail(i, "assistant without tool_calls: %v", err)
				}
			} else if len(m.Content) > 0 && string(m.Content) != "null" {
				if err := nonEmptyContent(m.Content); err != nil {
					fail(i, "assistant: %v", err)
				}
			}
			for _, c := range m.ToolCalls {
				if c.ID == "" || c.Function.Name == "" || c.Type != "function" {
					fail(i, "tool_call %+v is incomplete", c)
				}
				if calls[c.ID] {
					fail(i, "tool_call id %s is not unique", c.ID)
				}
				if !json.Valid([]byte(c.Function.Arguments)) {
					fail(i, "tool_call %s: arguments are not JSON", c.ID)
				}
				calls[c.ID], open[c.ID] = true, true
			}
		case "tool":
			if !open[m.ToolCallID] {
				fail(i, "tool message %s answers no call of the previous assistant message", m.ToolCallID)
			}
			if answered[m.ToolCallID] {
				fail(i, "tool_call %s is answered twice", m.ToolCallID)
			}
			answered[m.ToolCallID] = true
			delete(open, m.ToolCallID)
			if err := nonEmptyContent(m.Content); err != nil {
				fail(i, "tool: %v", err)
			}
		default:
			fail(i, "role %q", m.Role)
		}
	}
	for id := range open {
		errs = append(errs, fmt.Errorf("tool_call %s of the last message has no tool message", id))
	}
	declared := map[string]bool{}
	for i, t := range b.Tools {
		if t.Type != "function" || t.Function.Name == "" || declared[t.Function.Name] {
			errs = append(errs, fmt.Errorf("tools[%d]: %+v is not a unique function", i, t))
		}
		declared[t.Function.Name] = true
	}
	var choice struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if len(b.ToolChoice) > 0 && b.ToolChoice[0] == '{' {
		if json.Unmarshal(b.ToolChoice, &choice) != nil || !declared[choice.Function.Name] {
			errs = append(errs, fmt.Errorf("tool_choice %s names no declared function", b.ToolChoice))
		}
	}
	return errors.Join(errs...)
}

// nonEmptyContent checks a content field: a non-blank string, or a non-empty array of
// parts none of which is empty.
func nonEmptyContent(raw json.RawMessage) error {
	if len(raw) == 0 || string(raw) == "null" {
		return errors.New("no content")
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if strings.TrimSpace(s) == "" {
			return errors.New("empty content")
		}
		return nil
	}
	var parts []map[string]any
	if err := json.Unmarshal(raw, &parts); err != nil {
		return fmt.Errorf("content is neither a string nor parts: %w", err)
	}
	if len(parts) == 0 {
		return errors.New("an empty list of parts")
	}
	for k, p := range parts {
		if err := nonEmptyPart(p); err != nil {
			return fmt.Errorf("part %d: %w", k, err)
		}
	}
	return nil
}

func nonEmptyPart(p map[string]any) error {
	str := func(v any) string { s, _ := v.(string); return s }
	switch p["type"] {
	case "text", "input_text", "output_text":
		if strings.TrimSpace(str(p["text"])) == "" {
			return errors.New("empty text")
		}
	case "image_url":
		u, _ := p["image_url"].(map[string]any)
		if !strings.HasPrefix(str(u["url"]), "data:image/") && !strings.HasPrefix(str(u["url"]), "http") {
			return fmt.Errorf("image url %.40q", str(u["url"]))
		}
	case "input_image":
		if str(p["image_url"]) == "" && str(p["file_id"]) == "" {
			return errors.New("an input_image with neither image_url nor file_id")
		}
	case "file", "input_file":
		f := p
		if inner, ok := p["file"].(map[string]any); ok {
			f = inner
		}
		if str(f["file_data"]) == "" && str(f["file_id"]) == "" && str(f["file_url"]) == "" {
			return errors.New("a file with no data, id or url")
		}
	default:
		return fmt.Errorf("part type %v", p["type"])
	}
	return nil
}

type responsesBody struct {
	Input []struct {
		Type    string          `json:"type"`
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
		CallID  string          `json:"call_id"`
		Name    string          `json:"name"`
		Args    *string         `json:"arguments"`
		Output  json.RawMessage `json:"output"`
		// Encrypted is a compaction item's encrypted_content.
		Encrypted string `json:"encrypted_content"`
	} `json:"input"`
	Tools []struct {
		Type string `json:"type"`
		Name string `json:"name"`
	} `json:"tools"`
}

// validateResponses checks a Responses body: every function_call has its
// function_call_output later in the input and every output a call before it, call ids are
// unique, no message or output is empty, a compaction item holds its encrypted content and
// comes first.
func validateResponses(body []byte) error {
	var b responsesBody
	if err := json.Unmarshal(body, &b); err != nil {
		return err
	}
	var errs []error
	fail := func(i int, format string, args ...any) {
		errs = append(errs, fmt.Errorf("input[%d]: %s", i, fmt.Sprintf(format, args...)))
	}
	if len(b.Input) == 0 {
		return errors.New("no input items")
	}
	calls, outputs := map[string]bool{}, map[string]bool{}
	for i, it := range b.Input {
		typ := it.Type
		if typ == "" && it.Role != "" {
			typ = "message"
		}
		switch typ {
		case "message":
			if it.Role != "user" && it.Role != "assistant" && it.Role != "system" && it.Role != "developer" {
				fail(i, "role %q", it.Role)
			}
			if err := nonEmptyContent(it.Content); err != nil {
				fail(i, "%s message: %v", it.Role, err)
			}
		case "function_call":
			if it.CallID == "" || it.Name == "" || it.Args == nil || !json.Valid([]byte(*it.Args)) {
				fail(i, "function_call %s is incomplete", it.CallID)
			}
			if calls[it.CallID] {
				fail(i, "call_id %s is not unique", it.CallID)
			}
			calls[it.CallID] = true
		case "function_call_output":
			if !calls[it.CallID] {
				fail(i, "No tool call found for function call output with call_id %s", it.CallID)
			}
			if outputs[it.CallID] {
				fail(i, "call_id %s is answered twice", it.CallID)
			}
			outputs[it.CallID] = true
			if err := nonEmptyContent(it.Output); err != nil {
				fail(i, "function_call_output %s: %v", it.CallID, err)
			}
		case "compaction":
			if it.Encrypted == "" || i > 0 {
				fail(i, "a compaction item without encrypted_content, or after other items")
			}
		default:
			fail(i, "item type %q", typ)
		}
	}
	for id := range calls {
		if !outputs[id] {
			errs = append(errs, fmt.Errorf("No tool output found for function call %s", id))
		}
	}
	names := map[string]bool{}
	for i, t := range b.Tools {
		if t.Type != "function" || t.Name == "" || names[t.Name] {
			errs = append(errs, fmt.Errorf("tools[%d]: %+v is not a unique function", i, t))
		}
		names[t.Name] = true
	}
	return errors.Join(errs...)
}

// The validators catch what the APIs reject.
func TestValidators(t *testing.T) {
	chat := []struct{ name, body string }{
		{"a tool message after a user message", `{"messages":[{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"a","content":"x"},{"role":"user","content":"u"},{"role":"tool","tool_call_id":"a","content":"x"}]}`},
		{"an unanswered call", `{"messages":[{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"user","content":"u"}]}`},
		{"an answer to no call", `{"messages":[{"role":"user","content":"u"},{"role":"tool","tool_call_id":"a","content":"x"}]}`},
		{"duplicate ids", `{"messages":[{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}},{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"a","content":"x"}]}`},
		{"empty user content", `{"messages":[{"role":"user","content":" "}]}`},
		{"an empty assistant", `{"messages":[{"role":"user","content":"u"},{"role":"assistant","content":""}]}`},
		{"an empty tool message", `{"messages":[{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"a","content":""}]}`},
	}
	for _, tt := range chat {
		assert.Error(t, validateChat([]byte(tt.body)), "chat: %s", tt.name)
	}
	resp := []struct{ name, body string }{
		{"a call without output", `{"input":[{"type":"function_call","call_id":"a","name":"f","arguments":"{}"}]}`},
		{"an output before its call", `{"input":[{"type":"function_call_output","call_id":"a","output":"x"},{"type":"function_call","call_id":"a","name":"f","arguments":"{}"}]}`},
		{"duplicate call ids", `{"input":[{"type":"function_call","call_id":"a","name":"f","arguments":"{}"},{"type":"function_call","call_id":"a","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"a","output":"x"}]}`},
		{"an empty message", `{"input":[{"role":"user","content":[]}]}`},
		{"an empty output", `{"input":[{"type":"function_call","call_id":"a","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"a","output":""}]}`},
	}
	for _, tt := range resp {
		assert.Error(t, validateResponses([]byte(tt.body)), "responses: %s", tt.name)
	}
}
