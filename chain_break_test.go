package agentctx

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentctx/agentctx/transcript"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// linearSession returns a session of n turns (a prompt, then an answer; every third answer a
// tool call and its result), each record the parent of the next.
func linearSession(n int) *tk {
	k := newTK()
	for i := range n {
		k.user(fmt.Sprintf("question %d", i))
		if i%3 == 2 {
			id := fmt.Sprintf("t%d", i)
			k.assistant(toolUse(id, "Read"))
			k.results(result(id, "contents"))
		}
		k.assistant(text(fmt.Sprintf("answer %d", i)))
	}
	return k
}

// readDamaged encodes recs as a transcript, lets edit change its lines (line i+1 is recs[i]),
// and reads it back the way a runtime does.
func readDamaged(t *testing.T, recs []transcript.Record, opts transcript.ReadOptions, edit func(lines []string) []string) *transcript.File {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(encodeRecords(t, recs), "\n"), "\n")
	lines = edit(slices.Clone(lines))
	tr, err := transcript.Read(strings.NewReader(strings.Join(lines, "\n")+"\n"), "s.jsonl", opts)
	require.NoError(t, err)
	return tr
}

// compactedTK returns a session of one exchange and the compact boundary after it.
func compactedTK() (*tk, *transcript.Record) {
	k := newTK()
	k.user("before")
	pre := k.assistant(text("old"))
	b := k.next(transcript.TypeSystem)
	b.Subtype, b.ParentUUID, b.LogicalParentUUID = transcript.SubtypeCompactBoundary, "", pre.UUID
	k.add(b)
	return k, b
}

// mustChain builds the chain of recs.
func mustChain(t *testing.T, recs []transcript.Record, opts transcript.ChainOptions) *transcript.Chain {
	t.Helper()
	c, err := transcript.BuildChain(recs, opts)
	require.NoError(t, err)
	return c
}

func uuidsWithout(recs []transcript.Record, drop ...int) []string {
	var out []string
	for i, r := range recs {
		if !slices.Contains(drop, i) {
			out = append(out, r.UUID)
		}
	}
	return out
}

