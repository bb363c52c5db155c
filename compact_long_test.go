package agentctx

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/agentctx/agentctx/summarize"

	"github.com/agentctx/agentctx/transcript"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// liveLoop plays an agent runtime for n turns the way a real one drives the library: it appends
// the turn's input (a typed prompt, or the results of the last response's tool calls), calls
// Prepare, appends Result.Append, and answers as a model would — text and, usually, parallel
// tool calls, one record per block — parented on Result.Leaf, with usage reporting the
// request's size. With onAnchor, the record after a compaction hangs off the compaction's
// summary instead, as Claude Code writes it. It returns the records and every turn's Report.
func liveLoop(t testing.TB, p *Pipeline, n int, seed uint64, onAnchor bool) ([]transcript.Record, []Report) {
	rng := rand.New(rand.NewPCG(seed, 0x10095))
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var recs []transcript.Record
	var reps []Report
	leaf, count, msgN := "", 0, 0
	var pending []*transcript.ToolUse
	add := func(r transcript.Record, at time.Time) {
		count++
		r.UUID = fmt.Sprintf("%08x-0000-4000-8000-%012x", uint32(seed), count)
		r.ParentUUID, r.SessionID = leaf, "33333333-3333-4333-8333-333333333333"
		r.Timestamp = at.Format("2006-01-02T15:04:05.000Z")
		recs = append(recs, r)
		leaf = r.UUID
	}
	words := strings.Fields("the parser lexer token cache request window summary budget tool result file test build package error retry")
	prose := func(k int) string {
		var b strings.Builder
		for i := range k {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(words[rng.IntN(len(words))])
		}
		return b.String()
	}
	for turn := range n {
		at := t0.Add(time.Duration(turn) * 30 * time.Second)
		if len(pending) == 0 {
			add(transcript.Record{Type: transcript.TypeUser, Message: &transcript.Message{Role: transcript.RoleUser, StringContent: true,
				Content: []transcript.Block{&transcript.Text{Text: fmt.Sprintf("turn %d: %s", turn, prose(10+rng.IntN(40)))}}}}, at)
		} else {
			for _, tu := range pending {
				size := 200 + rng.IntN(1500)
				if rng.IntN(40) == 0 {
					size = 8_000 + rng.IntN(30_000)
				}
				add(transcript.Record{Type: transcript.TypeUser, Message: &transcript.Message{Role: transcript.RoleUser, Content: []transcript.Block{&transcript.ToolResult{ToolUseID: tu.ID,
					Content: []transcript.Block{&transcript.Text{Text: prose(size / 6)}}, StringContent: true, IsError: rng.IntN(15) == 0}}}}, at)
			}
		}
		res, err := p.Prepare(t.Context(), Input{Records: recs})
		require.NoError(t, err, "turn %d\n%s", turn, res.Report.String())
		if res.Report.Compaction != nil || turn%100 == 0 {
			checkConservation(t, fmt.Sprintf("turn %d", turn), Input{Records: recs}, res)
		}
		reps = append(reps, res.Report)
		recs = append(recs, res.Append...)
		leaf = res.Leaf
		if c := res.Report.Compaction; onAnchor && c != nil && c.Outcome == CompactCompacted {
			leaf = c.SummaryUUID
		}

		msgN++
		blocks := []transcript.Block{&transcript.Text{Text: prose(20 + rng.IntN(80))}}
		pending = nil
		if calls := rng.IntN(4); calls > 0 && turn < n-1 {
			for i := range calls {
				name := []string{"Read", "Bash", "Grep", "Edit"}[rng.IntN(4)]
				in, _ := json.Marshal(map[string]string{"file_path": fmt.Sprintf("/src/pkg%d/f%d.go", rng.IntN(30), i), "command": "go test ./..."})
				tu := &transcript.ToolUse{ID: fmt.Sprintf("toolu_%05d_%d", turn, i), Name: name, Input: in}
				blocks, pending = append(blocks, tu), append(pending, tu)
			}
		}
		for k, b := range blocks {
			add(transcript.Record{Type: transcript.TypeAssistant, Message: &transcript.Message{ID: fmt.Sprintf("msg_%06d", msgN), Type: "message", Role: transcript.RoleAssistant,
				Model: "claude-sonnet-4-5", Content: []transcript.Block{b},
				Usage: &transcript.Usage{InputTokens: res.Report.InputTokens, OutputTokens: 30 * (k + 1)}}}, at.Add(5*time.Second))
		}
	}
	return recs, reps
}

