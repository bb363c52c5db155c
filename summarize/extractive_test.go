package summarize

import (
	"strings"
	"testing"

	"github.com/agentctx/agentctx/transcript"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestExtractiveNotes(t *testing.T) {
	tests := []struct {
		name      string
		view      []Message
		decisions []string // in the Decisions section
		open      []string // in the Open items section
		not       []string // nowhere in the summary
	}{
		{
			name: "a rule at the end of a long message",
			view: []Message{
				{Role: transcript.RoleUser, Content: []transcript.Block{text(strings.Repeat("a line of the pasted log output here\n", 200) + "Please never touch the vendored copy of the parser.")}},
				{Role: transcript.RoleAssistant, Content: []transcript.Block{text("Understood.")}},
				{Role: transcript.RoleUser, Content: []transcript.Block{text("go on")}},
			},
			decisions: []string{"- Please never touch the vendored copy of the parser."},
		},
		{
			name: "a confirmation among questions",
			view: []Message{
				{Role: transcript.RoleUser, Content: []transcript.Block{text(strings.Repeat("What does the scheduler do with a task that times out? ", 60) + "\nYes, go with the bounded queue for the workers.")}},
				{Role: transcript.RoleUser, Content: []transcript.Block{text("next")}},
			},
			decisions: []string{"- Yes, go with the bounded queue for the workers."},
			not:       []string{"- What does the scheduler do"},
		},
		{
			name: "work put off, then another done",
			view: []Message{
				{Role: transcript.RoleUser, Content: []transcript.Block{text("fix the lexer")}},
				{Role: transcript.RoleAssistant, Content: []transcript.Block{text("Let me read the lexer first. I'll add a fuzz target for the tokenizer later, once the fix is in.")}},
				{Role: transcript.RoleAssistant, Content: []transcript.Block{text("I fixed the lexer and added a test for the empty input.")}},
			},
			open: []string{"- I'll add a fuzz target for the tokenizer later, once the fix is in."},
			not:  []string{"- Let me read the lexer first."},
		},
		{
			name: "work put off, then reported done",
			view: []Message{
				{Role: transcript.RoleUser, Content: []transcript.Block{text("fix the lexer")}},
				{Role: transcript.RoleAssistant, Content: []transcript.Block{text("The lexer is fixed. I'll update the changelog entry for the lexer afterwards.")}},
				{Role: transcript.RoleAssistant, Content: []transcript.Block{text("Done: I updated the changelog entry for the lexer.")}},
			},
			not: []string{"## Open items"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Extractive{}.Summarize(t.Context(), Request{View: tt.view, MaxOutputTokens: 600})
			require.NoError(t, err)
			sec := func(name string) string {
				_, after, _ := strings.Cut(s.Text, "## "+name+"\n")
				body, _, _ := strings.Cut(after, "\n## ")
				return body
			}
			for _, d := range tt.decisions {
				assert.Contains(t, sec(secDecisions), d, s.Text)
			}
			for _, o := range tt.open {
				assert.Contains(t, sec(secOpen), o, s.Text)
			}
			for _, n := range tt.not {
				assert.NotContains(t, s.Text, n)
			}
		})
	}
}

func text(s string) *transcript.Text { return &transcript.Text{Text: s} }
