package transcript

import (
	"fmt"
	"io/fs"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// resumeMixed returns a session of the given turns with, at places rng picks, what a chain's
// build looks at beyond the parentUuid walk: parallel calls written as split records and
// their results, responses and results written again under new uuids, records written again
// under their uuid, interrupt notices under results, forks from an earlier record, subagent
// exchanges, compactions with and without a kept tail (new records hanging off the summary,
// as Claude Code writes them, or off the tail), unreadable lines, dangling parents, records
// without a uuid, and a last response that is a response written again.
func resumeMixed(turns int, seed uint64) []Record {
	rng := rand.New(rand.NewPCG(seed, 0xc4a1))
	k := newTK()
	var lastResp []Record // the records of the last response with tool calls and its results
	for i := range turns {
		k.user(fmt.Sprintf("question %d", i))
		if rng.IntN(3) > 0 {
			start := len(k.recs)
			calls := 1 + rng.IntN(3)
			blocks := []Block{text(fmt.Sprintf("calling %d", i))}
			var trs []*ToolResult
			for c := range calls {
				id := fmt.Sprintf("t%d_%d", i, c)
				blocks = append(blocks, toolUse(id, "Read"))
				trs = append(trs, result(id, fmt.Sprintf("contents %d %d", i, c)))
			}
			k.assistant(blocks...)
			k.results(trs...)
			lastResp = append(lastResp[:0], k.recs[start:]...)
		}
		k.assistant(text(fmt.Sprintf("answer %d", i)))
		for range rng.IntN(3) {
			switch rng.IntN(12) {
			case 0: // the last response with calls and its results written again, new uuids
				if len(lastResp) == 0 {
					continue
				}
				for _, r := range lastResp {
					c := k.next(r.Type)
					c.Message = r.Message
					k.add(c)
				}
			case 1: // an earlier record written again under its uuid
				k.add(new(k.recs[rng.IntN(len(k.recs))]))
			case 2: // an interrupt notice under the last record
				r := k.next(TypeUser)
				r.Message = &Message{Role: RoleUser, Content: []Block{text("[Request interrupted by user for tool use]")}}
				k.add(r)
			case 3: // a fork: the conversation goes on from an earlier record
				k.last = k.recs[rng.IntN(len(k.recs))].UUID
				k.user(fmt.Sprintf("forked %d", i))
			case 4: // a subagent exchange
				r := k.next(TypeUser)
				r.IsSidechain = true
				r.Message = &Message{Role: RoleUser, Content: []Block{text("side question")}}
				k.add(r)
				r = k.next(TypeAssistant)
				r.IsSidechain = true
				k.msgN++
				r.Message = &Message{ID: fmt.Sprintf("msg_side_%d", k.msgN), Role: RoleAssistant, Content: []Block{text("side answer")}}
				k.add(r)
			case 5, 6: // a compaction, its kept tail the last few records
				n := len(k.recs)
				head, tail := n-1-rng.IntN(min(4, n)), n-1
				b := k.next(TypeSystem)
				b.Subtype, b.ParentUUID, b.LogicalParentUUID = SubtypeCompactBoundary, "", k.recs[n-1].UUID
				b.CompactMetadata = &CompactMetadata{Trigger: "auto"}
				k.add(b)
				s := k.user(fmt.Sprintf("summary %d", i))
				s.IsCompactSummary = true
				if rng.IntN(3) > 0 {
					b.CompactMetadata.PreservedSegment = &PreservedSegment{HeadUUID: k.recs[head].UUID, AnchorUUID: s.UUID, TailUUID: k.recs[tail].UUID}
					if rng.IntN(2) == 0 {
						k.last = k.recs[tail].UUID
					}
				}
			case 7: // unreadable lines before a record whose parent was one of them
				r := k.next(TypeUser)
				r.ParentUUID = fmt.Sprintf("lost-%d", i)
				r.Message = &Message{Role: RoleUser, Content: []Block{text("after a torn line")}}
				r.Damage = &Damage{Skipped: []*LineError{{File: "s.jsonl", Line: len(k.recs) + 1, Err: ErrTornLine}}}
				k.add(r)
			case 8: // a parent nowhere in the file
				r := k.next(TypeUser)
				r.ParentUUID = fmt.Sprintf("elsewhere-%d", i)
				r.Message = &Message{Role: RoleUser, Content: []Block{text("resumed")}}
				k.add(r)
			case 9: // a record without a uuid
				k.decision(Record{Type: TypeSystem, Subtype: SubtypeLocalCommand})
			case 10: // the last response written again as the last record
				r := k.recs[len(k.recs)-1]
				if r.Type == TypeAssistant {
					c := k.next(TypeAssistant)
					c.Message = r.Message
					k.add(c)
				}
			case 11: // a progress record off the last one
				r := k.next(TypeProgress)
				k.add(r)
				k.last = r.ParentUUID
			}
		}
	}
	return k.recs
}

// transcriptPaths returns the Claude Code transcripts under testdata, then the corpus
// sessions.
func transcriptPaths(t *testing.T) []string {
	t.Helper()
	var paths []string
	require.NoError(t, filepath.WalkDir(filepath.Join("..", "testdata"), func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".jsonl") && !strings.Contains(path, "codex") {
			paths = append(paths, path)
		}
		return err
	}))
	return append(paths, corpusPaths(t)...)
}

