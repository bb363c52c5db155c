package agentctx

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/agentctx/agentctx/transcript"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// replaySession is a session of one tool-calling turn: the prompt u0, the response a1 (text)
// and a2 (the tool call), the result r1, the answer a3; then whatever the test writes again,
// then a follow-up prompt and its answer, parented on the last record written.
type replaySession struct {
	u0, a1, a2, r1, a3 *transcript.Record
	// withoutReplay is the session as it should read; withReplay has the replay written
	// after a3, and read back from its lines.
	withoutReplay, withReplay []transcript.Record
}

func newReplaySession(t *testing.T, replay func(s *replaySession) []transcript.Record) *replaySession {
	t.Helper()
	k := newTK()
	k.user("list the files")
	k.assistant(text("I will look."), toolUse("t1", "Bash"))
	k.results(result("t1", "a.go b.go"))
	k.assistant(text("Two files."))
	base := k.recs
	s := &replaySession{u0: &base[0], a1: &base[1], a2: &base[2], r1: &base[3], a3: &base[4]}
	followUp := func(parent string) []transcript.Record {
		k2 := &tk{t0: k.t0, n: 100, last: parent, msgN: 50}
		k2.user("and now?")
		k2.assistant(text("Done."))
		return k2.recs
	}
	s.withoutReplay = slices.Concat(base, followUp(s.a3.UUID))
	rp := replay(s)
	s.withReplay = roundTrip(t, slices.Concat(base, rp, followUp(rp[len(rp)-1].UUID)))
	return s
}

// again returns a copy of r under a new uuid with the given parent, as a resume writes it.
func again(r *transcript.Record, uuid, parent string) transcript.Record {
	c := *r
	c.UUID, c.ParentUUID = uuid, parent
	return c
}

func TestBuildChainReplays(t *testing.T) {
	tests := []struct {
		name    string
		replay  func(s *replaySession) []transcript.Record
		lines   []int // lines of the records left out
		of      []int // lines of the records they repeat
		same    bool  // written under the same uuids
		differs bool
	}{
		{
			name: "a response and its result written again under new uuids",
			replay: func(s *replaySession) []transcript.Record {
				a1 := again(s.a1, "r-a1", s.u0.UUID)
				a2 := again(s.a2, "r-a2", "r-a1")
				r1 := again(s.r1, "r-r1", "r-a2")
				a3 := again(s.a3, "r-a3", "r-r1")
				return []transcript.Record{a1, a2, r1, a3}
			},
			lines: []int{6, 7, 8, 9}, of: []int{2, 3, 4, 5},
		},
		{
			name: "the split records of one message.id written again",
			replay: func(s *replaySession) []transcript.Record {
				return []transcript.Record{again(s.a3, "r-a3", s.a3.UUID)}
			},
			lines: []int{6}, of: []int{5},
		},
		{
			name: "records written again under the same uuids",
			replay: func(s *replaySession) []transcript.Record {
				return []transcript.Record{*s.u0, *s.a1, *s.a2, *s.r1, *s.a3}
			},
			lines: []int{6, 7, 8, 9, 10}, of: []int{1, 2, 3, 4, 5}, same: true,
		},
		{
			name: "a record written again under its uuid with other content",
			replay: func(s *replaySession) []transcript.Record {
				c := *s.a3
				c.Message = &transcript.Message{ID: c.Message.ID, Type: "message", Role: transcript.RoleAssistant, Content: []transcript.Block{text("Three files.")}}
				return []transcript.Record{c}
			},
			lines: []int{6}, of: []int{5}, same: true, differs: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newReplaySession(t, tt.replay)
			want, err := transcript.BuildChain(s.withoutReplay, transcript.ChainOptions{})
			require.NoError(t, err)
			got, err := transcript.BuildChain(s.withReplay, transcript.ChainOptions{})
			require.NoError(t, err)
			assert.Equal(t, chainUUIDs(want), chainUUIDs(got), "each record once, the first written")
			var lines, of []int
			for _, rp := range got.Replays {
				lines, of = append(lines, rp.Line), append(of, rp.OfLine)
				assert.Equal(t, tt.same, rp.SameUUID)
				assert.Equal(t, tt.differs, rp.Differs)
				assert.NotEmpty(t, rp.String())
				if rp.MessageID != "" {
					assert.Contains(t, rp.String(), rp.MessageID)
				}
			}
			assert.Equal(t, tt.lines, lines)
			assert.Equal(t, tt.of, of)
			assert.Empty(t, got.Problems)

			// The request is the one the session without the replay gives.
			now := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
			p := newTestPipeline(t, Config{Model: "claude-sonnet-4-5"}, now)
			wantRes, err := p.Prepare(t.Context(), Input{Records: s.withoutReplay})
			require.NoError(t, err)
			gotRes, err := p.Prepare(t.Context(), Input{Records: s.withReplay})
			require.NoError(t, err)
			assert.Equal(t, string(requestBytes(t, wantRes.Request)), string(requestBytes(t, gotRes.Request)))
		})
	}
}

