package transcript

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestToolName(t *testing.T) {
	call := func(typ RecordType, apiErr bool, uses ...[2]string) *Record {
		m := &Message{Role: RoleAssistant}
		if typ == TypeUser {
			m.Role = RoleUser
		}
		for _, u := range uses {
			m.Content = append(m.Content, &ToolUse{ID: u[0], Name: u[1]})
		}
		return &Record{Type: typ, Message: m, IsAPIErrorMessage: apiErr}
	}
	records := []*Record{
		call(TypeAssistant, false, [2]string{"a", "Read"}, [2]string{"b", "Bash"}),
		call(TypeAssistant, false, [2]string{"b", "Grep"}, [2]string{"b", "Glob"}),
		call(TypeAssistant, true, [2]string{"c", "Edit"}),
		call(TypeUser, false, [2]string{"d", "Write"}),
		{Type: TypeAssistant},
	}
	names := ToolNames(records)
	assert.Equal(t, map[string]string{"a": "Read", "b": "Glob"}, names)
	for _, tc := range []struct {
		id, want string
	}{
		{"a", "Read"},
		{"b", "Glob"}, // the later name
		{"c", ""},     // an API error message's
		{"d", ""},     // a user record's
		{"x", ""},
	} {
		t.Run(tc.id, func(t *testing.T) {
			assert.Equal(t, tc.want, ToolName(records, tc.id))
			assert.Equal(t, names[tc.id], ToolName(records, tc.id))
		})
	}
}