// promptAfter returns a user prompt numbered n that no transcript holds, after the last of
// recs.
func promptAfter(recs []Record, n int) Record {
	r := Record{Type: TypeUser, UUID: fmt.Sprintf("prompt-%d", n), SessionID: "s",
		Message: &Message{Role: RoleUser, Content: []Block{text(fmt.Sprintf("prompt %d", n))}}}
	if len(recs) > 0 {
		r.ParentUUID = recs[len(recs)-1].UUID
	}
	return r
}

// checkResume runs a memo through turns of all, in one slice a caller grows in place: records
// appended a few at a time, turns built again with other last records, rewinds to an earlier
// record, now and then another slice holding the same records or a turn from another leaf. After each turn the chain must
// be the one a build from nothing gives.
func checkResume(t *testing.T, all []Record, opts ChainOptions, seed uint64) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 0x7e5))
	buf := make([]Record, 0, len(all)+8)
	memo := &ChainCache{}
	prompt := 0
	newPrompt := func() Record { // a record no other turn has, after the last one
		prompt++
		return promptAfter(buf, prompt)
	}
	check := func(what string) {
		t.Helper()
		got, gerr := buildChain(buf, opts, memo)
		want, werr := buildChain(buf, opts, nil)
		require.Equal(t, werr, gerr, "%s, %d records", what, len(buf))
		if werr != nil {
			return
		}
		got.scan, want.scan = Scan{}, Scan{} // the scan's own tests check it
		require.Equal(t, want, got, "%s, %d records", what, len(buf))
	}
	for len(buf) < len(all) {
		switch op := rng.IntN(10); {
		case op < 5: // records written since
			buf = append(buf, all[len(buf):min(len(all), len(buf)+1+rng.IntN(6))]...)
			check("grown")
		case op < 7: // the turn built again, with a new prompt or two as its last records
			base := len(buf)
			for range 1 + rng.IntN(3) {
				buf = buf[:base]
				for range 1 + rng.IntN(2) {
					buf = append(buf, newPrompt())
				}
				check("built again")
			}
			buf = buf[:base]
		case op < 8: // a rewind: the last records cut off, then written again
			buf = buf[:max(0, len(buf)-1-rng.IntN(4))]
			check("rewound")
		case op < 9: // the same records in another slice
			buf = append(make([]Record, 0, len(all)+8), buf...)
			check("another slice")
		default: // the same records again, or first a turn from another leaf
			if len(buf) > 0 && rng.IntN(2) == 0 {
				cut := len(buf)
				if rng.IntN(2) == 0 {
					// Built again from the other leaf first, with another last record.
					cut = max(0, len(buf)-1-rng.IntN(3))
					buf = append(buf[:cut], newPrompt())
				}
				leaf := ChainOptions{Leaf: buf[rng.IntN(len(buf))].UUID, NoBridge: opts.NoBridge}
				got, gerr := buildChain(buf, leaf, memo)
				want, werr := buildChain(buf, leaf, nil)
				require.Equal(t, werr, gerr, "from a leaf, %d records", len(buf))
				if werr == nil {
					got.scan, want.scan = Scan{}, Scan{}
					require.Equal(t, want, got, "from a leaf, %d records", len(buf))
				}
				check("after a turn from another leaf")
				buf = buf[:cut] // all's records again from here
			} else {
				check("the same records")
			}
		}
	}
	check("the whole transcript")
}

