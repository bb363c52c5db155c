package summarize

import (
	"fmt"
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

// A collapse's summary reaches a compaction as the pipeline's view holds it, inside its
// <collapsed id="…"> wrapper: an extractive one is still carried section by section, so that
// its prompts and decisions are weighed with the rest, not kept as one earlier summary cut to
// that section's share. With forty folds, the decision made in the second one survives.
func TestExtractiveCarriesWrappedCollapses(t *testing.T) {
	var view []Message
	for i := range 40 {
		prompt := fmt.Sprintf("Refactor part %d of the importer so that the reader no longer reaches into the schema.", i)
		if i == 1 {
			prompt += "\n\nI have decided: the session state goes into the tarnwick store, not into process memory."
		}
		s, err := Extractive{}.Summarize(t.Context(), Request{MaxOutputTokens: 2_000, View: []Message{
			{Role: transcript.RoleUser, Content: []transcript.Block{text(prompt)}},
			{Role: transcript.RoleAssistant, Content: []transcript.Block{text(fmt.Sprintf("Part %d is done.", i))}},
		}})
		require.NoError(t, err)
		body, err := FromReply(s.Text)
		require.NoError(t, err)
		wrapped := fmt.Sprintf("<collapsed id=\"c%02d\">\n%s\n</collapsed>", i, body)
		view = append(view, Message{Role: transcript.RoleUser, Source: SourceCollapse, Content: []transcript.Block{text(wrapped)}})
	}
	view = append(view, Message{Role: transcript.RoleUser, Content: []transcript.Block{text("Now write the docs.")}})
	s, err := Extractive{}.Summarize(t.Context(), Request{View: view, MaxOutputTokens: 700})
	require.NoError(t, err)
	assert.Contains(t, s.Text, "earlier user messages left out", "the oldest prompts do not all fit")
	assert.Contains(t, s.Text, "- I have decided: the session state goes into the tarnwick store", "the decision, listed once its prompt is left out")
	assert.NotContains(t, s.Text, "<collapsed", "carried by section, not as a wrapped blob")
	assert.NotContains(t, s.Text, "## Earlier summary")
	assert.Contains(t, s.Text, "Now write the docs.")
}
