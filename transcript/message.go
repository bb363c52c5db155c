package transcript

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/agentctx/agentctx/internal/jsonobj"
)

// Role is the author of a message. Only [RoleUser] and [RoleAssistant] reach the provider; the
// system prompt travels in [github.com/agentctx/provider.Request.System].
type Role string

// The message roles.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
)

// Usage is the token usage the provider reported for one response. The context size of the call
// that produced it is [Usage.ContextTokens].
type Usage struct {
	InputTokens              int
	CacheCreationInputTokens int
	CacheReadInputTokens     int
	OutputTokens             int
	Extra                    map[string]json.RawMessage // cache_creation, service_tier, server_tool_use, …
	presence                 jsonobj.Presence
}

// ContextTokens is the prompt size of the call: input + cache creation + cache read tokens.
func (u *Usage) ContextTokens() int {
	if u == nil {
		return 0
	}
	return u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens
}

// Total is the prompt size plus the output: the tokens the conversation held after the call.
func (u *Usage) Total() int {
	if u == nil {
		return 0
	}
	return u.ContextTokens() + u.OutputTokens
}

// CacheDeletedInputTokens is the provider's "cache_deleted_input_tokens": the tokens the
// request's cache_edits deleted from its prompt cache (see [github.com/agentctx/agentctx.MicrocompactConfig.Cached]); 0 when
// the usage does not report it.
func (u *Usage) CacheDeletedInputTokens() int {
	if u == nil {
		return 0
	}
	raw, ok := u.Extra["cache_deleted_input_tokens"]
	if !ok {
		return 0
	}
	if n, ok := plainCount(raw); ok {
		return n
	}
	var n int
	if json.Unmarshal(raw, &n) != nil || n < 0 {
		return 0
	}
	return n
}

// plainCount reads raw JSON that is a plain non-negative integer (digits, no leading zero,
// JSON whitespace around) without allocating; !ok for anything else, which json.Unmarshal
// then decides.
func plainCount(raw []byte) (int, bool) {
	b := bytes.Trim(raw, " \t\r\n")
	if len(b) == 0 || len(b) > 18 || (b[0] == '0' && len(b) > 1) {
		return 0, false
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

func (u *Usage) fields() []jsonobj.Field {
	return []jsonobj.Field{
		{Key: "input_tokens", Ptr: &u.InputTokens},
		{Key: "cache_creation_input_tokens", Ptr: &u.CacheCreationInputTokens},
		{Key: "cache_read_input_tokens", Ptr: &u.CacheReadInputTokens},
		{Key: "output_tokens", Ptr: &u.OutputTokens},
	}
}

// MarshalJSON encodes the usage with its unknown fields.
func (u Usage) MarshalJSON() ([]byte, error) { return jsonobj.Encode(u.fields(), u.presence, u.Extra) }

// UnmarshalJSON decodes the usage, keeping unknown fields in Extra.
func (u *Usage) UnmarshalJSON(data []byte) (err error) {
	u.Extra, err = jsonobj.Decode(data, u.fields(), &u.presence)
	return err
}

// Message is the "message" of a user or assistant record: an Anthropic API message. For
// assistant records it is the API response object (id, model, stop_reason, usage); Claude Code
// writes one record per content block, all sharing ID.
type Message struct {
	ID            string
	Type          string // "message" on assistant records
	Role          Role
	Model         string
	Content       []Block
	StringContent bool // content was (and is encoded as) a bare string; see [ToolResult]
	StopReason    string
	StopSequence  string
	Usage         *Usage
	Extra         map[string]json.RawMessage
	presence      jsonobj.Presence
}

func (m *Message) fields() []jsonobj.Field { return m.appendFields(nil) }

// appendFields appends the message's fields to dst: a decoder reuses one slice for every line.
func (m *Message) appendFields(dst []jsonobj.Field) []jsonobj.Field {
	return append(dst,
		jsonobj.Field{Key: "id", Ptr: &m.ID},
		jsonobj.Field{Key: "type", Ptr: &m.Type},
		jsonobj.Field{Key: "role", Ptr: &m.Role},
		jsonobj.Field{Key: "model", Ptr: &m.Model},
		jsonobj.Field{Key: "content", Ptr: contentField{&m.Content, &m.StringContent}},
		jsonobj.Field{Key: "stop_reason", Ptr: &m.StopReason},
		jsonobj.Field{Key: "stop_sequence", Ptr: &m.StopSequence},
		jsonobj.Field{Key: "usage", Ptr: &m.Usage},
	)
}

// MarshalJSON encodes the message with its unknown fields.
func (m Message) MarshalJSON() ([]byte, error) {
	return jsonobj.Encode(m.fields(), m.presence, m.Extra)
}

// UnmarshalJSON decodes the message, keeping unknown fields in Extra.
func (m *Message) UnmarshalJSON(data []byte) (err error) {
	m.Extra, err = jsonobj.Decode(data, m.fields(), &m.presence)
	return err
}

// TextOf joins the text of the text blocks of bs, one per line.
func TextOf(bs []Block) string {
	var parts []string
	for _, b := range bs {
		if t, ok := b.(*Text); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// Truncated reports whether the response stopped at its output cap (stop_reason
// "max_tokens"): an agent passes provider.ErrOutputTruncated to Pipeline.Recover then.
func (m *Message) Truncated() bool { return m != nil && m.StopReason == "max_tokens" }