// TestBuildChainUnreadableRecord damages one record in the middle of a session in each way a
// real file can, and checks that the chain still holds everything before it: a field that
// cannot be read costs nothing but the field; a line that cannot be read at all is bridged in
// file order and reported with the line and the records the break would cut off.
func TestBuildChainUnreadableRecord(t *testing.T) {
	k := linearSession(12)
	n := len(k.recs)
	const at = 20 // a record in the middle: its line is at+1
	require.Greater(t, n, at+5)
	require.Equal(t, transcript.TypeUser, k.recs[at].Type)
	huge := strings.Repeat("x", 4096)
	set := func(t *testing.T, line, old, new string) string {
		t.Helper()
		require.Contains(t, line, old)
		return strings.Replace(line, old, new, 1)
	}
	tests := []struct {
		name    string
		opts    transcript.ReadOptions
		rec     int // the record damaged: at, or at+1 for the answer after it
		edit    func(t *testing.T, line string) string
		lost    bool                        // the record is gone from the chain
		kind    transcript.ChainProblemKind // the break reported, "" for none
		dropped string                      // the field reported dropped, "" for none
	}{
		{name: "usage figure 1e400", rec: at + 1, dropped: "message.usage.input_tokens",
			edit: func(t *testing.T, l string) string { return set(t, l, `"input_tokens":10`, `"input_tokens":1e400`) }},
		{name: "usage figure 12.5", rec: at + 1, dropped: "message.usage.input_tokens",
			edit: func(t *testing.T, l string) string { return set(t, l, `"input_tokens":10`, `"input_tokens":12.5`) }},
		{name: "numeric timestamp", rec: at, dropped: "timestamp",
			edit: func(t *testing.T, l string) string {
				return set(t, l, `"timestamp":"2026-01-02T03:04:26.000Z"`, `"timestamp":1767323066`)
			}},
		{name: "not JSON", rec: at, lost: true, kind: transcript.ChainUnreadable,
			edit: func(t *testing.T, l string) string { return "{" + l }},
		{name: "torn in the middle", rec: at, lost: true, kind: transcript.ChainUnreadable,
			edit: func(t *testing.T, l string) string { return l[:len(l)/2] }},
		{name: "not an object", rec: at, lost: true, kind: transcript.ChainUnreadable,
			edit: func(t *testing.T, l string) string { return "[" + l + "]" }},
		{name: "over the line cap", rec: at, opts: transcript.ReadOptions{MaxLineBytes: 2048}, lost: true, kind: transcript.ChainUnreadable,
			edit: func(t *testing.T, l string) string { return set(t, l, `"question`, `"`+huge+` question`) }},
		{name: "uuid not a string", rec: at, lost: true, kind: transcript.ChainUnreadable, dropped: "uuid",
			edit: func(t *testing.T, l string) string {
				return set(t, l, `"uuid":"00000000-0000-4000-8000-000000000021"`, `"uuid":21`)
			}},
		{name: "parentUuid not a string", rec: at, kind: transcript.ChainUnreadableParent, dropped: "parentUuid",
			edit: func(t *testing.T, l string) string {
				return set(t, l, `"parentUuid":"00000000-0000-4000-8000-000000000020"`, `"parentUuid":20`)
			}},
	}
	clean, err := transcript.BuildChain(k.recs, transcript.ChainOptions{})
	require.NoError(t, err)
	require.Len(t, clean.Records, n, "the undamaged session is one chain")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := readDamaged(t, k.recs, tt.opts, func(lines []string) []string {
				lines[tt.rec] = tt.edit(t, lines[tt.rec])
				return lines
			})
			if tt.dropped == "" {
				assert.Empty(t, tr.Dropped)
			}
			if tt.dropped != "" {
				require.Len(t, tr.Dropped, 1)
				assert.Equal(t, tt.dropped, tr.Dropped[0].Field)
				assert.Equal(t, tt.rec+1, tr.Dropped[0].Line)
			}
			c, err := transcript.BuildChain(tr.Records, transcript.ChainOptions{})
			require.NoError(t, err)
			want := uuidsWithout(k.recs)
			if tt.lost {
				want = uuidsWithout(k.recs, at)
			}
			assert.Equal(t, want, chainUUIDs(c), "every record before the damage is on the chain")
			if tt.kind == "" {
				assert.Empty(t, c.Problems)
				return
			}
			require.Len(t, c.Problems, 1)
			p := c.Problems[0]
			assert.Equal(t, tt.kind, p.Kind)
			assert.Equal(t, at+1, p.Line, "the line of the damaged record")
			assert.Equal(t, "s.jsonl", p.File)
			if tt.kind == transcript.ChainUnreadableParent {
				assert.Equal(t, k.recs[at].UUID, p.UUID, "the record whose parentUuid is unreadable")
			} else {
				assert.Equal(t, k.recs[at+1].UUID, p.UUID, "the record whose parent is missing")
			}
			bridge := k.recs[at-1].UUID
			assert.Equal(t, bridge, p.Bridge, "bridged to the record written before the damage")
			assert.Equal(t, at, p.Cut, "the records before the damage")
			assert.Contains(t, p.String(), fmt.Sprintf("s.jsonl:%d: ", at+1))
			assert.Contains(t, p.String(), fmt.Sprintf("would lose %d records", at))

			off, err := transcript.BuildChain(tr.Records, transcript.ChainOptions{NoBridge: true})
			require.NoError(t, err)
			require.Len(t, off.Problems, 1)
			assert.Empty(t, off.Problems[0].Bridge)
			assert.Equal(t, at, off.Problems[0].Cut, "the same count, bridged or not")
			assert.Equal(t, want[len(want)-len(off.Records):], chainUUIDs(off), "without the bridge the chain starts after the damage")
			assert.Len(t, off.Records, len(want)-at)
			assert.Contains(t, off.Problems[0].String(), fmt.Sprintf("%d earlier records are cut off", at))
		})
	}
}

