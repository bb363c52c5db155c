package agentctx

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agentctx/agentctx/summarize"

	"github.com/agentctx/agentctx/transcript"

	"github.com/agentctx/agentctx/internal/memo"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPipelineChainMemoTurns prepares a sequence of transcripts on one Pipeline and checks that
// each request is the one a fresh Pipeline builds: appended turns, a turn built again with
// another last record, a fork from an earlier record, a shorter transcript, records with the
// uuids of the first transcript and other content.
func TestPipelineChainMemoTurns(t *testing.T) {
	k := newTK()
	for turn := range 6 {
		k.user(fmt.Sprintf("question %d", turn))
		tu := toolUse(fmt.Sprintf("toolu_%d", turn), "Read")
		k.assistant(text("Reading."), tu)
		k.results(result(tu.ID, fmt.Sprintf("contents of file %d", turn)))
		k.assistant(text(fmt.Sprintf("Read %d.", turn)))
	}
	full := k.recs
	// another returns records with full's uuids and parents and other texts.
	another := func() []transcript.Record {
		out := make([]transcript.Record, len(full))
		for i, r := range full {
			out[i] = r
			if r.Message != nil && r.Type == transcript.TypeUser && r.Message.Content != nil {
				if _, ok := r.Message.Content[0].(*transcript.Text); ok {
					m := *r.Message
					m.Content = []transcript.Block{text(fmt.Sprintf("another question %d", i))}
					out[i].Message = &m
				}
			}
		}
		return out
	}
	withLast := func(recs []transcript.Record, uuid, parent, q string) []transcript.Record {
		u := transcript.Record{Type: transcript.TypeUser, UUID: uuid, ParentUUID: parent, Message: &transcript.Message{Role: transcript.RoleUser, Content: []transcript.Block{text(q)}}}
		return append(append([]transcript.Record(nil), recs...), u)
	}
	turns := [][]transcript.Record{
		full[:8],
		full[:12],
		full,
		withLast(full, "next-1", full[len(full)-1].UUID, "one more"),
		withLast(full, "next-2", full[len(full)-1].UUID, "another one"),
		withLast(full[:10], "fork", full[7].UUID, "back to turn one"),
		full[:5],
		another(),
		full,
	}
	cfg := Config{Model: "claude-sonnet-4-5", ContextWindow: 1_000_000}
	now := k.t0.Add(time.Hour)
	p := newTestPipeline(t, cfg, now)
	for i, recs := range turns {
		got, want := prepareWarmAndFresh(t, p, cfg, now, recs)
		gb, err := got.Request.MarshalJSON()
		require.NoError(t, err)
		wb, err := want.Request.MarshalJSON()
		require.NoError(t, err)
		assert.Equal(t, string(wb), string(gb), "turn %d", i)
		assert.Equal(t, want.Leaf, got.Leaf, "turn %d", i)
		assert.Equal(t, want.Report.ChainRecords, got.Report.ChainRecords, "turn %d", i)
	}
}

// TestPipelineChainMemoConcurrent prepares the turns of more conversations than the memo keeps
// on one Pipeline from many goroutines at once, and checks each request against the one a
// fresh Pipeline builds: conversations served together never share an index.
func TestPipelineChainMemoConcurrent(t *testing.T) {
	cfg := Config{Model: "claude-sonnet-4-5", ContextWindow: 1_000_000}
	now := time.Date(2026, 1, 2, 5, 0, 0, 0, time.UTC)
	const convs, turns = memo.ConvEntries + 4, 6
	// histories[c][k] is conversation c after k+1 turns; want holds the fresh requests.
	histories := make([][][]transcript.Record, convs)
	want := make([][]string, convs)
	for c := range convs {
		k := newTK()
		for turn := range turns {
			k.user(fmt.Sprintf("conversation %d, question %d", c, turn))
			tu := toolUse(fmt.Sprintf("toolu_%d_%d", c, turn), "Read")
			k.assistant(text("Reading."), tu)
			k.results(result(tu.ID, fmt.Sprintf("file %d of conversation %d", turn, c)))
			k.assistant(text("Read."))
			histories[c] = append(histories[c], slices.Clone(k.recs))
			res, err := newTestPipeline(t, cfg, now).Prepare(t.Context(), Input{Records: k.recs})
			require.NoError(t, err)
			b, err := res.Request.MarshalJSON()
			require.NoError(t, err)
			want[c] = append(want[c], string(b))
		}
	}
	p := newTestPipeline(t, cfg, now)
	var wg sync.WaitGroup
	got := make([][]string, convs)
	errs := make([]error, convs)
	for c := range convs {
		wg.Go(func() {
			for _, recs := range histories[c] {
				res, err := p.Prepare(t.Context(), Input{Records: recs})
				if err == nil {
					var b []byte
					b, err = res.Request.MarshalJSON()
					got[c] = append(got[c], string(b))
				}
				if err != nil {
					errs[c] = err
					return
				}
			}
		})
	}
	wg.Wait()
	for c := range convs {
		require.NoError(t, errs[c], "conversation %d", c)
		assert.Equal(t, want[c], got[c], "conversation %d", c)
	}
}

