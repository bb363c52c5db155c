package agentctx

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentctx/agentctx/provider"

	"github.com/agentctx/agentctx/transcript"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ccCompacted builds a session compacted the way Claude Code writes one with a kept tail: the
// records before the boundary stay, the boundary (parentUuid null) names the kept records in
// compactMetadata.preservedSegment, the summary hangs off the boundary, and what was written
// after the summary hangs off the anchor (the summary) — to be relinked after the tail.
func ccCompacted(anchorIsBoundary bool) (*tk, map[string]string) {
	k := newTK()
	ids := map[string]string{}
	ids["old"] = k.user("the old task").UUID
	k.assistant(text("old answer"))
	ids["head"] = k.user("keep this prompt").UUID
	k.assistant(text("reading"), toolUse("t1", "Read"), toolUse("t2", "Read"))
	k.results(result("t1", "one"), result("t2", "two"))
	tail := k.assistant(text("kept answer"))
	ids["tail"] = tail.UUID

	b := k.next(transcript.TypeSystem)
	b.Subtype, b.ParentUUID, b.LogicalParentUUID = transcript.SubtypeCompactBoundary, "", tail.UUID
	b.CompactMetadata = &transcript.CompactMetadata{Trigger: "auto", PreTokens: 150_000}
	k.add(b)
	ids["boundary"] = b.UUID
	s := k.next(transcript.TypeUser)
	s.ParentUUID, s.IsCompactSummary, s.IsVisibleInTranscriptOnly = b.UUID, true, true
	s.Message = &transcript.Message{Role: transcript.RoleUser, StringContent: true, Content: []transcript.Block{text("This session is being continued. Summary: the old task.")}}
	k.add(s)
	ids["summary"] = s.UUID
	anchor := s.UUID
	if anchorIsBoundary {
		anchor = b.UUID
	}
	k.recs[len(k.recs)-2].CompactMetadata.PreservedSegment = &transcript.PreservedSegment{HeadUUID: ids["head"], AnchorUUID: anchor, TailUUID: tail.UUID}
	ids["anchor"] = anchor
	// A record written after the compaction hangs off the anchor when the summary is the
	// anchor; with the boundary as anchor the kept tail comes before the summary, and new
	// records follow the summary.
	k.last = s.UUID
	ids["after"] = k.user("a new prompt after the compaction").UUID
	return k, ids
}

func TestBuildChainPreservedSegment(t *testing.T) {
	k, ids := ccCompacted(false)
	c, err := transcript.BuildChain(k.recs, transcript.ChainOptions{})
	require.NoError(t, err)
	require.NotNil(t, c.Preserved, c.SegmentProblem)
	var got []string
	for _, r := range c.Messages() {
		got = append(got, describe(r))
	}
	assert.Equal(t, []string{
		"This session is being continued. Summary: the old task.|user",
		"keep this prompt|user",
		"reading|assistant", "tool_use t1|assistant", "tool_use t2|assistant", // the split response
		"result t1|user", "result t2|user", // the results of its calls, re-attached
		"kept answer|assistant",
		"a new prompt after the compaction|user",
	}, got, "boundary, summary, the kept tail in order, then what came after")
	assert.Equal(t, ids["boundary"], c.Boundary.UUID)
	assert.Empty(t, c.Unanswered)
	for _, r := range c.Records {
		assert.NotEqual(t, ids["old"], r.UUID, "records before the kept tail stay out")
	}

	// The request: the summary, then the tail, then the new prompt — and valid.
	p := newTestPipeline(t, Config{}, k.at(0))
	res, err := p.Prepare(t.Context(), Input{Records: k.recs})
	require.NoError(t, err)
	require.NoError(t, provider.Validate(res.Request, provider.ValidateOptions{}))
	assert.Contains(t, transcript.TextOf(res.Request.Messages[0].Content), "Summary: the old task.")
	assert.Contains(t, transcript.TextOf(res.Request.Messages[0].Content), "keep this prompt")
	assert.Equal(t, 0, res.Report.Pressure.Anchor, "the kept tail's usage predates the compaction: no anchor")
}

func TestBuildChainPreservedSegmentAnchorBoundary(t *testing.T) {
	// With the boundary as anchor, the summary (the anchor's other child) follows the tail.
	k, _ := ccCompacted(true)
	c, err := transcript.BuildChain(k.recs, transcript.ChainOptions{})
	require.NoError(t, err)
	require.NotNil(t, c.Preserved, c.SegmentProblem)
	var got []string
	for _, r := range c.Messages() {
		got = append(got, describe(r))
	}
	assert.Equal(t, []string{
		"keep this prompt|user", "reading|assistant", "tool_use t1|assistant", "tool_use t2|assistant",
		"result t1|user", "result t2|user", "kept answer|assistant",
		"This session is being continued. Summary: the old task.|user",
		"a new prompt after the compaction|user",
	}, got)
}

