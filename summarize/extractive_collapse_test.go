package summarize

import (
	"strings"
	"testing"

	"github.com/agentctx/agentctx/transcript"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A compaction of a view that holds collapse summaries carries them over, as it carries an
// earlier compaction's summary: each extractive one section by section, in the view's order
// (no line twice), a foreign one as it is. Without this, what the collapse producer folded was
// lost at the next compaction.
func TestExtractiveCarriesCollapses(t *testing.T) {
	fold := func(view ...Message) Message {
		s, err := Extractive{}.Summarize(t.Context(), Request{View: view, MaxOutputTokens: 2_000})
		require.NoError(t, err)
		return Message{Role: transcript.RoleUser, Source: SourceCollapse, Content: []transcript.Block{text(s.Text)}}
	}
	bash := func(id, command string) *transcript.ToolUse {
		return &transcript.ToolUse{ID: id, Name: "Bash", Input: []byte(`{"command":"` + command + `"}`)}
	}
	first := fold(
		Message{Role: transcript.RoleUser, Content: []transcript.Block{text("Never edit the files under gen/quillmarsh/ by hand.")}},
		Message{Role: transcript.RoleAssistant, Content: []transcript.Block{bash("t1", "go test ./internal/ostervane/...")}},
		Message{Role: transcript.RoleUser, Content: []transcript.Block{&transcript.ToolResult{ToolUseID: "t1", IsError: true, Content: []transcript.Block{text("panic: assignment to entry in nil map")}}}},
		Message{Role: transcript.RoleAssistant, Content: []transcript.Block{text("I now make the map in the ollanby constructor.")}},
	)
	second := fold(
		Message{Role: transcript.RoleUser, Content: []transcript.Block{text("I have decided: keep the state in the tarnwick store.")}},
		Message{Role: transcript.RoleAssistant, Content: []transcript.Block{bash("t2", "go vet ./...")}},
		Message{Role: transcript.RoleUser, Content: []transcript.Block{&transcript.ToolResult{ToolUseID: "t2", Content: []transcript.Block{text("ok")}}}},
	)
	foreign := Message{Role: transcript.RoleUser, Source: SourceCollapse, Content: []transcript.Block{text("<summary>The brindlemoor importer runs nightly.</summary>")}}
	view := []Message{first, second, foreign,
		{Role: transcript.RoleUser, Content: []transcript.Block{text("Now write the docs.")}},
		{Role: transcript.RoleAssistant, Content: []transcript.Block{text("Writing them.")}},
	}
	s, err := Extractive{}.Summarize(t.Context(), Request{View: view, MaxOutputTokens: 4_000})
	require.NoError(t, err)
	for _, want := range []string{"gen/quillmarsh/", "ostervane", "ollanby", "tarnwick", "brindlemoor", "Now write the docs."} {
		assert.Contains(t, s.Text, want)
	}
	assert.Equal(t, 1, strings.Count(s.Text, "`go test ./internal/ostervane/...` →"), "a carried command once")
	assert.Less(t, strings.Index(s.Text, "`go test ./internal/ostervane/...` →"), strings.Index(s.Text, "`go vet ./...` →"), "in the view's order")
	assert.Less(t, strings.Index(s.Text, "quillmarsh"), strings.Index(s.Text, "Now write the docs."), "the folded prompts first")
}