func TestBuildChainReplayEdges(t *testing.T) {
	t.Run("the leaf written again stands for the first", func(t *testing.T) {
		k := newTK()
		k.user("q")
		a := k.assistant(text("answer"))
		k.add(new(again(a, "r-a", a.UUID)))
		c, err := transcript.BuildChain(k.recs, transcript.ChainOptions{})
		require.NoError(t, err)
		assert.Equal(t, a.UUID, c.Leaf.UUID)
		assert.Len(t, c.Records, 2)
		require.Len(t, c.Replays, 1)
		assert.Equal(t, "r-a", c.Replays[0].UUID)
	})
	t.Run("the leaf under a repeated uuid is the first occurrence", func(t *testing.T) {
		k := newTK()
		k.user("q")
		a := k.assistant(text("answer"))
		k.add(new(*a))
		c, err := transcript.BuildChain(k.recs, transcript.ChainOptions{})
		require.NoError(t, err)
		assert.Same(t, &k.recs[1], c.Leaf)
		assert.Equal(t, []int{0, 1}, []int{c.Index(0), c.Index(1)})
	})
	t.Run("blocks of one response that differ are all kept", func(t *testing.T) {
		k := newTK()
		k.user("q")
		k.assistant(text("\n\n"), text("one"), text("\n\n"), toolUse("t1", "Read"), toolUse("t2", "Read"))
		c, err := transcript.BuildChain(k.recs, transcript.ChainOptions{})
		require.NoError(t, err)
		assert.Len(t, c.Records, 6, "whitespace text written twice is no replay")
		assert.Empty(t, c.Replays)
	})
	t.Run("records off the chain are not reported", func(t *testing.T) {
		k := newTK()
		root := k.user("q")
		k.assistant(text("a"))
		k.last = root.UUID
		side := k.user("other branch")
		k.add(new(*side)) // written twice, but not on the active branch
		k.last = k.recs[1].UUID
		k.user("main")
		c, err := transcript.BuildChain(k.recs, transcript.ChainOptions{})
		require.NoError(t, err)
		assert.Empty(t, c.Replays)
	})
	t.Run("a result written before its call answers nothing", func(t *testing.T) {
		// Found by fuzzing: a result naming t1, then the call t1, then the same result. The
		// first answers no call (none came before it), so the second is the answer, not a
		// replay of it.
		k := newTK()
		k.user("q")
		early := k.results(result("t1", "out"))
		k.assistant(toolUse("t1", "Bash"))
		answer := k.results(result("t1", "out"))
		k.assistant(text("done"))
		c, err := transcript.BuildChain(k.recs, transcript.ChainOptions{})
		require.NoError(t, err)
		assert.Empty(t, c.Replays)
		var uuids []string
		for _, r := range c.Records {
			uuids = append(uuids, r.UUID)
		}
		assert.Contains(t, uuids, answer.UUID, "the answer after the call is on the chain")
		assert.Contains(t, uuids, early.UUID, "the early result stays on its parent walk; normalize reports it")
		p, err := New(Config{ContextWindow: 200_000})
		require.NoError(t, err)
		in := Input{Records: k.recs}
		res, err := p.Prepare(t.Context(), in)
		require.NoError(t, err)
		checkConservation(t, "early result", in, res)
	})
	t.Run("many copies", func(t *testing.T) {
		k := newTK()
		k.user("q")
		a := k.assistant(text("answer"))
		for i := range 5 {
			k.add(new(again(a, fmt.Sprintf("r-%d", i), a.UUID)))
		}
		c, err := transcript.BuildChain(k.recs, transcript.ChainOptions{})
		require.NoError(t, err)
		assert.Len(t, c.Records, 2)
		assert.Len(t, c.Replays, 5)
	})
}