// TestLongSessionThroughCompaction runs a generated session turn by turn through auto-compact:
// every request it sends is under the threshold, compaction never fails, never trips the thrash
// guard and never runs twice in a row, and a resume of the final transcript gives the final
// request's bytes. The full 5,000 turns run without -short and the race detector, which play
// 1,000.
func TestLongSessionThroughCompaction(t *testing.T) {
	n := 5_000
	if testing.Short() || raceEnabled {
		n = 1_000
	}
	p := newTestPipeline(t, Config{Model: "claude-sonnet-4-5", ContextWindow: 60_000, Compact: CompactConfig{Summarizer: summarize.Extractive{}}}, time.Date(2026, 1, 3, 0, 0, 0, 0, time.UTC))
	recs, reps := liveLoop(t, p, n, 7, false)
	compactions, last, peak := 0, -10, 0
	for i, r := range reps {
		peak = max(peak, r.Pressure.Tokens)
		assert.Less(t, r.Pressure.Tokens, p.Levels().Threshold, "turn %d: under the threshold\n%s", i, r.String())
		c := r.Compaction
		if c == nil {
			continue
		}
		require.Equal(t, CompactCompacted, c.Outcome, "turn %d: %s", i, c.Reason)
		assert.False(t, c.Thrash, "turn %d", i)
		assert.Greater(t, i-last, 1, "turn %d: compacted on consecutive turns", i)
		compactions++
		last = i
	}
	assert.Positive(t, compactions)
	t.Logf("%d turns, %d records: %d compactions, peak pressure %d (threshold %d)", n, len(recs), compactions, peak, p.Levels().Threshold)

	// The final state resumes to the same bytes.
	final, err := p.Prepare(t.Context(), Input{Records: recs})
	require.NoError(t, err)
	back, err := transcript.Read(strings.NewReader(jsonlOf(t, recs)), "long", transcript.ReadOptions{Strict: true})
	require.NoError(t, err)
	again, err := p.Prepare(t.Context(), Input{Records: back.Records})
	require.NoError(t, err)
	assert.Equal(t, string(requestBytes(t, final.Request)), string(requestBytes(t, again.Request)))
}

// jsonlOf encodes records as a transcript file would hold them, with the appender's encoder.
func jsonlOf(t testing.TB, recs []transcript.Record) string {
	t.Helper()
	b := []byte{'\n'} // the appender starts a batch on a new line
	for i := range recs {
		line, err := recs[i].MarshalLine()
		require.NoError(t, err)
		b = append(append(b, line...), '\n')
	}
	return string(b)
}

// TestLongSessionAnchorParents runs the live loop with the records after each compaction
// hanging off its summary (Claude Code's convention, relinked after the kept tail): every turn
// still holds what the previous request held, nothing is lost, and a resume gives the same bytes.
func TestLongSessionAnchorParents(t *testing.T) {
	p := newTestPipeline(t, Config{Model: "claude-sonnet-4-5", ContextWindow: 40_000, Compact: CompactConfig{Summarizer: summarize.Extractive{}}}, time.Date(2026, 1, 3, 0, 0, 0, 0, time.UTC))
	recs, reps := liveLoop(t, p, 400, 11, true)
	compactions := 0
	for i, r := range reps {
		assert.Less(t, r.Pressure.Tokens, p.Levels().Threshold, "turn %d", i)
		if c := r.Compaction; c != nil {
			require.Equal(t, CompactCompacted, c.Outcome, "turn %d: %s", i, c.Reason)
			compactions++
		}
	}
	assert.Greater(t, compactions, 2)
	final, err := p.Prepare(t.Context(), Input{Records: recs})
	require.NoError(t, err)
	back, err := transcript.Read(strings.NewReader(jsonlOf(t, recs)), "long", transcript.ReadOptions{Strict: true})
	require.NoError(t, err)
	again, err := p.Prepare(t.Context(), Input{Records: back.Records})
	require.NoError(t, err)
	assert.Equal(t, string(requestBytes(t, final.Request)), string(requestBytes(t, again.Request)))
	assert.Empty(t, final.Append)
}
