package prose

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentctx/agentctx/transcript"
)

// InputString returns the first of keys that the tool input holds as a non-empty string.
func InputString(input json.RawMessage, keys ...string) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(input, &m) != nil {
		return ""
	}
	for _, k := range keys {
		var s string
		if json.Unmarshal(m[k], &s) == nil && s != "" {
			return s
		}
	}
	return ""
}

// Todos renders a TodoWrite input's todo list, one item a line.
func Todos(input json.RawMessage) string {
	var in struct {
		Todos []struct {
			Content string `json:"content"`
			Status  string `json:"status"`
		} `json:"todos"`
	}
	if json.Unmarshal(input, &in) != nil || len(in.Todos) == 0 {
		return ""
	}
	var b strings.Builder
	for i, td := range in.Todos {
		fmt.Fprintf(&b, "%d. [%s] %s\n", i+1, td.Status, td.Content)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// ResultText is the full content of a tool result as stored: the text of text blocks and
// the JSON of other blocks, joined by newlines.
func ResultText(tr *transcript.ToolResult) string {
	parts := make([]string, 0, len(tr.Content))
	for _, b := range tr.Content {
		if tx, ok := b.(*transcript.Text); ok {
			parts = append(parts, tx.Text)
			continue
		}
		if enc, err := transcript.MarshalBlock(b); err == nil {
			parts = append(parts, string(enc))
		}
	}
	return strings.Join(parts, "\n")
}
