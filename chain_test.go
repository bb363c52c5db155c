package agentctx

import (
	"path/filepath"
	"testing"

	"github.com/agentctx/agentctx/transcript"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// chainUUIDs returns the uuids of a chain's records.
func chainUUIDs(c *transcript.Chain) []string {
	var out []string
	for _, r := range c.Records {
		out = append(out, r.UUID)
	}
	return out
}

func TestBuildChainParallelToolCalls(t *testing.T) {
	// The graph Claude Code writes for three parallel calls: results parented on their own
	// tool_use records, the next response hanging off the last result written. A plain parent walk from A5 loses t3's tool_use and the t1/t3 results.
	k := newTK()
	u0 := k.user("go")
	k.assistant(text("three calls"), toolUse("t1", "Read"), toolUse("t2", "Read"), toolUse("t3", "Read"))
	r3 := k.results(result("t3", "three"))
	r1 := k.results(result("t1", "one"))
	r2 := k.results(result("t2", "two"))
	a5 := k.next(transcript.TypeAssistant)
	a5.ParentUUID = r2.UUID
	a5.Message = &transcript.Message{ID: "msg_b", Role: transcript.RoleAssistant, Content: []transcript.Block{text("done")}}
	k.add(a5)
	_ = r1
	_ = r3

	c, err := transcript.BuildChain(k.recs, transcript.ChainOptions{})
	require.NoError(t, err)
	assert.Equal(t, a5.UUID, c.Leaf.UUID)
	assert.Len(t, c.Records, len(k.recs), "every record is on the rebuilt chain")
	assert.Equal(t, u0.UUID, c.Records[0].UUID)
	assert.Empty(t, c.Unanswered)
	for i := 1; i < len(c.Records); i++ {
		assert.Less(t, c.Index(i-1), c.Index(i), "file order")
	}
}

func TestBuildChainCompactBoundary(t *testing.T) {
	k := newTK()
	k.user("before")
	pre := k.assistant(text("old answer"))
	b := k.next(transcript.TypeSystem)
	b.Subtype, b.ParentUUID, b.LogicalParentUUID = transcript.SubtypeCompactBoundary, "", pre.UUID
	b.CompactMetadata = &transcript.CompactMetadata{Trigger: "auto", PreTokens: 1000}
	k.add(b)
	sum := k.user("This session is being continued from a previous conversation…")
	last := k.assistant(text("new answer"))

	c, err := transcript.BuildChain(k.recs, transcript.ChainOptions{})
	require.NoError(t, err)
	require.NotNil(t, c.Boundary)
	assert.Equal(t, pre.UUID, c.Boundary.LogicalParentUUID)
	assert.Equal(t, []string{b.UUID, sum.UUID, last.UUID}, chainUUIDs(c))
	assert.Len(t, c.Messages(), 2)

	full, err := transcript.BuildChain(k.recs, transcript.ChainOptions{ThroughBoundaries: true})
	require.NoError(t, err)
	assert.Len(t, full.Records, len(k.recs), "logicalParentUuid links the history before the boundary")
}

func TestBuildChainEdgeCases(t *testing.T) {
	t.Run("empty", func(t *testing.T) {
		c, err := transcript.BuildChain(nil, transcript.ChainOptions{})
		require.NoError(t, err)
		assert.Nil(t, c.Leaf)
		assert.Empty(t, c.Records)
	})
	t.Run("unknown leaf", func(t *testing.T) {
		_, err := transcript.BuildChain(newTK().recs, transcript.ChainOptions{Leaf: "nope"})
		assert.ErrorContains(t, err, `"nope"`)
	})
	t.Run("cycle", func(t *testing.T) {
		k := newTK()
		a := k.user("a")
		k.assistant(text("b"))
		k.recs[0].ParentUUID = k.recs[1].UUID // a → b → a
		c, err := transcript.BuildChain(k.recs, transcript.ChainOptions{})
		require.NoError(t, err)
		assert.Equal(t, 1, c.Cycles)
		assert.Contains(t, chainUUIDs(c), a.UUID)
	})
	t.Run("parent after child and dangling root", func(t *testing.T) {
		k := newTK()
		u := k.user("q").UUID
		a := k.assistant(text("x")).UUID
		k.recs[0], k.recs[1] = k.recs[1], k.recs[0] // the parent is written after its child
		k.recs[1].ParentUUID = "missing"
		c, err := transcript.BuildChain(k.recs, transcript.ChainOptions{Leaf: a})
		require.NoError(t, err)
		assert.Equal(t, []string{a, u}, chainUUIDs(c), "file order")
	})
	t.Run("session ended mid-call", func(t *testing.T) {
		k := newTK()
		k.user("q")
		k.assistant(toolUse("t9", "Bash"))
		c, err := transcript.BuildChain(k.recs, transcript.ChainOptions{})
		require.NoError(t, err)
		assert.Equal(t, []string{"t9"}, c.Unanswered)
	})
	t.Run("result record without uuid does not adopt parentless interrupt notices", func(t *testing.T) {
		k := newTK()
		k.user("q")
		a := k.assistant(toolUse("t1", "Bash")).UUID
		k.results(result("t1", "ok"))
		k.recs[len(k.recs)-1].UUID = "" // a result record without a uuid
		notice := k.user("[Request interrupted by user]")
		notice.ParentUUID = "" // an unrelated root
		k.last = a
		leaf := k.user("next").UUID
		c, err := transcript.BuildChain(k.recs, transcript.ChainOptions{})
		require.NoError(t, err)
		assert.Equal(t, leaf, c.Leaf.UUID)
		assert.NotContains(t, chainUUIDs(c), notice.UUID)
		assert.Len(t, c.Records, 4, "q, tool_use, result, next")
	})
	t.Run("interrupt notice under a result off the walk", func(t *testing.T) {
		// A rejected parallel call: the notice hangs off t1's result; the conversation goes on
		// from t2's result, so neither is on the leaf's parent walk.
		k := newTK()
		k.user("q")
		k.assistant(toolUse("t1", "Bash"), toolUse("t2", "Bash"))
		r1 := k.results(result("t1", "The user doesn't want to proceed with this tool use.")).UUID
		notice := k.user("[Request interrupted by user for tool use]")
		notice.ParentUUID = r1
		k.results(result("t2", "ok"))
		k.assistant(text("stopped"))
		c, err := transcript.BuildChain(k.recs, transcript.ChainOptions{})
		require.NoError(t, err)
		var all []string
		for _, r := range k.recs {
			all = append(all, r.UUID)
		}
		assert.Equal(t, all, chainUUIDs(c), "every record, the notice included")
	})
	t.Run("sidechain file", func(t *testing.T) {
		k := newTK()
		k.user("Warmup").IsSidechain = true
		k.assistant(text("ok")).IsSidechain = true
		c, err := transcript.BuildChain(k.recs, transcript.ChainOptions{})
		require.NoError(t, err)
		assert.Len(t, c.Records, 2)
	})
}

// TestCorpusChains rebuilds the active chain of every corpus session and checks that no
// tool_use is left without its result except where the session really ended mid-call: the
// unanswered calls must all be in the chain's last assistant response, with no user message
// after them.
func TestCorpusChains(t *testing.T) {
	for _, path := range corpusFiles(t) {
		name, _ := filepath.Rel(corpusDir(t), path)
		t.Run(name, func(t *testing.T) {
			tr, err := transcript.ReadFile(path, transcript.ReadOptions{Strict: true})
			require.NoError(t, err)
			c, err := transcript.BuildChain(tr.Records, transcript.ChainOptions{})
			require.NoError(t, err)
			if len(tr.Records) > 0 && c.Leaf == nil {
				for _, r := range tr.Records {
					require.False(t, r.IsConversation(), "a file with messages must have a leaf")
				}
				return
			}
			assert.Zero(t, c.Cycles)
			if len(c.Unanswered) == 0 {
				return
			}
			msgs := c.Messages()
			lastUser := -1
			for i, r := range msgs {
				if r.Type == transcript.TypeUser {
					lastUser = i
				}
			}
			for _, id := range c.Unanswered {
				at := -1
				for i, r := range msgs {
					for _, b := range r.Message.Content {
						if tu, ok := b.(*transcript.ToolUse); ok && tu.ID == id {
							at = i
						}
					}
				}
				assert.Greater(t, at, lastUser, "tool_use %s is unanswered but the conversation went on", id)
			}
		})
	}
}

// TestBuildChainSidechains mixes one subagent's records (isSidechain, as older Claude Code wrote
// them into the main file) with the main conversation, sharing a response's message id and a
// tool_use id with it (a subagent replaying the parent's context). Each thread's chain holds
// its own records only: the default leaf is the main thread's last message even when a
// sidechain record comes later in the file, and naming a sidechain leaf rebuilds the subagent's
// conversation without the main thread's records.
func TestBuildChainSidechains(t *testing.T) {
	k := newTK()
	var main, side []string
	mainRec := func(r *transcript.Record) { main = append(main, r.UUID) }
	sideRec := func(r *transcript.Record) *transcript.Record {
		r.IsSidechain = true
		side = append(side, r.UUID)
		return r
	}
	mainRec(k.user("find the bug"))
	k.assistant(text("delegating"), toolUse("task_1", "Task")) // msg_0001, two records
	mainRec(&k.recs[1])
	mainRec(&k.recs[2])
	toolUseRec := k.recs[2].UUID

	// The subagent: its own root, a response reusing the parent's message id, and a result
	// for the parent's tool_use id.
	k.last = ""
	sideRec(k.user("subagent: find the bug"))
	s := sideRec(k.next(transcript.TypeAssistant))
	s.Message = &transcript.Message{ID: "msg_0001", Role: transcript.RoleAssistant, Content: []transcript.Block{toolUse("task_1", "Grep")}}
	k.add(s)
	sideRec(k.results(result("task_1", "grep output")))
	sideRec(k.assistant(text("found it in main.go")))

	// The main thread goes on from its tool call.
	r := k.results(result("task_1", "the subagent found it in main.go"))
	r.ParentUUID = toolUseRec // results finds the subagent's tool_use, the later one
	mainRec(r)
	mainRec(k.assistant(text("fixed")))
	mainRec(k.user("thanks"))
	k.last = side[len(side)-1]
	late := sideRec(k.assistant(text("subagent: anything else?"))) // the file's last message
	require.True(t, late.IsSidechain)

	tests := []struct {
		name string
		leaf string
		want []string
	}{
		{"main thread (default leaf)", "", main},
		{"main thread (named leaf)", main[len(main)-1], main},
		{"subagent thread", late.UUID, side},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := transcript.BuildChain(k.recs, transcript.ChainOptions{Leaf: tt.leaf})
			require.NoError(t, err)
			assert.Equal(t, tt.want, chainUUIDs(c))
			for _, r := range c.Records {
				assert.Equal(t, c.Leaf.IsSidechain, r.IsSidechain, "record %s is from the other thread", r.UUID)
			}
			assert.Empty(t, c.Unanswered)
			assert.Empty(t, chainViolations(k.recs, c, tt.leaf))
		})
	}
}