func TestBuildChainBreaks(t *testing.T) {
	t.Run("two unreadable lines", func(t *testing.T) {
		k := linearSession(8)
		n := len(k.recs)
		tr := readDamaged(t, k.recs, transcript.ReadOptions{}, func(lines []string) []string {
			lines[5], lines[12] = "{broken", "{broken"
			return lines
		})
		c, err := transcript.BuildChain(tr.Records, transcript.ChainOptions{})
		require.NoError(t, err)
		assert.Equal(t, uuidsWithout(k.recs, 5, 12), chainUUIDs(c))
		require.Len(t, c.Problems, 2)
		assert.Equal(t, []int{13, 6}, []int{c.Problems[0].Line, c.Problems[1].Line}, "from the leaf up")
		assert.Equal(t, 12-1, c.Problems[0].Cut, "everything before the later break")
		assert.Equal(t, 5, c.Problems[1].Cut)
		assert.Len(t, c.Records, n-2)

		off, err := transcript.BuildChain(tr.Records, transcript.ChainOptions{NoBridge: true})
		require.NoError(t, err)
		require.Len(t, off.Problems, 1, "the walk stops at the first break")
		assert.Equal(t, 11, off.Problems[0].Cut, "what a bridge would have reached, across the second break")
	})
	t.Run("consecutive unreadable lines", func(t *testing.T) {
		k := linearSession(6)
		tr := readDamaged(t, k.recs, transcript.ReadOptions{}, func(lines []string) []string {
			lines[6], lines[7] = "nope", "{"
			return lines
		})
		c, err := transcript.BuildChain(tr.Records, transcript.ChainOptions{})
		require.NoError(t, err)
		require.Len(t, c.Problems, 1)
		assert.Equal(t, 8, c.Problems[0].Line, "the unreadable line nearest the break")
		assert.Equal(t, k.recs[5].UUID, c.Problems[0].Bridge)
		assert.Equal(t, uuidsWithout(k.recs, 6, 7), chainUUIDs(c))
	})
	t.Run("unreadable first line", func(t *testing.T) {
		k := linearSession(3)
		tr := readDamaged(t, k.recs, transcript.ReadOptions{}, func(lines []string) []string {
			lines[0] = "{oops"
			return lines
		})
		c, err := transcript.BuildChain(tr.Records, transcript.ChainOptions{})
		require.NoError(t, err)
		require.Len(t, c.Problems, 1)
		assert.Equal(t, transcript.ChainUnreadable, c.Problems[0].Kind)
		assert.Empty(t, c.Problems[0].Bridge, "nothing to bridge to")
		assert.Zero(t, c.Problems[0].Cut)
		assert.Equal(t, uuidsWithout(k.recs, 0), chainUUIDs(c))
	})
	t.Run("dangling parent in the middle", func(t *testing.T) {
		k := linearSession(6)
		k.recs[7].ParentUUID = "never-written"
		c, err := transcript.BuildChain(k.recs, transcript.ChainOptions{})
		require.NoError(t, err)
		require.Len(t, c.Problems, 1)
		p := c.Problems[0]
		assert.Equal(t, transcript.ChainDangling, p.Kind)
		assert.Equal(t, "never-written", p.Parent)
		assert.Equal(t, k.recs[7].UUID, p.UUID)
		assert.Equal(t, k.recs[6].UUID, p.Bridge, "bridged to the message before it")
		assert.Equal(t, 7, p.Cut, "what the bridge reached")
		assert.Equal(t, uuidsWithout(k.recs), chainUUIDs(c), "the history is kept")
		assert.Contains(t, p.String(), "never-written")
		assert.Contains(t, p.String(), "bridged in file order")

		off := mustChain(t, k.recs, transcript.ChainOptions{NoBridge: true})
		require.Len(t, off.Problems, 1)
		assert.Empty(t, off.Problems[0].Bridge, "NoBridge keeps the break")
		assert.Equal(t, 7, off.Problems[0].Cut, "what a bridge would have reached")
		assert.Equal(t, uuidsWithout(k.recs, 0, 1, 2, 3, 4, 5, 6), chainUUIDs(off))
	})
	t.Run("dangling parent after a progress record", func(t *testing.T) {
		k := linearSession(3)
		pr := k.next(transcript.TypeProgress)
		pr.ParentUUID = k.recs[len(k.recs)-1].UUID
		k.add(pr)
		u := k.user("go on")
		u.ParentUUID = "never-written"
		k.assistant(text("going on"))
		c := mustChain(t, k.recs, transcript.ChainOptions{})
		require.Len(t, c.Problems, 1)
		assert.Equal(t, k.recs[len(k.recs)-4].UUID, c.Problems[0].Bridge, "the message before, not the progress record")
		assert.Len(t, c.Messages(), len(k.recs)-1)
	})
	t.Run("dangling first record of a resumed session", func(t *testing.T) {
		k := linearSession(2)
		k.recs[0].ParentUUID = "in-another-file"
		tr := roundTrip(t, k.recs)
		c, err := transcript.BuildChain(tr, transcript.ChainOptions{})
		require.NoError(t, err)
		require.Len(t, c.Problems, 1)
		assert.Equal(t, transcript.ChainDangling, c.Problems[0].Kind)
		assert.Equal(t, 1, c.Problems[0].Line)
		assert.Zero(t, c.Problems[0].Cut)
		assert.Len(t, c.Records, len(k.recs))
	})
	t.Run("unreadable line before a compact boundary is no bridge after it", func(t *testing.T) {
		k, b := compactedTK()
		k.user("summary")
		after := k.user("dangling")
		after.ParentUUID = "missing"
		k.assistant(text("new"))
		tr := readDamaged(t, k.recs, transcript.ReadOptions{}, func(lines []string) []string {
			lines[0] = "{bad"
			return lines
		})
		c, err := transcript.BuildChain(tr.Records, transcript.ChainOptions{})
		require.NoError(t, err)
		require.Len(t, c.Problems, 1)
		assert.Equal(t, transcript.ChainDangling, c.Problems[0].Kind)
		assert.Equal(t, tr.Records[len(tr.Records)-3].UUID, c.Problems[0].Bridge, "bridged to the summary, after the boundary")
		assert.Equal(t, b.UUID, c.Boundary.UUID, "the chain starts at the boundary, never before it")
		assert.Len(t, c.Records, 4)

		off := mustChain(t, tr.Records, transcript.ChainOptions{NoBridge: true})
		assert.Nil(t, off.Boundary)
		assert.Len(t, off.Records, 2)
	})
	t.Run("dangling parent right after a compact boundary", func(t *testing.T) {
		k, b := compactedTK()
		after := k.user("dangling")
		after.ParentUUID = "missing"
		k.assistant(text("new"))
		c := mustChain(t, k.recs, transcript.ChainOptions{})
		require.Len(t, c.Problems, 1)
		assert.Equal(t, b.UUID, c.Problems[0].Bridge, "the boundary, not the message before it")
		assert.Equal(t, b.UUID, c.Boundary.UUID)
		assert.Equal(t, []string{b.UUID, after.UUID, k.recs[len(k.recs)-1].UUID}, chainUUIDs(c))
	})
	t.Run("unreadable summary is bridged to its boundary", func(t *testing.T) {
		k, b := compactedTK()
		k.user("summary")
		k.user("next")
		k.assistant(text("new"))
		tr := readDamaged(t, k.recs, transcript.ReadOptions{}, func(lines []string) []string {
			lines[3] = "{bad"
			return lines
		})
		c, err := transcript.BuildChain(tr.Records, transcript.ChainOptions{})
		require.NoError(t, err)
		require.Len(t, c.Problems, 1)
		assert.Equal(t, b.UUID, c.Problems[0].Bridge)
		assert.Equal(t, 1, c.Problems[0].Cut, "the boundary")
		require.NotNil(t, c.Boundary)
		assert.Equal(t, uuidsWithout(k.recs, 0, 1, 3), chainUUIDs(c))
	})
	t.Run("bridge skips decision records and other threads", func(t *testing.T) {
		k := linearSession(2)
		side := k.next(transcript.TypeUser)
		side.IsSidechain, side.ParentUUID = true, ""
		side.Message = &transcript.Message{Role: transcript.RoleUser, Content: []transcript.Block{text("subagent")}}
		k.add(side)
		k.decision(transcript.Record{Type: transcript.TypeSystem, Subtype: transcript.SubtypePin, UUID: "pin-1", Pin: &transcript.PinDecision{}})
		k.last = k.recs[len(k.recs)-3].UUID
		k.user("lost")
		k.user("next")
		k.assistant(text("done"))
		lost := len(k.recs) - 3
		tr := readDamaged(t, k.recs, transcript.ReadOptions{}, func(lines []string) []string {
			lines[lost] = "{bad"
			return lines
		})
		c, err := transcript.BuildChain(tr.Records, transcript.ChainOptions{})
		require.NoError(t, err)
		require.Len(t, c.Problems, 1)
		assert.Equal(t, k.recs[lost-3].UUID, c.Problems[0].Bridge)
	})
	t.Run("cycle", func(t *testing.T) {
		k := linearSession(3)
		k.recs[2].ParentUUID = k.recs[4].UUID // 4 → 3 → 2 → 4
		c, err := transcript.BuildChain(k.recs, transcript.ChainOptions{Leaf: k.recs[4].UUID})
		require.NoError(t, err)
		assert.Equal(t, 1, c.Cycles)
		require.Len(t, c.Problems, 1)
		p := c.Problems[0]
		assert.Equal(t, transcript.ChainCycle, p.Kind)
		assert.Equal(t, k.recs[2].UUID, p.UUID)
		assert.Equal(t, k.recs[4].UUID, p.Parent)
		assert.Empty(t, p.Bridge)
		assert.Equal(t, 2, p.Cut, "the records before the cycle in file order")
		assert.Contains(t, p.String(), "cycle")
	})
	t.Run("same records, same chain", func(t *testing.T) {
		k := linearSession(9)
		edit := func(lines []string) []string { lines[9] = "{x"; lines[17] = "[]"; return lines }
		a, err := transcript.BuildChain(readDamaged(t, k.recs, transcript.ReadOptions{}, edit).Records, transcript.ChainOptions{})
		require.NoError(t, err)
		b, err := transcript.BuildChain(readDamaged(t, k.recs, transcript.ReadOptions{}, edit).Records, transcript.ChainOptions{})
		require.NoError(t, err)
		assert.Equal(t, chainUUIDs(a), chainUUIDs(b))
		assert.Equal(t, a.Problems, b.Problems)
	})
}

