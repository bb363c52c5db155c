package agentctx

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentctx/agentctx/internal/memo"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// memoRecords returns records with the given uuids ("" for a record without one). A uuid
// written "uuid!" is a compact boundary's; one written "uuid>parent" has that parentUuid.
func memoRecords(uuids ...string) []Record {
	out := make([]Record, len(uuids))
	for i, u := range uuids {
		u, parent, _ := strings.Cut(u, ">")
		u, boundary := strings.CutSuffix(u, "!")
		out[i] = Record{Type: TypeUser, UUID: u, ParentUUID: parent}
		if boundary {
			out[i].Type, out[i].Subtype = TypeSystem, SubtypeCompactBoundary
		}
	}
	return out
}

// TestChainMemoIndex runs a memo through sequences of transcripts and checks each index it
// gives against one built from nothing: what a turn extends, truncates or builds anew is
// never seen in the result.
func TestChainMemoIndex(t *testing.T) {
	// decoded returns the uuids again in new strings, as a transcript decoded again has them.
	decoded := func(uuids ...string) []string {
		out := make([]string, len(uuids))
		for i, u := range uuids {
			out[i] = strings.Clone(u)
		}
		return out
	}
	tests := []struct {
		name  string
		turns [][]string
	}{
		{"appended", [][]string{{"a", "b"}, {"a", "b", "c"}, {"a", "b", "c", "d", "e"}}},
		{"the same records again", [][]string{{"a", "b", "c"}, {"a", "b", "c"}}},
		{"another last record each turn", [][]string{{"a", "b", "c", "x1"}, {"a", "b", "c", "x2"}, {"a", "b", "c", "x3"}}},
		{"a prefix", [][]string{{"a", "b", "c", "d"}, {"a", "b", "c"}, {"a"}}},
		{"a fork", [][]string{{"a", "b", "c", "d"}, {"a", "b", "c", "e", "f"}}},
		{"a uuid changed in the middle", [][]string{{"a", "b", "c", "d"}, {"a", "b", "z", "d"}}},
		{"another transcript", [][]string{{"a", "b", "c"}, {"p", "q"}, {"a", "b", "c", "d"}}},
		{"the first record changed", [][]string{{"a", "b", "c"}, {"z", "b", "c"}}},
		{"duplicates: the first occurrence stays", [][]string{{"a", "b", "a"}, {"a", "b", "a", "b"}, {"a", "b"}, {"a", "c", "a", "c"}}},
		{"a duplicate dropped that came first", [][]string{{"a", "b", "c", "b"}, {"a", "x", "c", "b"}}},
		{"records without uuid", [][]string{{"a", "", "b"}, {"a", "", "b", ""}, {"a", ""}, {"a", "", "", "c"}}},
		{"empty transcripts", [][]string{{}, {"a"}, {}, {"a", "b"}}},
		{"decoded again", [][]string{{"a", "b", "c"}, decoded("a", "b", "c", "d"), decoded("a", "b", "c", "d", "e")}},
		{"boundaries appended, forked, truncated", [][]string{{"a", "B1!", "b"}, {"a", "B1!", "b", "B2!", "c"}, {"a", "B1!", "x", "B3!"}, {"a"}, {"a", "B1!"}}},
		{"the same uuid, now a boundary or not", [][]string{{"a", "b", "c", "d"}, {"a", "b", "c", "d!"}, {"a", "b", "c", "d"}}},
		{"the same uuid, another parent", [][]string{{"a", "b>a", "c>a", "d>a"}, {"a", "b>a", "c>a", "d>b"}, {"a", "b>a", "c>a", "d>a", "e>a"}}},
		{"children: appended, forked, another parent", [][]string{
			{"a", "b>a", "c>a"}, {"a", "b>a", "c>a", "d>b", "e>a"}, {"a", "b>a", "x>a"}, {"a", "b>a", "x>a", "y>b"}, {"a"}, {"a", "q>a", "r>a"},
		}},
		{"children: the last record written again", [][]string{{"a", "b>a", "c>a", "d>a", "e>a"}, {"a", "b>a", "c>a", "d>a", "z>b"}, {"a", "b>a", "c>a", "d>a", "y>a"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &ChainCache{}
			for k, uuids := range tt.turns {
				records := memoRecords(uuids...)
				got := m.index(records)
				want := newChainIndex(len(records))
				want.extend(records)
				assert.Equal(t, want.byUUID, got.byUUID, "turn %d", k)
				assert.Equal(t, want.withUUID, got.withUUID, "turn %d", k)
				assert.Equal(t, want.uuids, got.uuids, "turn %d", k)
				// pos compares positions whether a slice is nil or empty.
				pos := func(p []int) []int { return append([]int{}, p...) }
				assert.Equal(t, pos(want.boundaries), pos(got.boundaries), "turn %d: boundaries", k)
				for _, parent := range []string{"a", "b"} {
					// Asked for one parent and then another, the cache answers as a fresh scan.
					assert.Equal(t, pos(want.children(records, parent)), pos(got.children(records, parent)), "turn %d: children of %s", k, parent)
				}
				assert.Equal(t, pos(want.children(records, "a")), pos(got.children(records, "a")), "turn %d: children of a again", k)
				m.keep(got)
			}
		})
	}
}

// TestChainMemoBounded checks that the memo keeps the indexes of the last conversations it
// served, no more, and that a conversation it still holds is extended, not indexed anew.
func TestChainMemoBounded(t *testing.T) {
	m := &ChainCache{}
	for c := range 2 * memo.ConvEntries {
		ix := m.index(memoRecords(fmt.Sprintf("conv-%d", c), "b"))
		m.keep(ix)
		assert.LessOrEqual(t, m.ix.Len(), memo.ConvEntries)
	}
	last := fmt.Sprintf("conv-%d", 2*memo.ConvEntries-1)
	ix := m.take(memoRecords(last, "b", "c"))
	require.NotNil(t, ix, "the last conversation's index is kept")
	assert.Equal(t, []string{last, "b"}, ix.uuids)
	assert.Equal(t, memo.ConvEntries-1, m.ix.Len(), "an index in use is out of the memo")
	m.keep(ix)

	// Without a memo (BuildChain's own calls) every index is new.
	var none *ChainCache
	ix = none.index(memoRecords("a", "b", "a"))
	assert.Equal(t, map[string]int{"a": 0, "b": 1}, ix.byUUID)
	none.keep(ix)
}

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
	another := func() []Record {
		out := make([]Record, len(full))
		for i, r := range full {
			out[i] = r
			if r.Message != nil && r.Type == TypeUser && r.Message.Content != nil {
				if _, ok := r.Message.Content[0].(*Text); ok {
					m := *r.Message
					m.Content = []Block{text(fmt.Sprintf("another question %d", i))}
					out[i].Message = &m
				}
			}
		}
		return out
	}
	withLast := func(recs []Record, uuid, parent, q string) []Record {
		u := Record{Type: TypeUser, UUID: uuid, ParentUUID: parent, Message: &Message{Role: RoleUser, Content: []Block{text(q)}}}
		return append(append([]Record(nil), recs...), u)
	}
	turns := [][]Record{
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

// TestBuildChainSteadyAllocs checks that a Pipeline's chain of a steady turn (the previous
// records and one new prompt, the memo warm) allocates as much at 2,000 turns as at 200: the
// chain itself, its records and positions, whatever the history's length.
func TestBuildChainSteadyAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("under the race detector sync.Pool drops some of what is put back: allocations are counted without it")
	}
	allocs := map[int]float64{}
	for _, turns := range []int{200, 2000} {
		k := newTK()
		k.readTurns(turns)
		recs := k.recs
		input := append(make([]Record, 0, len(recs)+1), recs...)
		m := &ChainCache{}
		i := 0
		run := func() {
			i++
			u := Record{Type: TypeUser, UUID: fmt.Sprintf("steady-%d", i), ParentUUID: recs[len(recs)-1].UUID,
				Message: &Message{Role: RoleUser, Content: []Block{text("next")}}}
			c, err := buildChain(append(input[:len(recs)], u), ChainOptions{}, m)
			if err != nil || len(c.Records) != len(recs)+1 {
				t.Fatalf("chain of %d records, want %d: %v", len(c.Records), len(recs)+1, err)
			}
		}
		run() // the memo warm
		allocs[turns] = testing.AllocsPerRun(20, run)
	}
	t.Logf("allocations of a steady chain (the new record included): %v", allocs)
	assert.LessOrEqual(t, allocs[200], 8.0, "allocations of a steady chain: %v", allocs)
	assert.Equal(t, allocs[200], allocs[2000], "allocations do not grow with the history: %v", allocs)
}