// TestChainResumeGenerated checks the chain a memo extends from turn to turn against one built
// from nothing, on generated sessions with what a build looks at beyond the walk, and on the
// record scan's mixed sessions, with and without bridges.
func TestChainResumeGenerated(t *testing.T) {
	for seed := range uint64(12) {
		for _, opts := range []ChainOptions{{}, {NoBridge: true}} {
			t.Run(fmt.Sprintf("mixed/%d/nobridge=%t", seed, opts.NoBridge), func(t *testing.T) {
				checkResume(t, resumeMixed(40, seed), opts, seed)
			})
		}
		t.Run(fmt.Sprintf("scan/%d", seed), func(t *testing.T) {
			checkResume(t, scanMixed(30, seed), ChainOptions{}, seed)
		})
	}
}

// TestChainResumeGoldenAndCorpus does the same on every transcript under testdata and every
// corpus session.
func TestChainResumeGoldenAndCorpus(t *testing.T) {
	for k, path := range transcriptPaths(t) {
		t.Run(path, func(t *testing.T) {
			tr, err := ReadFile(path, ReadOptions{})
			if err != nil {
				t.Skipf("not a transcript: %v", err)
			}
			checkResume(t, tr.Records, ChainOptions{}, uint64(k))
		})
	}
}

// TestChainResumeSteady checks that a steady turn's chain is an extension: the records
// written since are all a turn's build passes over.
func TestChainResumeSteady(t *testing.T) {
	k := newTK()
	k.readTurns(50)
	recs := append(make([]Record, 0, len(k.recs)+64), k.recs...) // grown in place
	memo := &ChainCache{}
	_, err := buildChain(recs, ChainOptions{}, memo)
	require.NoError(t, err)
	for turn := range 3 {
		k.readTurns(1)
		recs = append(recs, k.recs[len(recs):]...)
		_, err := buildChain(recs, ChainOptions{}, memo)
		require.NoError(t, err)
		ix := memo.ix.Entry(0)
		assert.True(t, ix.resume.extended(len(recs)-5), "turn %d: extended from the last turn's records", turn)
	}
}

// TestChainResumeConcurrent builds the chains of two conversations' turns from several
// goroutines on one memo and checks each against one built from nothing (run it under -race).
func TestChainResumeConcurrent(t *testing.T) {
	convs := [][]Record{resumeMixed(30, 1), resumeMixed(30, 2)}
	memo := &ChainCache{}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			all := convs[g%2]
			buf := make([]Record, 0, len(all))
			for len(buf) < len(all) {
				buf = append(buf, all[len(buf):min(len(all), len(buf)+3)]...)
				got, err := buildChain(buf, ChainOptions{}, memo)
				if !assert.NoError(t, err) {
					return
				}
				want, _ := buildChain(buf, ChainOptions{}, nil)
				got.scan, want.scan = Scan{}, Scan{}
				if !assert.Equal(t, want, got, "goroutine %d, %d records", g, len(buf)) {
					return
				}
			}
		})
	}
	wg.Wait()
}

// resumeTurns runs a memo through the prefixes of recs ending at cuts, in one slice grown in
// place, checks each turn's chain against one built from nothing and returns the memo.
func resumeTurns(t *testing.T, recs []Record, cuts ...int) *ChainCache {
	t.Helper()
	buf := make([]Record, 0, len(recs))
	memo := &ChainCache{}
	for _, cut := range cuts {
		buf = append(buf, recs[len(buf):cut]...)
		got, err := buildChain(buf, ChainOptions{}, memo)
		require.NoError(t, err)
		want, err := BuildChain(buf, ChainOptions{})
		require.NoError(t, err)
		got.scan, want.scan = Scan{}, Scan{}
		require.Equal(t, want, got, "the turn of %d records", cut)
	}
	return memo
}

// extended reports whether the state holds a chain extended from a build over the first base
// records.
func (st *chainState) extended(base int) bool {
	return st.ok && st.base == base && st.n > base
}

// siblingResponse returns a session of one response written as parallel records: its text
// record (the second record) is a sibling of its tool_use record, off the walk, and joins the
// chain by its message id.
func siblingResponse() *tk {
	k := newTK()
	k.user("q")
	prompt := k.last
	k.assistant(text("two things"))
	k.last = prompt
	k.assistant(toolUse("t1", "Read"))
	k.recs[len(k.recs)-1].Message.ID = k.recs[len(k.recs)-2].Message.ID
	k.results(result("t1", "contents"))
	k.assistant(text("done"))
	return k
}

