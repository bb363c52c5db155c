package transcript

import (
	"encoding/json"
	"errors"
	"fmt"
)

// APIError is an error object the provider answered instead of a message:
// {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}.
type APIError struct {
	// Type is the error's type, e.g. "overloaded_error", "invalid_request_error".
	Type string
	// Message is the provider's explanation.
	Message string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("agentctx: the provider answered %s: %s", e.Type, e.Message)
}

// DecodeResponse decodes the body of a Messages API response — the JSON object the provider
// answers to a non-streaming request, or the message a streaming client assembled — into the
// Message an assistant record carries. Fields the library does not know are kept and written
// back unchanged. An error body gives an [*APIError]; anything that is not an assistant
// message gives an error naming the field.
func DecodeResponse(body []byte) (*Message, error) {
	var head struct {
		Type  string `json:"type"`
		Error *struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &head); err != nil {
		return nil, fmt.Errorf("agentctx: decode response: %w", err)
	}
	if head.Type == "error" {
		e := &APIError{Type: "error"}
		if head.Error != nil {
			e.Type, e.Message = head.Error.Type, head.Error.Message
		}
		return nil, e
	}
	m := new(Message)
	if err := json.Unmarshal(body, m); err != nil {
		return nil, fmt.Errorf("agentctx: decode response: %w", err)
	}
	switch {
	case m.Type != "message":
		return nil, fmt.Errorf("agentctx: decode response: field type: %q, want \"message\"", m.Type)
	case m.Role != RoleAssistant:
		return nil, fmt.Errorf("agentctx: decode response: field role: %q, want %q", m.Role, RoleAssistant)
	case m.ID == "":
		return nil, errors.New("agentctx: decode response: field id: missing")
	case m.StringContent:
		return nil, errors.New("agentctx: decode response: field content: a string, want an array of blocks")
	}
	for i, b := range m.Content {
		if b == nil {
			return nil, fmt.Errorf("agentctx: decode response: field content[%d]: null", i)
		}
	}
	return m, nil
}

// TextResult returns a tool_result block answering the tool_use id with text, encoded as a
// bare string as Claude Code writes it.
func TextResult(toolUseID, text string) *ToolResult {
	return &ToolResult{ToolUseID: toolUseID, StringContent: true, Content: []Block{&Text{Text: text}}}
}

// ErrorResult returns a tool_result block that reports the call failed, with text as the
// model's explanation.
func ErrorResult(toolUseID, text string) *ToolResult {
	r := TextResult(toolUseID, text)
	r.IsError = true
	return r
}