// TestPipelineChainMemoConcurrent prepares the turns of more conversations than the memo keeps
// on one Pipeline from many goroutines at once, and checks each request against the one a
// fresh Pipeline builds: conversations served together never share an index.
func TestPipelineChainMemoConcurrent(t *testing.T) {
	cfg := Config{Model: "claude-sonnet-4-5", ContextWindow: 1_000_000}
	now := time.Date(2026, 1, 2, 5, 0, 0, 0, time.UTC)
	const convs, turns = memo.ConvEntries + 4, 6
	// histories[c][k] is conversation c after k+1 turns; want holds the fresh requests.
	histories := make([][][]Record, convs)
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
	cfg := Config{ContextWindow: 12_000, Compact: CompactConfig{Summarizer: Extractive{},
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
	onAnchor := func(recs []Record, uuid, parent, q string) []Record {
		u := Record{Type: TypeUser, UUID: uuid, ParentUUID: parent, Timestamp: k.at(0).Format(time.RFC3339),
			Message: &Message{Role: RoleUser, StringContent: true, Content: []Block{text(q)}}}
		return append(slices.Clone(recs), u)
	}
	turns := [][]Record{
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

// TestChainMemoCorpusPrefixes replays every corpus session as a sequence of turns (the file
// cut after a growing number of records, then cut back once, as a rewind) through one memo and
// checks each chain against one built without it: every field of the chain but its record
// scan, the records by address.
func TestChainMemoCorpusPrefixes(t *testing.T) {
	for _, path := range corpusFiles(t) {
		name, _ := filepath.Rel(corpusDir(t), path)
		t.Run(name, func(t *testing.T) {
			tr, err := ReadFile(path, ReadOptions{})
			require.NoError(t, err)
			recs := tr.Records
			n := len(recs)
			var cuts []int
			for k := 1; k <= 40; k++ {
				cuts = append(cuts, n*k/40)
			}
			cuts = append(cuts, n/2, n*3/4, n, n)
			m := &ChainCache{}
			for _, cut := range cuts {
				got, gerr := buildChain(recs[:cut], ChainOptions{}, m)
				want, werr := buildChain(recs[:cut], ChainOptions{}, nil)
				require.Equal(t, werr, gerr, "cut %d", cut)
				if werr != nil {
					continue
				}
				// The record scan a memo carries is checked by the scan's own tests.
				got.scan, want.scan = Scan{}, Scan{}
				require.Equal(t, want, got, "cut %d of %d", cut, n)
			}
		})
	}
}

// TestChainMemoSameSlice runs a memo through the turns of one slice that a caller grows in
// place, rewinds and reuses for another transcript, and checks each index against one built
// from nothing.
func TestChainMemoSameSlice(t *testing.T) {
	buf := make([]Record, 0, 16)
	set := func(uuids ...string) []Record {
		buf = append(buf[:0], memoRecords(uuids...)...)
		return buf
	}
	grow := func(uuids ...string) []Record {
		buf = append(buf, memoRecords(uuids...)...)
		return buf
	}
	turns := []struct {
		name string
		recs func() []Record
	}{
		{"first", func() []Record { return set("a", "b>a", "c>b") }},
		{"grown", func() []Record { return grow("d>c", "e!") }},
		{"grown again", func() []Record { return grow("f>e") }},
		{"the same", func() []Record { return buf }},
		{"rewound and written again", func() []Record { buf = buf[:3]; return grow("x>c", "y>x", "z>y") }},
		{"rewound over the last record", func() []Record { buf = buf[:5]; return grow("w>y") }},
		{"another transcript in the slice", func() []Record { return set("p", "q>p", "r>q", "s>r", "t>s", "u>t") }},
		{"the first record other", func() []Record { return set("a", "q>p", "r>q", "s>r", "t>s", "u>t", "v>u") }},
		{"the last record indexed now a boundary", func() []Record { buf[len(buf)-1] = memoRecords("v!")[0]; return buf }},
		{"a prefix", func() []Record { return buf[:2] }},
	}
	m := &ChainCache{}
	for _, tt := range turns {
		records := tt.recs()
		got := m.index(records)
		want := newChainIndex(len(records))
		want.extend(records)
		assert.Equal(t, want.byUUID, got.byUUID, tt.name)
		assert.Equal(t, want.uuids, got.uuids, tt.name)
		assert.Equal(t, want.parents, got.parents, tt.name)
		assert.Equal(t, append([]int{}, want.boundaries...), append([]int{}, got.boundaries...), tt.name)
		m.keep(got)
	}

	// The slice's index is the least recently used of a full memo, which hands it out for its
	// storage to a transcript with another first record: read into the same slice, with the
	// record at the end of what was indexed the same, it is still indexed anew.
	m.keep(m.index(set("a", "b>a", "c>b", "d>c")))
	for c := range memo.ConvEntries - 1 {
		m.keep(m.index(memoRecords(fmt.Sprintf("other-%d", c))))
	}
	records := set("z", "b>a", "c>b", "d>c", "e>d")
	got := m.index(records)
	want := newChainIndex(len(records))
	want.extend(records)
	assert.Equal(t, want.byUUID, got.byUUID, "another first record")
	assert.Equal(t, want.uuids, got.uuids, "another first record")
}

// TestChainMemoRewindWithoutUUID rewinds a slice in place to before records without a uuid and
// appends new records where they stood, records without a uuid among them: the index and its
// record scan are those of the new records, not of the ones they replaced (a record without a
// uuid, or one whose uuid is written again, never stands for the records before it).
func TestChainMemoRewindWithoutUUID(t *testing.T) {
	damaged := func(recs []Record, i int) []Record {
		recs[i].Damage = &Damage{Skipped: []*LineError{{File: "s.jsonl", Line: i + 1, Err: ErrTornLine}}}
		return recs
	}
	tests := []struct {
		name          string
		first, second func(buf []Record) []Record
	}{
		{"uuid-less records at the end",
			func(buf []Record) []Record { return append(buf, memoRecords("a", "b>a", "", "", "", "", "c>b")...) },
			func(buf []Record) []Record { return append(buf[:1], memoRecords("x>a", "", "", "", "", "y>x")...) }},
		{"a uuid written again at the end",
			func(buf []Record) []Record { return append(buf, memoRecords("a", "b>a", "c>b", "a", "d>c")...) },
			func(buf []Record) []Record { return append(buf[:1], memoRecords("x>a", "y>x", "a", "z>y")...) }},
		{"a damaged uuid-less record where a sound one was",
			func(buf []Record) []Record {
				return append(buf, memoRecords("a", "p1>a", "p2>p1", "p3>p2", "", "b>p3", "c>b", "d>c", "e>d", "f>e")...)
			},
			func(buf []Record) []Record {
				return damaged(append(buf[:4], memoRecords("", "x>p3", "y>x", "z>y", "w>z", "v>w")...), 4)
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			buf := tt.first(make([]Record, 0, 16))
			m := &ChainCache{}
			_, err := buildChain(buf, ChainOptions{}, m)
			require.NoError(t, err)
			buf = tt.second(buf)
			got, err := buildChain(buf, ChainOptions{}, m)
			require.NoError(t, err)
			want, err := buildChain(buf, ChainOptions{}, nil)
			require.NoError(t, err)
			assert.Equal(t, (*Scan)(nil).Damage(buf), got.Scan().Damage(buf), "damage")
			got.scan, want.scan = Scan{}, Scan{}
			assert.Equal(t, want, got)
			ix := m.index(buf)
			fresh := newChainIndex(len(buf))
			fresh.extend(buf)
			assert.Equal(t, fresh.byUUID, ix.byUUID)
		})
	}
}

// TestPipelineRewindWithoutUUID prepares a turn, rewinds the caller's slice in place to an
// earlier prompt and writes another exchange there, with records without a uuid (as Claude
// Code writes file-history snapshots) where the old ones stood: the request is the one a fresh
// Pipeline builds.
func TestPipelineRewindWithoutUUID(t *testing.T) {
	snapshot := Record{Type: "file-history-snapshot"}
	k := newTK()
	k.user("first question")
	k.assistant(text("first answer"))
	rewindAt := len(k.recs)
	k.user("second question")
	k.assistant(text("second answer"))
	k.recs = append(k.recs, snapshot, snapshot, snapshot, snapshot, snapshot)
	k.user("third question")
	buf := append(make([]Record, 0, 32), k.recs...)

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
func prepareWarmAndFresh(t *testing.T, p *Pipeline, cfg Config, now time.Time, recs []Record) (got, want Result) {
	t.Helper()
	got, err := p.Prepare(t.Context(), Input{Records: recs})
	require.NoError(t, err, "warm")
	want, err = newTestPipeline(t, cfg, now).Prepare(t.Context(), Input{Records: recs})
	require.NoError(t, err, "fresh")
	return got, want
}