// TestChainResumeCases checks the cases where records written since change what a build
// finds among earlier records, so that the chain of the last turn cannot simply be extended.
func TestChainResumeCases(t *testing.T) {
	uuid := func(n int) string { return fmt.Sprintf("00000000-0000-4000-8000-%012d", n) }
	t.Run("the leaf moves from a subagent's thread to the main one", func(t *testing.T) {
		// A subagent's call, answered on its thread: once the leaf is on the main thread,
		// the answer is of another thread and the call is unanswered.
		k := newTK()
		k.user("side question")
		k.assistant(toolUse("t1", "Read"))
		k.results(result("t1", "contents"))
		k.assistant(text("side answer"))
		for i := range k.recs {
			k.recs[i].IsSidechain = true
		}
		n := len(k.recs)
		k.user("main prompt")
		memo := resumeTurns(t, k.recs, n, len(k.recs))
		assert.False(t, memo.ix.Entry(0).resume.extended(n), "built anew")
	})
	t.Run("a response met off the walk, then on it", func(t *testing.T) {
		// A fork leaves a response off the walk; a record of that response written on the new
		// branch brings the first one onto the chain.
		k := newTK()
		k.user("q0")
		fork := k.last
		k.user("q1")
		k.assistant(text("abandoned"))
		abandoned := k.recs[len(k.recs)-1].Message
		k.last = fork
		k.user("q2")
		k.assistant(text("kept"))
		n := len(k.recs)
		r := k.next(TypeAssistant)
		r.Message = &Message{ID: abandoned.ID, Role: RoleAssistant, Content: []Block{text("more of the abandoned response")}}
		k.add(r)
		memo := resumeTurns(t, k.recs, n, len(k.recs))
		chain, err := BuildChain(k.recs, ChainOptions{})
		require.NoError(t, err)
		assert.Contains(t, chain.Records, &k.recs[2], "the abandoned response's first record joins")
		assert.False(t, memo.ix.Entry(0).resume.extended(n), "built anew")
	})
	t.Run("an interrupt notice whose parent is written later", func(t *testing.T) {
		k := newTK()
		k.user("q")
		k.assistant(toolUse("t1", "Bash"))
		call := k.last
		n := len(k.recs)
		// The notice comes first, off the walk, under a results record written next turn.
		notice := k.next(TypeUser)
		notice.ParentUUID = uuid(k.n + 2)
		notice.Message = &Message{Role: RoleUser, Content: []Block{text("[Request interrupted by user for tool use]")}}
		k.add(notice)
		k.last = call
		k.assistant(text("and then"))
		more := len(k.recs)
		k.results(result("t1", "stopped")).ParentUUID = k.recs[more-1].UUID
		require.Equal(t, notice.ParentUUID, k.recs[more].UUID)
		k.assistant(text("stopped"))
		memo := resumeTurns(t, k.recs, n, more)
		assert.False(t, memo.ix.Entry(0).resume.ok, "not extended while the notice waits")
		resumeTurns(t, k.recs, n, more, len(k.recs))
		chain, err := BuildChain(k.recs, ChainOptions{})
		require.NoError(t, err)
		assert.Contains(t, chain.Records, &k.recs[n], "the notice joins under the results")
	})
	t.Run("another slice with other content under the same uuids", func(t *testing.T) {
		k := siblingResponse()
		memo := &ChainCache{}
		_, err := buildChain(k.recs, ChainOptions{}, memo)
		require.NoError(t, err)
		other := append([]Record(nil), k.recs...)
		m := *other[1].Message
		m.ID = "msg_other"
		other[1].Message = &m
		got, err := buildChain(other, ChainOptions{}, memo)
		require.NoError(t, err)
		want, err := BuildChain(other, ChainOptions{})
		require.NoError(t, err)
		got.scan, want.scan = Scan{}, Scan{}
		require.Equal(t, want, got)
		assert.NotContains(t, got.Records, &other[1], "the text record no longer joins")
	})
	t.Run("a turn built again forgets what it met off the walk", func(t *testing.T) {
		// The first build of the turn ends with a subagent's record of a response, off the
		// walk; the second with a main-thread record of that response, on it.
		k := newTK()
		k.readTurns(3)
		n := len(k.recs)
		buf := append(make([]Record, 0, n+1), k.recs...)
		memo := &ChainCache{}
		_, err := buildChain(buf, ChainOptions{}, memo) // the state of the records before
		require.NoError(t, err)
		for turn, side := range []bool{true, false} {
			r := Record{Type: TypeAssistant, UUID: fmt.Sprintf("again-%d", turn), ParentUUID: k.last, IsSidechain: side,
				Message: &Message{ID: "msg_again", Role: RoleAssistant, Content: []Block{text("again")}}}
			buf = append(buf[:n], r)
			got, err := buildChain(buf, ChainOptions{}, memo)
			require.NoError(t, err)
			want, err := BuildChain(buf, ChainOptions{})
			require.NoError(t, err)
			got.scan, want.scan = Scan{}, Scan{}
			require.Equal(t, want, got, "turn %d", turn)
		}
		assert.True(t, memo.ix.Entry(0).resume.extended(n), "rolled back and extended")
	})
	// compacted is a session compacted with a kept tail ending in a results record; the
	// conversation goes on under the summary, as Claude Code writes it.
	compacted := func() (*tk, string) {
		k := newTK()
		k.user("q0")
		head := k.last
		k.assistant(toolUse("t1", "Read"))
		tail := k.results(result("t1", "contents")).UUID
		b := k.next(TypeSystem)
		b.Subtype, b.ParentUUID, b.LogicalParentUUID = SubtypeCompactBoundary, "", tail
		k.add(b)
		bi := len(k.recs) - 1
		s := k.user("summary")
		s.IsCompactSummary = true
		k.recs[bi].CompactMetadata = &CompactMetadata{Trigger: "auto", PreservedSegment: &PreservedSegment{HeadUUID: head, AnchorUUID: s.UUID, TailUUID: tail}}
		return k, s.UUID
	}
	t.Run("an interrupt notice under the kept tail's anchor", func(t *testing.T) {
		// A new child of the anchor is relinked under the tail, whose results it follows.
		k, anchor := compacted()
		k.user("next")
		k.assistant(text("reply"))
		n := len(k.recs)
		notice := k.next(TypeUser)
		notice.ParentUUID = anchor
		notice.Message = &Message{Role: RoleUser, Content: []Block{text("[Request interrupted by user]")}}
		k.add(notice)
		k.last = k.recs[n-1].UUID
		k.assistant(text("and more")) // the leaf, after the reply
		resumeTurns(t, k.recs, n, len(k.recs))
		chain, err := BuildChain(k.recs, ChainOptions{})
		require.NoError(t, err)
		assert.Contains(t, chain.Records, &k.recs[n], "the notice joins under the tail")
	})
	t.Run("nothing but the kept tail after the summary", func(t *testing.T) {
		// The leaf is the anchor, and the walk begins at the tail: a record off the chain
		// written since extends the chain.
		k, _ := compacted()
		n := len(k.recs)
		p := k.next(TypeProgress)
		p.ParentUUID = k.recs[2].UUID // the tail: a child of the anchor would be relinked
		k.add(p)
		memo := resumeTurns(t, k.recs, n, len(k.recs))
		st := memo.ix.Entry(0).resume
		require.True(t, st.preserved, "the chain applies the kept tail")
		assert.True(t, st.extended(n), "extended")
	})
}

