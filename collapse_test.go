package agentctx

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentctx/agentctx/provider"

	"github.com/agentctx/agentctx/transcript"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// collapseTK builds a conversation of three rounds:
//
//	1 user "first task"
//	2 A text, 3 A tool_use c1, 4 A tool_use c2   (one response, parallel calls)
//	5 result c1, 6 result c2
//	7 A "first done"
//	8 user "second task"
//	9 A tool_use c3  10 result c3  11 A "second done"
//	12 user "third task"
func collapseTK() *tk {
	k := newTK()
	k.user("first task")
	k.assistant(text("working"), toolUse("c1", "Read"), toolUse("c2", "Read"))
	k.results(result("c1", strings.Repeat("one ", 300)))
	k.results(result("c2", strings.Repeat("two ", 300)))
	k.assistant(text("first done"))
	k.user("second task")
	k.assistant(toolUse("c3", "Read"))
	k.results(result("c3", strings.Repeat("three ", 300)))
	k.assistant(text("second done"))
	k.user("third task")
	return k
}

func collapseRecord(t testing.TB, recs []transcript.Record, first, last int, summary string) transcript.Record {
	t.Helper()
	r, err := NewCollapseCommit(recs, tkUUID(first), tkUUID(last), summary, snipNow)
	require.NoError(t, err)
	return r
}

// runCollapse runs snip then collapse over recs, as Prepare orders them.
func runCollapse(t testing.TB, p *Pipeline, recs []transcript.Record) *turn {
	t.Helper()
	tt := runSnip(t, p, recs)
	require.NoError(t, p.stages.collapse.run(tt))
	return tt
}

func TestCollapseSpan(t *testing.T) {
	k := collapseTK()
	c := collapseRecord(t, k.recs, 1, 7, "The user asked for the first task; both files were read.")
	k.decision(c)
	p := snipPipeline(t, Config{})
	tt := runCollapse(t, p, k.recs)

	sumUUID := transcript.ContentUUID("collapse", c.Collapse.CollapseID)
	assert.Equal(t, append([]string{sumUUID}, tkUUIDs(8, 9, 10, 11, 12)...), viewUUIDs(tt), "messages after the span survive")
	it := tt.items[0]
	assert.Nil(t, it.rec)
	assert.True(t, it.meta)
	assert.Equal(t, transcript.RoleUser, it.role)
	assert.Equal(t, "collapse", it.origin)
	require.Len(t, it.blocks, 1)
	assert.Equal(t, "<collapsed id=\""+c.Collapse.CollapseID+"\">\nThe user asked for the first task; both files were read.\n</collapsed>", it.blocks[0].(*transcript.Text).Text)

	rep := tt.report.Stage("collapse")
	require.NotNil(t, rep)
	col := actionsOf(rep, ActionCollapsed)
	require.Len(t, col, 1)
	assert.Equal(t, c.UUID, col[0].UUID)
	assert.Contains(t, col[0].Detail, "7 records")
	cnt := NewCounter(EstimateCounter{})
	freed := 0
	for n := 1; n <= 7; n++ {
		freed += cnt.Blocks(k.recs[n-1].Message.Content)
	}
	assert.Equal(t, cnt.Blocks(it.blocks)-freed, col[0].Tokens)
	assert.Equal(t, freed-cnt.Blocks(it.blocks), rep.TokensFreed)

	res := snipPrepare(t, p, k.recs)
	require.Len(t, res.Request.Messages, 5)
	assert.Contains(t, res.Request.Messages[0].Content[0].(*transcript.Text).Text, "<collapsed id=")
	assert.Equal(t, "second task", res.Request.Messages[0].Content[1].(*transcript.Text).Text, "the summary merges with the next user message")
}

func TestCollapseMiddleSpan(t *testing.T) {
	k := collapseTK()
	k.decision(collapseRecord(t, k.recs, 8, 11, "Second task done."))
	tt := runCollapse(t, snipPipeline(t, Config{}), k.recs)
	got := viewUUIDs(tt)
	require.Len(t, got, 9)
	assert.Equal(t, tkUUIDs(1, 2, 3, 4, 5, 6, 7), got[:7], "messages before the span survive")
	assert.Equal(t, "collapse", tt.items[7].origin)
	assert.Equal(t, tkUUID(12), got[8], "messages after the span survive")
	snipPrepare(t, snipPipeline(t, Config{}), k.recs)
}