// TestBuildChainManyUnreadableLines breaks every other line of a long session: the chain
// bridges each break and still holds every readable record, in time linear in the records
// (a quadratic count of what each break cuts off would take minutes here).
func TestBuildChainManyUnreadableLines(t *testing.T) {
	k := newTK()
	for i := range 10_000 {
		k.user(fmt.Sprintf("q%d", i))
		k.assistant(text("a"))
	}
	n := len(k.recs)
	tr := readDamaged(t, k.recs, transcript.ReadOptions{}, func(lines []string) []string {
		for i := 1; i < n-1; i += 2 {
			lines[i] = "{" + lines[i]
		}
		return lines
	})
	c, err := transcript.BuildChain(tr.Records, transcript.ChainOptions{})
	require.NoError(t, err)
	assert.Len(t, c.Records, len(tr.Records), "every readable record")
	require.Len(t, c.Problems, n/2-1)
	for i, p := range c.Problems {
		assert.Equal(t, n/2-1-i, p.Cut, "problem %d", i)
	}
}

// TestCorpusDanglingKeepsHistory checks, on every corpus session, that a parent the file does
// not hold cuts no history: each dangling break is bridged or has nothing before it, and the
// chain holds at least the records it holds without the bridge.
func TestCorpusDanglingKeepsHistory(t *testing.T) {
	dangling := 0
	for _, s := range corpusSessions(t) {
		name := filepath.Base(s.path)
		c, err := transcript.BuildChain(s.records, transcript.ChainOptions{})
		require.NoError(t, err, name)
		off, err := transcript.BuildChain(s.records, transcript.ChainOptions{NoBridge: true})
		require.NoError(t, err, name)
		for _, p := range c.Problems {
			if p.Kind != transcript.ChainDangling {
				continue
			}
			dangling++
			assert.True(t, p.Bridge != "" || p.Cut == 0, "%s: %s", name, p)
		}
		assert.GreaterOrEqual(t, len(c.Records), len(off.Records), name)
	}
	t.Logf("%d dangling parents in the corpus", dangling)
}