func TestBuildChainPreservedSegmentLeafIsAnchor(t *testing.T) {
	// Nothing written after the summary: the leaf is the kept tail's end, not the summary.
	k, ids := ccCompacted(false)
	k.recs = k.recs[:len(k.recs)-1] // drop "a new prompt after the compaction"
	c, err := transcript.BuildChain(k.recs, transcript.ChainOptions{})
	require.NoError(t, err)
	require.NotNil(t, c.Preserved)
	assert.Equal(t, ids["tail"], c.Leaf.UUID)
	assert.Len(t, c.Messages(), 8)
}

func TestBuildChainPreservedSegmentProblems(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(k *tk, ids map[string]string)
		problem string
	}{
		{"missing head", func(k *tk, ids map[string]string) { seg(k).HeadUUID = "nope" }, "does not hold"},
		{"tail does not lead to head", func(k *tk, ids map[string]string) { seg(k).HeadUUID = ids["after"] }, "head must come before"},
		{"broken walk", func(k *tk, ids map[string]string) {
			seg(k).HeadUUID = ids["old"] // reachable, but swap the tail for an unrelated record
			seg(k).TailUUID = ids["summary"]
		}, "does not lead back"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, ids := ccCompacted(false)
			tt.mutate(k, ids)
			c, err := transcript.BuildChain(k.recs, transcript.ChainOptions{})
			require.NoError(t, err)
			assert.Nil(t, c.Preserved)
			assert.Contains(t, c.SegmentProblem, tt.problem)
			// Without the relink the chain is the boundary, the summary and what follows.
			assert.Equal(t, ids["boundary"], c.Boundary.UUID)
		})
	}
	t.Run("a later boundary without a segment makes it stale", func(t *testing.T) {
		k, _ := ccCompacted(false)
		b := k.next(transcript.TypeSystem)
		b.Subtype, b.ParentUUID = transcript.SubtypeCompactBoundary, ""
		k.add(b)
		k.user("after the second compaction")
		c, err := transcript.BuildChain(k.recs, transcript.ChainOptions{})
		require.NoError(t, err)
		assert.Nil(t, c.Preserved)
		assert.Len(t, c.Messages(), 1)
	})
	t.Run("walks through boundaries ignore segments", func(t *testing.T) {
		k, ids := ccCompacted(false)
		c, err := transcript.BuildChain(k.recs, transcript.ChainOptions{ThroughBoundaries: true})
		require.NoError(t, err)
		assert.Nil(t, c.Preserved)
		assert.Equal(t, ids["old"], c.Records[0].UUID)
	})
}

func seg(k *tk) *transcript.PreservedSegment {
	for i := range k.recs {
		if k.recs[i].IsCompactBoundary() {
			return k.recs[i].CompactMetadata.PreservedSegment
		}
	}
	return nil
}

// describe names a message record by its first block.
func describe(r *transcript.Record) string {
	switch b := r.Message.Content[0].(type) {
	case *transcript.ToolUse:
		return "tool_use " + b.ID + "|" + string(r.Type)
	case *transcript.ToolResult:
		return "result " + b.ToolUseID + "|" + string(r.Type)
	}
	return transcript.TextOf(r.Message.Content) + "|" + string(r.Type)
}