func TestCollapseExtendsForPairing(t *testing.T) {
	for _, tc := range []struct {
		name        string
		first, last int
		lo, hi      int      // the span actually collapsed
		toolUseIDs  []string // named by the extensions
	}{
		{"last is a tool_use: its results join", 1, 3, 1, 6, []string{"c1", "c2", ""}},
		{"first is a result: its tool_use joins", 5, 7, 2, 7, []string{"c1", ""}},
		{"last is a split response's text", 8, 9, 8, 10, []string{"c3"}},
		{"first is a result of a single call", 10, 11, 9, 11, []string{"c3"}},
		{"nothing to extend", 8, 11, 8, 11, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := collapseTK()
			c := collapseRecord(t, k.recs, tc.first, tc.last, "summary")
			k.decision(c)
			p := snipPipeline(t, Config{})
			tt := runCollapse(t, p, k.recs)
			var want []string
			for n := 1; n <= 12; n++ {
				switch {
				case n == tc.lo:
					want = append(want, collapseItemUUID(c.Collapse.CollapseID))
				case n < tc.lo || n > tc.hi:
					want = append(want, tkUUID(n))
				}
			}
			assert.Equal(t, want, viewUUIDs(tt))
			exp := actionsOf(tt.report.Stage("collapse"), ActionExpanded)
			var ids []string
			for _, a := range exp {
				ids = append(ids, a.ToolUseID)
				assert.Equal(t, c.UUID, a.UUID)
				assert.Contains(t, a.Detail, "span extended")
			}
			assert.ElementsMatch(t, tc.toolUseIDs, ids)
			snipPrepare(t, p, k.recs)
		})
	}
}

func TestCollapseSkipped(t *testing.T) {
	for _, tc := range []struct {
		name   string
		add    func(k *tk) transcript.Record // returns the commit
		detail string
	}{
		{"unknown uuid", func(k *tk) transcript.Record {
			return transcript.Record{Type: transcript.TypeSystem, Subtype: transcript.SubtypeCollapseCommit, UUID: "c-unknown",
				Collapse: &transcript.CollapseCommit{CollapseID: "x1", FirstUUID: tkUUID(1), LastUUID: "nope", Summary: "s"}}
		}, "last nope not in the view"},
		{"first snipped", func(k *tk) transcript.Record {
			k.decision(snipRecord(t, k.recs, "", tkUUID(8)))
			return collapseRecord(t, k.recs, 8, 11, "s")
		}, "first " + tkUUID(8) + " not in the view"},
		{"before the boundary", func(k *tk) transcript.Record {
			b := k.next(transcript.TypeSystem)
			b.Subtype, b.ParentUUID, b.LogicalParentUUID = transcript.SubtypeCompactBoundary, "", tkUUID(12)
			k.add(b)
			k.user("summary of everything")
			k.assistant(text("continuing"))
			k.user("go on")
			return collapseRecord(t, k.recs, 1, 7, "s")
		}, "not in the view"},
		{"no metadata", func(k *tk) transcript.Record {
			return transcript.Record{Type: transcript.TypeSystem, Subtype: transcript.SubtypeCollapseCommit, UUID: "c-empty"}
		}, "without collapseCommit metadata"},
		{"reversed in the view", func(k *tk) transcript.Record {
			return transcript.Record{Type: transcript.TypeSystem, Subtype: transcript.SubtypeCollapseCommit, UUID: "c-rev",
				Collapse: &transcript.CollapseCommit{CollapseID: "x2", FirstUUID: tkUUID(8), LastUUID: tkUUID(1), Summary: "s"}}
		}, "comes after"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := collapseTK()
			c := tc.add(k)
			k.decision(c)
			p := snipPipeline(t, Config{})
			chainBefore := len(runSnip(t, p, k.recs).items)
			tt := runCollapse(t, p, k.recs)
			assert.Len(t, tt.items, chainBefore, "the view is unchanged")
			rep := tt.report.Stage("collapse")
			assert.Empty(t, actionsOf(rep, ActionCollapsed))
			sk := actionsOf(rep, ActionSkipped)
			require.Len(t, sk, 1)
			assert.Equal(t, c.UUID, sk[0].UUID)
			assert.Contains(t, sk[0].Detail, tc.detail)
			snipPrepare(t, p, k.recs)
		})
	}
}

