package agentctx

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentctx/agentctx/summarize"

	"github.com/agentctx/agentctx/transcript"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCompactKeptTailAfterBridge compacts a session whose parent links break at an unreadable
// record inside the tail a compaction would keep. The kept tail is relinked across the break
// as the chain bridges it, and the compaction's reason says so; every prompt is still in the
// summary or the tail, and a resume gives the same bytes.
func TestCompactKeptTailAfterBridge(t *testing.T) {
	k := newTK()
	filler := strings.Repeat("the quick brown fox jumps over the lazy dog ", 40)
	for i := range 30 {
		k.user(fmt.Sprintf("question %d: %s", i, filler[:200]))
		k.assistant(text(fmt.Sprintf("answer %d: %s", i, filler)))
	}
	lost := len(k.recs) - 4 // the answer two turns before the end
	tr := readDamaged(t, k.recs, transcript.ReadOptions{}, func(lines []string) []string {
		lines[lost] = "{not json"
		return lines
	})
	now := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	cfg := Config{Model: "claude-sonnet-4-5", Compact: CompactConfig{Summarizer: summarize.Extractive{},
		Tail: TailConfig{MinTokens: 2000, MaxTokens: 6000}}}
	size := func() int {
		res, err := newTestPipeline(t, cfg, now).Prepare(t.Context(), Input{Records: tr.Records})
		require.NoError(t, err)
		require.Len(t, res.Report.ChainProblems, 1)
		require.NotEmpty(t, res.Report.ChainProblems[0].Bridge)
		return res.Report.Pressure.Tokens
	}()
	cfg.ContextWindow = max(size/2, 12_000)
	p := newTestPipeline(t, cfg, now)
	res, err := p.Prepare(t.Context(), Input{Records: tr.Records})
	require.NoError(t, err, res.Report.String())
	require.NotNil(t, res.Report.Compaction)
	require.Equal(t, CompactCompacted, res.Report.Compaction.Outcome, res.Report.String())
	require.Len(t, res.Report.ChainProblems, 1, "the break the summary was made across is reported")
	assert.Equal(t, lost+1, res.Report.ChainProblems[0].Line)
	assert.Contains(t, res.Report.Compaction.Reason, fmt.Sprintf("the kept tail is bridged over line %d (unreadable)", lost+1))
	assertPromptsFindable(t, "bridged", p, tr.Records, res.Request)

	back := append(append([]transcript.Record(nil), tr.Records...), roundTrip(t, res.Append)...)
	next, err := p.Prepare(t.Context(), Input{Records: back})
	require.NoError(t, err)
	assert.Equal(t, string(requestBytes(t, res.Request)), string(requestBytes(t, next.Request)), "after resume")
}
