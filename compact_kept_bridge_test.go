package agentctx

import (
	"testing"
	"time"

	"github.com/agentctx/agentctx/summarize"
	"github.com/agentctx/agentctx/transcript"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCompactKeptTailBridgedFixture compacts a small session file with a torn line inside the
// tail a compaction keeps (line 45) and a record whose message field cannot be read (line 11).
// The kept tail is relinked across the torn line as the chain bridges it, so the compaction
// keeps its tail (rung tail, the head before the torn line) instead of going down to the
// latest input alone, and its reason says the tail is bridged; the break is reported once,
// and a resume from the appended records gives the same bytes.
func TestCompactKeptTailBridgedFixture(t *testing.T) {
	tr, err := transcript.ReadFile("testdata/damaged/kept-tail-bridge.jsonl", transcript.ReadOptions{})
	require.NoError(t, err)
	line := map[string]int{}
	for _, r := range tr.Records {
		line[r.UUID] = r.Line
	}
	now := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	p := newTestPipeline(t, Config{Model: "claude-sonnet-4-5", ContextWindow: 5_000, Compact: CompactConfig{Summarizer: summarize.Extractive{}}}, now)
	res, err := p.Prepare(t.Context(), Input{Records: tr.Records})
	require.NoError(t, err)
	c := res.Report.Compaction
	require.NotNil(t, c)
	require.Equal(t, CompactCompacted, c.Outcome, c.Reason)
	assert.Equal(t, CompactRungTail, c.Rung, c.Reason)
	assert.Equal(t, 5, c.Kept, c.Reason)
	assert.Contains(t, c.Reason, "the kept tail is bridged over line 45 (unreadable)")
	require.Len(t, res.Report.ChainProblems, 1, "the break is reported once")
	assert.Equal(t, 45, res.Report.ChainProblems[0].Line)
	assert.NotEmpty(t, res.Report.ChainProblems[0].Bridge)

	seg := res.Append[0].CompactMetadata.PreservedSegment
	require.NotNil(t, seg)
	assert.Less(t, line[seg.HeadUUID], 45, "the kept tail starts before the torn line")

	back := append(append([]transcript.Record(nil), tr.Records...), roundTrip(t, res.Append)...)
	next, err := p.Prepare(t.Context(), Input{Records: back})
	require.NoError(t, err)
	assert.Empty(t, next.Append)
	assert.Equal(t, string(requestBytes(t, res.Request)), string(requestBytes(t, next.Request)), "after resume")
}