func TestCollapseOverlapping(t *testing.T) {
	k := collapseTK()
	a := collapseRecord(t, k.recs, 8, 9, "second") // extended to 8..10
	partial := collapseRecord(t, k.recs, 9, 12, "overlaps the first")
	whole := collapseRecord(t, k.recs, 1, 11, "first and second")
	k.decision(a)
	k.decision(partial)
	k.decision(whole)
	tt := runCollapse(t, snipPipeline(t, Config{}), k.recs)

	rep := tt.report.Stage("collapse")
	col := actionsOf(rep, ActionCollapsed)
	require.Len(t, col, 2)
	assert.Equal(t, a.UUID, col[0].UUID)
	assert.Equal(t, whole.UUID, col[1].UUID)
	assert.Contains(t, col[1].Detail, "supersedes "+collapseItemUUID(a.Collapse.CollapseID))
	sk := actionsOf(rep, ActionSkipped)
	require.Len(t, sk, 1)
	assert.Equal(t, partial.UUID, sk[0].UUID, "a span no longer intact is skipped")
	assert.Equal(t, []string{collapseItemUUID(whole.Collapse.CollapseID), tkUUID(12)}, viewUUIDs(tt))
	assert.Contains(t, tt.items[0].blocks[0].(*transcript.Text).Text, "first and second")
}

func TestCollapseDisable(t *testing.T) {
	k := collapseTK()
	k.decision(collapseRecord(t, k.recs, 1, 7, "s"))
	p := snipPipeline(t, Config{Collapse: CollapseConfig{Disable: true}})
	tt := runCollapse(t, p, k.recs)
	assert.Equal(t, tkUUIDs(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12), viewUUIDs(tt))
	assert.Nil(t, tt.report.Stage("collapse"))
}

func TestCollapsePrepareDeterministic(t *testing.T) {
	k := collapseTK()
	k.decision(snipRecord(t, k.recs, "", tkUUID(9)))
	k.decision(collapseRecord(t, k.recs, 1, 7, "first task summary"))
	p := snipPipeline(t, Config{Snip: SnipConfig{TagMessages: true}})
	r1 := snipPrepare(t, p, k.recs)
	r2 := snipPrepare(t, p, k.recs)
	assert.Equal(t, requestBytes(t, r1.Request), requestBytes(t, r2.Request))
	assert.Equal(t, r1.Append, r2.Append)
	assert.Equal(t, r1.Report, r2.Report)

	recs := append(append([]transcript.Record(nil), k.recs...), r1.Append...)
	r3 := snipPrepare(t, p, recs)
	assert.Equal(t, requestBytes(t, r1.Request), requestBytes(t, r3.Request))
	assert.Empty(t, r3.Append)
	assert.Equal(t, r1.Report.Stage("collapse"), r3.Report.Stage("collapse"))

	// Through the transcript format: write, read back, same bytes.
	r4 := snipPrepare(t, p, roundTrip(t, recs))
	assert.Equal(t, requestBytes(t, r1.Request), requestBytes(t, r4.Request))
}

