package agentctx

import (
	"testing"

	"github.com/agentctx/agentctx/internal/prose"
	"github.com/agentctx/agentctx/transcript"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A failed tool call's result that microcompact cleared reaches a summarizer as written; a
// cleared result that did not fail stays cleared.
func TestViewMessageRestoresClearedErrors(t *testing.T) {
	failed := &transcript.ToolResult{ToolUseID: "t1", IsError: true, StringContent: true, Content: []transcript.Block{text("exit 1: the migration table is locked")}}
	ok := &transcript.ToolResult{ToolUseID: "t2", StringContent: true, Content: []transcript.Block{text("42 rows")}}
	rec := &transcript.Record{Type: transcript.TypeUser, UUID: "u", Message: &transcript.Message{Role: transcript.RoleUser, Content: []transcript.Block{failed, ok}}}
	it := item{rec: rec, uuid: "u", role: transcript.RoleUser, blocks: []transcript.Block{clearedResult(failed), clearedResult(ok)}}
	m := viewMessage(&it)
	require.Len(t, m.Content, 2)
	assert.Same(t, failed, m.Content[0])
	assert.Equal(t, ClearedToolResultText, prose.ResultText(m.Content[1].(*transcript.ToolResult)))
	assert.Equal(t, ClearedToolResultText, prose.ResultText(it.blocks[0].(*transcript.ToolResult)), "the view itself is unchanged")
}