// TestChainResumeLeafTurnBetween checks that a turn built from another leaf, which moves the
// index on to its records, drops the state: the next turn's records are not the state's
// (found in review).
func TestChainResumeLeafTurnBetween(t *testing.T) {
	check := func(t *testing.T, buf []Record, memo *ChainCache, what string) {
		t.Helper()
		got, err := buildChain(buf, ChainOptions{}, memo)
		require.NoError(t, err)
		want, err := BuildChain(buf, ChainOptions{})
		require.NoError(t, err)
		got.scan, want.scan = Scan{}, Scan{}
		require.Equal(t, want, got, what)
	}
	t.Run("the same slice, rewound during the other leaf's turn", func(t *testing.T) {
		k := newTK()
		k.readTurns(3)
		n := len(k.recs)
		buf := append(make([]Record, 0, n+8), k.recs...)
		memo := &ChainCache{}
		check(t, buf, memo, "first turn")
		r := Record{Type: TypeUser, UUID: "rewound", ParentUUID: buf[0].UUID, SessionID: "s",
			Message: &Message{Role: RoleUser, Content: []Block{text("rewound")}}}
		buf = append(buf[:n-1], r) // the last record cut off, a fork in its place
		_, err := buildChain(buf, ChainOptions{Leaf: "rewound"}, memo)
		require.NoError(t, err)
		check(t, buf, memo, "the default leaf's turn after it")
	})
	t.Run("another slice with other content, seen first from the other leaf", func(t *testing.T) {
		k := siblingResponse()
		memo := &ChainCache{}
		check(t, k.recs, memo, "first turn")
		other := append([]Record(nil), k.recs...)
		m := *other[1].Message
		m.ID = "msg_other"
		other[1].Message = &m
		_, err := buildChain(other, ChainOptions{Leaf: other[len(other)-1].UUID}, memo)
		require.NoError(t, err)
		check(t, other, memo, "the default leaf's turn after it")
	})
}