func TestNewCollapseCommit(t *testing.T) {
	k := collapseTK()
	sys := k.next(transcript.TypeSystem)
	sys.Subtype = transcript.SubtypeTurnDuration
	k.add(sys) // 13

	r, err := NewCollapseCommit(k.recs, tkUUID(2), tkUUID(7), "summary", snipNow)
	require.NoError(t, err)
	assert.Equal(t, transcript.TypeSystem, r.Type)
	assert.Equal(t, transcript.SubtypeCollapseCommit, r.Subtype)
	assert.Empty(t, r.ParentUUID)
	assert.Equal(t, "11111111-1111-4111-8111-111111111111", r.SessionID)
	assert.Equal(t, "2026-01-02T04:00:00.000Z", r.Timestamp)
	require.NotNil(t, r.Collapse)
	assert.Equal(t, tkUUID(2), r.Collapse.FirstUUID)
	assert.Equal(t, tkUUID(7), r.Collapse.LastUUID)
	assert.Equal(t, "summary", r.Collapse.Summary)
	assert.Regexp(t, `^[0-9a-f]{16}$`, r.Collapse.CollapseID)
	assert.True(t, r.IsDecision())

	again, err := NewCollapseCommit(k.recs, tkUUID(2), tkUUID(7), "summary", snipNow.Add(time.Hour))
	require.NoError(t, err)
	assert.Equal(t, r.UUID, again.UUID, "content-derived")
	assert.Equal(t, r.Collapse.CollapseID, again.Collapse.CollapseID)
	other, err := NewCollapseCommit(k.recs, tkUUID(2), tkUUID(7), "another summary", snipNow)
	require.NoError(t, err)
	assert.NotEqual(t, r.Collapse.CollapseID, other.Collapse.CollapseID)

	single, err := NewCollapseCommit(k.recs, tkUUID(5), tkUUID(5), "one record", snipNow)
	require.NoError(t, err)
	assert.Equal(t, single.Collapse.FirstUUID, single.Collapse.LastUUID)

	for _, tc := range []struct {
		name, first, last, summary, want string
	}{
		{"unknown first", "nope", tkUUID(7), "s", `no record "nope"`},
		{"unknown last", tkUUID(1), "nope", "s", `no record "nope"`},
		{"reversed", tkUUID(7), tkUUID(2), "s", "comes after"},
		{"not a message", tkUUID(1), tkUUID(13), "s", "not a user or assistant record"},
		{"empty summary", tkUUID(1), tkUUID(7), " \n", "summary is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewCollapseCommit(k.recs, tc.first, tc.last, tc.summary, snipNow)
			require.Error(t, err)
			assert.True(t, strings.HasPrefix(err.Error(), "agentctx: "), err.Error())
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestCollapseAfterPrepareContext(t *testing.T) {
	// The collapse stage works on the whole pipeline, with snip tags on: the summary message
	// is meta, so it carries no tag, and the surviving prompts keep theirs.
	k := collapseTK()
	k.decision(collapseRecord(t, k.recs, 1, 7, "first"))
	res, err := snipPipeline(t, Config{Snip: SnipConfig{TagMessages: true}}).Prepare(context.Background(), Input{Records: k.recs, Tools: snipTools})
	require.NoError(t, err)
	assertPairedRequest(t, res.Request)
	require.NoError(t, provider.Validate(res.Request, provider.ValidateOptions{}))
	tags, _ := requestTags(res.Request)
	assert.Len(t, tags, 2, "prompts 8 and 12; prompt 1 is collapsed")
}

// TestSnipCollapseCorpus snips and collapses every real session of the corpus: every 7th
// message of the first half is snipped and the third quarter of the conversation is
// collapsed. The request must pass the provider contract, and Prepare must be deterministic,
// also after the snip and collapse records went through the transcript format.
func TestSnipCollapseCorpus(t *testing.T) {
	files := corpusFiles(t)
	p := snipPipeline(t, Config{Snip: SnipConfig{TagMessages: true}})
	for _, f := range files {
		tr, err := transcript.ReadFile(f, transcript.ReadOptions{})
		require.NoError(t, err)
		chain, err := transcript.BuildChain(tr.Records, transcript.ChainOptions{})
		require.NoError(t, err)
		msgs := chain.Messages()
		if len(msgs) < 8 {
			continue
		}
		recs := append([]transcript.Record(nil), tr.Records...)
		var ids []string
		for i := 1; i < len(msgs)/2; i += 7 {
			ids = append(ids, msgs[i].UUID)
		}
		sn, err := NewSnip(recs, ids, "corpus", snipNow)
		require.NoError(t, err, f)
		recs = append(recs, sn)
		snipped := SnippedUUIDs(recs)
		lo, hi := len(msgs)/2, len(msgs)*3/4
		for lo < hi && snipped[msgs[lo].UUID] {
			lo++
		}
		for hi > lo && snipped[msgs[hi].UUID] {
			hi--
		}
		require.False(t, snipped[msgs[lo].UUID], f)
		col, err := NewCollapseCommit(recs, msgs[lo].UUID, msgs[hi].UUID, "corpus summary", snipNow)
		require.NoError(t, err, f)
		recs = append(recs, col)

		r1, err := p.Prepare(context.Background(), Input{Records: recs})
		require.NoError(t, err, f)
		require.NoError(t, provider.Validate(r1.Request, provider.ValidateOptions{}), f)
		assert.Positive(t, r1.Report.Stage("snip").TokensFreed, f)
		var removed []string
		for _, a := range actionsOf(r1.Report.Stage("snip"), ActionSnipped) {
			removed = append(removed, a.UUID)
		}
		assert.ElementsMatch(t, slices.Sorted(maps.Keys(snipped)), removed, "SnippedUUIDs agrees with Prepare: %s", f)
		assert.Len(t, actionsOf(r1.Report.Stage("collapse"), ActionCollapsed), 1, "%s\n%s", f, r1.Report.String())
		again := append(append([]transcript.Record(nil), recs...), r1.Append...)
		r2, err := p.Prepare(context.Background(), Input{Records: again})
		require.NoError(t, err, f)
		assert.Equal(t, requestBytes(t, r1.Request), requestBytes(t, r2.Request), f)
		assert.Empty(t, r2.Append, f)
	}
}
