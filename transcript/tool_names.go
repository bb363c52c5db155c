package transcript

// ToolNames maps the id of each tool_use block of records' assistant messages (not API error
// messages) to its tool's name; an id used twice takes its later name.
func ToolNames(records []*Record) map[string]string {
	m := map[string]string{}
	for _, r := range records {
		if !isToolCaller(r) {
			continue
		}
		for _, b := range r.Message.Content {
			if tu, ok := b.(*ToolUse); ok {
				m[tu.ID] = tu.Name
			}
		}
	}
	return m
}

// ToolName returns the name ToolNames(records) gives id, scanning records from their end and
// without a map: a tool result's call is near the end of the records it answers.
func ToolName(records []*Record, id string) string {
	for i := len(records) - 1; i >= 0; i-- {
		if r := records[i]; isToolCaller(r) {
			for j := len(r.Message.Content) - 1; j >= 0; j-- {
				if tu, ok := r.Message.Content[j].(*ToolUse); ok && tu.ID == id {
					return tu.Name
				}
			}
		}
	}
	return ""
}

// isToolCaller reports whether r is an assistant message whose tool calls count: not an API
// error message.
func isToolCaller(r *Record) bool {
	return r.Type == TypeAssistant && r.IsConversation() && !r.IsAPIErrorMessage
}
