package agentctx

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentctx/agentctx/transcript"
)

// historyRecords builds the records of a thread from steps, separated by spaces: a compact
// boundary ("auto", "fallback" for the fallback summarizer's, "memory" for a session-memory
// extraction's, "manual", "bare" without metadata), a response ("resp", "resp*N" for N of them,
// "split" for one response written as two records, "side" for a sidechain's), a failed
// attempt ("fail" of the primary summarizer, "fail-fallback", "fail-uncalled" when no call
// was made, "fail-collapse", "fail-manual"). A user prompt ends them: the leaf.
func historyRecords(t *testing.T, steps string) ([]transcript.Record, *transcript.Record) {
	k := newTK()
	boundary := func(m *transcript.CompactMetadata) {
		b := k.next(transcript.TypeSystem)
		b.Subtype, b.ParentUUID, b.CompactMetadata = transcript.SubtypeCompactBoundary, "", m
		k.add(b)
	}
	failure := func(f transcript.CompactFailure) {
		k.decision(transcript.Record{Type: transcript.TypeSystem, Subtype: transcript.SubtypeCompactFailure,
			UUID: fmt.Sprintf("f%d", len(k.recs)), CompactFailure: &f})
	}
	for s := range strings.FieldsSeq(steps) {
		n := 1
		if name, count, ok := strings.Cut(s, "*"); ok {
			var err error
			n, err = strconv.Atoi(count)
			require.NoError(t, err, s)
			s = name
		}
		for range n {
			switch s {
			case "auto", "fallback", "memory", "manual":
				m := &transcript.CompactMetadata{Trigger: transcript.TriggerAuto, Summarizer: "scripted"}
				switch s {
				case "fallback":
					m.Fallback, m.Summarizer = true, "extractive"
				case "memory":
					m.Summarizer = transcript.SummarizerSessionMemory
				case "manual":
					m.Trigger = transcript.TriggerManual
				}
				boundary(m)
			case "bare":
				boundary(nil)
			case "resp":
				k.assistant(text("a"))
			case "split":
				k.assistant(text("a"), text("b"))
			case "side":
				last := k.last
				r := k.assistant(text("aside"))
				r.IsSidechain, r.ParentUUID, k.last = true, "", last
			case "fail":
				failure(transcript.CompactFailure{Trigger: transcript.TriggerAuto, Attempts: 1})
			case "fail-fallback":
				failure(transcript.CompactFailure{Trigger: transcript.TriggerAuto, Fallback: true, Attempts: 1})
			case "fail-uncalled":
				failure(transcript.CompactFailure{Trigger: transcript.TriggerAuto})
			case "fail-collapse":
				failure(transcript.CompactFailure{Trigger: transcript.TriggerCollapse, Attempts: 1})
			case "fail-manual":
				failure(transcript.CompactFailure{Trigger: transcript.TriggerManual, Attempts: 1})
			default:
				require.FailNow(t, "unknown step", s)
			}
		}
	}
	k.user("next")
	return k.recs, &k.recs[len(k.recs)-1]
}