// TestPreservedSegmentRealSession reads a real Claude Code session (bundled) compacted with a
// kept tail in Claude Code's format. The corpus holds no such file, so the compaction records
// are written here the way Claude Code writes them — a boundary naming head, anchor (the
// summary) and tail, the summary hanging off the boundary, an attachment hanging off the
// anchor, then a new prompt — on top of the real records. The request must show the summary,
// then the kept messages exactly as the uncompacted session's request had them, in order, then
// the new prompt.
func TestPreservedSegmentRealSession(t *testing.T) {
	tr, err := transcript.ReadFile(filepath.Join("testdata", "sessions", "claude-code-log", "worktrees-ef958aa1.jsonl"), transcript.ReadOptions{Strict: true})
	require.NoError(t, err)
	recs := tr.Records
	chain, err := transcript.BuildChain(recs, transcript.ChainOptions{})
	require.NoError(t, err)
	p := newTestPipeline(t, Config{Microcompact: MicrocompactConfig{Disable: true}}, time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	before, err := p.Prepare(t.Context(), Input{Records: recs})
	require.NoError(t, err)

	// The head: the user prompt five typed prompts back on the leaf's path.
	byUUID := recordsByUUID(recs)
	var head *transcript.Record
	prompts := 0
	for r := chain.Leaf; r != nil && prompts < 3; r = byUUID[r.ParentUUID] {
		if r.Type == transcript.TypeUser && r.Message != nil && r.Message.StringContent && !r.IsMeta {
			head, prompts = r, prompts+1
		}
	}
	require.NotNil(t, head)
	leaf := chain.Leaf
	mk := func(r transcript.Record) transcript.Record {
		r.SessionID, r.Timestamp = leaf.SessionID, "2026-11-30T12:00:00.000Z"
		return r
	}
	boundary := mk(transcript.Record{Type: transcript.TypeSystem, Subtype: transcript.SubtypeCompactBoundary, UUID: "9b0c1a11-0000-4000-8000-000000000001",
		LogicalParentUUID: leaf.UUID, Content: mustJSON("Conversation compacted"), Level: "info",
		CompactMetadata: &transcript.CompactMetadata{Trigger: transcript.TriggerAuto, PreTokens: 66_000}})
	summary := mk(transcript.Record{Type: transcript.TypeUser, UUID: "9b0c1a11-0000-4000-8000-000000000002", ParentUUID: boundary.UUID,
		IsCompactSummary: true, IsVisibleInTranscriptOnly: true,
		Message: &transcript.Message{Role: transcript.RoleUser, StringContent: true, Content: []transcript.Block{&transcript.Text{Text: "This session is being continued from a previous conversation that ran out of context. Summary: three teammates researched and merged their documents."}}}})
	boundary.CompactMetadata.PreservedSegment = &transcript.PreservedSegment{HeadUUID: head.UUID, AnchorUUID: summary.UUID, TailUUID: leaf.UUID}
	att := mk(transcript.Record{Type: transcript.TypeAttachment, UUID: "9b0c1a11-0000-4000-8000-000000000003", ParentUUID: summary.UUID,
		Attachment: []byte(`{"type":"hook_success","content":"ok"}`)})
	prompt := mk(transcript.Record{Type: transcript.TypeUser, UUID: "9b0c1a11-0000-4000-8000-000000000004", ParentUUID: att.UUID,
		Message: &transcript.Message{Role: transcript.RoleUser, StringContent: true, Content: []transcript.Block{&transcript.Text{Text: "What is left to do?"}}}})
	compacted := append(append([]transcript.Record(nil), recs...), roundTrip(t, []transcript.Record{boundary, summary, att, prompt})...)

	c, err := transcript.BuildChain(compacted, transcript.ChainOptions{})
	require.NoError(t, err)
	require.NotNil(t, c.Preserved, c.SegmentProblem)
	assert.Equal(t, prompt.UUID, c.Leaf.UUID)
	after, err := p.Prepare(t.Context(), Input{Records: compacted})
	require.NoError(t, err)
	require.NoError(t, provider.Validate(after.Request, provider.ValidateOptions{}))

	// The kept messages: the uncompacted request's messages from the head's on.
	var kept []provider.Message
	for i, m := range before.Request.Messages {
		if transcript.TextOf(m.Content) == transcript.TextOf(head.Message.Content) {
			kept = before.Request.Messages[i:]
			break
		}
	}
	require.NotEmpty(t, kept)
	got := after.Request.Messages
	require.Len(t, got, len(kept), "the summary merged with the first kept prompt, the kept messages, the new prompt merged with the last")
	assert.True(t, strings.HasPrefix(transcript.TextOf(got[0].Content), transcript.TextOf(summary.Message.Content)))
	assert.Contains(t, transcript.TextOf(got[0].Content), transcript.TextOf(head.Message.Content))
	for i := 1; i < len(kept)-1; i++ {
		assert.Equal(t, string(mustMarshalBlocks(t, kept[i].Content)), string(mustMarshalBlocks(t, got[i].Content)), "kept message %d", i)
	}
	last := transcript.TextOf(got[len(got)-1].Content)
	assert.Contains(t, last, transcript.TextOf(kept[len(kept)-1].Content))
	assert.Contains(t, last, "What is left to do?")
}

func mustMarshalBlocks(t *testing.T, bs []transcript.Block) []byte {
	t.Helper()
	var out []byte
	for _, b := range bs {
		c, _ := stripCacheControl(b)
		enc, err := transcript.MarshalBlock(c)
		require.NoError(t, err)
		out = append(out, enc...)
	}
	return out
}
