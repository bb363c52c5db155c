package transcript

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

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

// TestChainMemoLimit checks NewChainCache's bound: as many conversations' indexes as it says.
func TestChainMemoLimit(t *testing.T) {
	for _, n := range []int{3, 2 * memo.ConvEntries} {
		m := NewChainCache(n)
		for c := range 3 * n {
			m.keep(m.index(memoRecords(fmt.Sprintf("conv-%d", c), "b")))
		}
		assert.Equal(t, n, m.ix.Len())
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
			func(buf []Record) []Record {
				return append(buf, memoRecords("a", "b>a", "", "", "", "", "c>b")...)
			},
			func(buf []Record) []Record {
				return append(buf[:1], memoRecords("x>a", "", "", "", "", "y>x")...)
			}},
		{"a uuid written again at the end",
			func(buf []Record) []Record {
				return append(buf, memoRecords("a", "b>a", "c>b", "a", "d>c")...)
			},
			func(buf []Record) []Record {
				return append(buf[:1], memoRecords("x>a", "y>x", "a", "z>y")...)
			}},
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