// TestCompactHistoryWalk drives the one walk of a thread's compaction history
// (transcript.HistoryWalk) through each of its rules, and checks that the history a boundary
// writes (transcript.CutHistory) and the state a turn reads (readHistory, with and without the
// chain's scan) agree on them. Each case is also read from the cut of each of its boundaries,
// as a tail read gives it (the boundary's history and the records it carries, then the
// records from the boundary on): the start history must give what the whole read gives.
func TestCompactHistoryWalk(t *testing.T) {
	tests := []struct {
		name                string
		steps               string
		thrash              int
		compactions, failed int
		refills             int   // readHistory's, for thrash
		runs                []int // CutHistory's
		open                int   // CutHistory's responses since the last boundary
	}{
		{"a manual boundary starts the breaker and the runs over",
			"auto resp fail fallback resp manual resp", 3, 3, 0, 0, nil, 1},
		{"a fallback boundary keeps the breaker's count", "auto fail fail fallback resp", 3, 2, 2, 1, []int{0}, 1},
		{"a session-memory boundary keeps the breaker's count", "auto fail memory", 3, 2, 1, 1, []int{0}, 0},
		{"a boundary without metadata starts the breaker over", "auto fail fail bare", 3, 2, 0, 1, []int{0}, 0},
		{"the primary's boundary starts the breaker over", "fail fail auto fail", 3, 1, 1, 0, nil, 0},
		{"failures the breaker does not count", "auto fail fail-fallback fail-uncalled fail", 3, 1, 2, 0, nil, 0},
		{"a collapse's failure is no compaction's", "auto fail fail-collapse fail", 3, 1, 2, 0, nil, 0},
		{"a manual attempt starts the breaker over", "auto fail fail fail-manual fail", 3, 1, 1, 0, nil, 0},
		{"the first boundary starts the runs", "resp*2 auto resp auto", 3, 2, 0, 1, []int{1}, 0},
		{"runs of thrashTurns are refills", "auto resp*3 auto resp*3 auto", 3, 3, 0, 2, []int{3, 3}, 0},
		{"a run over thrashTurns ends the refills", "auto resp auto resp*4 auto resp*2 auto", 3, 4, 0, 1, []int{1, 4, 2}, 0},
		{"thrashTurns 1", "auto resp auto resp*2 auto resp auto", 1, 4, 0, 1, []int{1, 2, 1}, 0},
		{"a run of HistoryResponses starts the runs over", "auto resp auto resp*8 auto resp*7 auto resp*9", 7, 4, 0, 1, []int{7}, 8},
		{"a response counts once, in its own thread", "auto split side side auto", 1, 2, 0, 1, []int{1}, 0},
		// Past HistoryResponses only a whole read counts: a boundary's history serves a
		// ThrashTurns up to 7.
		{"a thrashTurns over 7 reads the whole transcript", "auto resp*8 auto", 9, 2, 0, 1, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			records, leaf := historyRecords(t, tt.steps)
			cut, err := transcript.CutHistory(records, len(records), leaf)
			require.NoError(t, err)
			assert.Equal(t, tt.compactions, cut.Compactions)
			assert.Equal(t, tt.failed, cut.Failures)
			assert.Equal(t, tt.runs, cut.Runs)
			assert.Len(t, cut.Open, tt.open)
			if tt.thrash <= transcript.HistoryResponses-1 {
				assert.Equal(t, tt.refills, cut.Refills(tt.thrash), "the boundary's history gives the refills")
			}
			whole := readBothHistories(t, records, leaf, tt.thrash)
			assert.Equal(t, compactHistory{failures: tt.failed, compactions: tt.compactions, refills: tt.refills, last: whole.last}, whole)
			if tt.thrash > transcript.HistoryResponses-1 {
				return
			}
			for b := range records {
				if !records[b].IsCompactBoundary() {
					continue
				}
				tail, tleaf := cutAt(t, records, b, leaf)
				got := readBothHistories(t, tail, tleaf, tt.thrash)
				assert.Equal(t, whole.compactions, got.compactions, "cut at %d", b)
				assert.Equal(t, whole.failures, got.failures, "cut at %d", b)
				assert.Equal(t, whole.refills, got.refills, "cut at %d", b)
				again, err := transcript.CutHistory(tail, len(tail), tleaf)
				require.NoError(t, err)
				assert.Equal(t, []any{cut.Compactions, cut.Failures, cut.Runs, cut.Open}, []any{again.Compactions, again.Failures, again.Runs, again.Open},
					"cut at %d: a history written after a tail read", b)
			}
		})
	}
}

// readBothHistories returns readHistory of records for thrash, after checking that reading
// them through the chain's scan gives the same.
func readBothHistories(t *testing.T, records []transcript.Record, leaf *transcript.Record, thrash int) compactHistory {
	chain, err := (&transcript.ChainCache{}).Build(records, transcript.ChainOptions{})
	require.NoError(t, err)
	require.Equal(t, leaf.UUID, chain.Leaf.UUID)
	require.True(t, chain.Scan().Covers(records))
	plain := readHistory(records, nil, chain.Leaf, chain.BoundaryIndex(), thrash)
	assert.Equal(t, plain, readHistory(records, chain.Scan(), chain.Leaf, chain.BoundaryIndex(), thrash), "read through the scan")
	return plain
}

// cutAt returns records as a read that stopped at the cut of the boundary at b gives them:
// the boundary's history (what CutHistory writes of the records before it) and the records
// it carries, then the records from the boundary on; and the leaf among them.
func cutAt(t *testing.T, records []transcript.Record, b int, leaf *transcript.Record) ([]transcript.Record, *transcript.Record) {
	h, err := transcript.CutHistory(records, b, leaf)
	require.NoError(t, err)
	carried, err := h.Carried()
	require.NoError(t, err)
	tail := append(carried, records[b:]...)
	at := &tail[len(carried)]
	at.Cut, at.History = true, h
	return tail, &tail[len(tail)-1]
}