// TestPipelineChainMemoCompacted prepares the turns of a session that compacted with a kept
// tail on one Pipeline and checks each against a fresh Pipeline: the turns after the
// compaction, a record hung off the summary (which the kept tail relinks), that record written
// again with another parent, a fork back before it, the transcript as it was before the
// compaction, and the compacted one again.
func TestPipelineChainMemoCompacted(t *testing.T) {
	k := compactTK()
	now := k.at(time.Second)
	cfg := Config{ContextWindow: 12_000, Compact: CompactConfig{Summarizer: summarize.Extractive{},
		Tail: TailConfig{MinTokens: 100, MinTextMessages: 1, MaxTokens: 1000}}}
	p := newTestPipeline(t, cfg, now)
	res, err := p.Prepare(t.Context(), Input{Records: k.recs})
	require.NoError(t, err)
	require.NotNil(t, res.Report.Compaction)
	require.Equal(t, CompactCompacted, res.Report.Compaction.Outcome, res.Report.Compaction.Reason)
	before := slices.Clone(k.recs)
	var anchor string
	for _, r := range res.Append {
		if r.IsCompactBoundary() {
			anchor = r.CompactMetadata.PreservedSegment.AnchorUUID
		}
	}
	require.NotEmpty(t, anchor)
	k.recs = append(k.recs, res.Append...)
	k.last = res.Leaf
	compacted := slices.Clone(k.recs)
	k.user("and the tests")
	k.assistant(text("Writing the tests."))
	grown := slices.Clone(k.recs)
	// onAnchor returns recs and a prompt hung off the summary.
	onAnchor := func(recs []transcript.Record, uuid, parent, q string) []transcript.Record {
		u := transcript.Record{Type: transcript.TypeUser, UUID: uuid, ParentUUID: parent, Timestamp: k.at(0).Format(time.RFC3339),
			Message: &transcript.Message{Role: transcript.RoleUser, StringContent: true, Content: []transcript.Block{text(q)}}}
		return append(slices.Clone(recs), u)
	}
	turns := [][]transcript.Record{
		compacted,
		grown,
		onAnchor(grown, "on-anchor", anchor, "a prompt written under the summary"),
		onAnchor(grown, "on-anchor", grown[len(grown)-1].UUID, "the same uuid, under the last response"),
		onAnchor(grown, "on-anchor-2", anchor, "another one under the summary"),
		onAnchor(compacted, "fork", res.Leaf, "back to just after the compaction"),
		before,
		grown,
	}
	for i, recs := range turns {
		got, want := prepareWarmAndFresh(t, p, cfg, now, recs)
		assert.Equal(t, string(requestBytes(t, want.Request)), string(requestBytes(t, got.Request)), "turn %d", i)
		assert.Equal(t, want.Leaf, got.Leaf, "turn %d", i)
		assert.Equal(t, want.Report.ChainRecords, got.Report.ChainRecords, "turn %d", i)
	}
}

// TestPipelineRewindWithoutUUID prepares a turn, rewinds the caller's slice in place to an
// earlier prompt and writes another exchange there, with records without a uuid (as Claude
// Code writes file-history snapshots) where the old ones stood: the request is the one a fresh
// Pipeline builds.
func TestPipelineRewindWithoutUUID(t *testing.T) {
	snapshot := transcript.Record{Type: "file-history-snapshot"}
	k := newTK()
	k.user("first question")
	k.assistant(text("first answer"))
	rewindAt := len(k.recs)
	k.user("second question")
	k.assistant(text("second answer"))
	k.recs = append(k.recs, snapshot, snapshot, snapshot, snapshot, snapshot)
	k.user("third question")
	buf := append(make([]transcript.Record, 0, 32), k.recs...)

	cfg := Config{Model: "claude-sonnet-4-5", ContextWindow: 1_000_000}
	now := k.t0.Add(time.Hour)
	p := newTestPipeline(t, cfg, now)
	_, err := p.Prepare(t.Context(), Input{Records: buf})
	require.NoError(t, err)

	// The rewind: another exchange from the second prompt on, as long, snapshots and all.
	k.recs, k.last = k.recs[:rewindAt], k.recs[rewindAt-1].UUID
	k.n += 100
	k.user("another second question")
	k.assistant(text("another second answer"))
	k.recs = append(k.recs, snapshot, snapshot, snapshot, snapshot, snapshot)
	k.user("another third question")
	buf = append(buf[:rewindAt], k.recs[rewindAt:]...)

	got, want := prepareWarmAndFresh(t, p, cfg, now, buf)
	assert.Equal(t, string(requestBytes(t, want.Request)), string(requestBytes(t, got.Request)))
	assert.Equal(t, want.Report.ChainRecords, got.Report.ChainRecords)
}

// prepareWarmAndFresh prepares recs on the warm Pipeline p and on a fresh one of the same
// config: what a memo gives, and what it must give.
func prepareWarmAndFresh(t *testing.T, p *Pipeline, cfg Config, now time.Time, recs []transcript.Record) (got, want Result) {
	t.Helper()
	got, err := p.Prepare(t.Context(), Input{Records: recs})
	require.NoError(t, err, "warm")
	want, err = newTestPipeline(t, cfg, now).Prepare(t.Context(), Input{Records: recs})
	require.NoError(t, err, "fresh")
	return got, want
}
