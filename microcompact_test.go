package agentctx

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentctx/agentctx/provider"

	"github.com/agentctx/agentctx/transcript"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// mcBody is a tool output long enough that clearing it frees tokens.
func mcBody(id string) string { return strings.Repeat("output of "+id+" line\n", 40) }

// mcSession builds: a prompt, then one tool round per name (tool_use mc_<i> of that tool and
// its result), then a closing assistant text. It returns the builder and the ids in order.
func mcSession(names ...string) (*tk, []string) {
	k := newTK()
	k.user("please look around")
	var ids []string
	for i, name := range names {
		id := fmt.Sprintf("mc_%02d", i+1)
		ids = append(ids, id)
		k.assistant(text("calling "+name), toolUse(id, name))
		k.results(result(id, mcBody(id)))
	}
	k.assistant(text("done"))
	return k, ids
}

func mcPipeline(t *testing.T, now time.Time, mc MicrocompactConfig) *Pipeline {
	t.Helper()
	return newTestPipeline(t, Config{Microcompact: mc}, now)
}

func TestMicrocompactTime(t *testing.T) {
	seven := []string{"Read", "Bash", "Grep", "Glob", "Read", "Edit", "Write"}
	tests := []struct {
		name    string
		tools   []string
		after   time.Duration // now = last record + after
		cfg     MicrocompactConfig
		cache   CacheConfig
		cleared []int // 1-based indexes of the results that must be cleared
		// deferred: a warm clearing under the floor, reported in CacheCosts
		deferred bool
	}{
		{name: "gap not reached", tools: seven, after: 4 * time.Minute},
		{name: "gap exactly reached is not over it", tools: seven, after: 5 * time.Minute},
		{name: "gap reached keeps the 5 newest", tools: seven, after: 6 * time.Minute, cleared: []int{1, 2}},
		{name: "1h TTL: the gap is an hour", tools: seven, after: 59 * time.Minute, cache: CacheConfig{TTL: "1h"}},
		{name: "1h TTL: past the hour", tools: seven, after: 61 * time.Minute, cache: CacheConfig{TTL: "1h"}, cleared: []int{1, 2}},
		{name: "keepRecent 2", tools: seven, after: 2 * time.Hour, cfg: MicrocompactConfig{KeepRecent: 2}, cleared: []int{1, 2, 3, 4, 5}},
		{name: "custom gap", tools: seven, after: 61 * time.Minute, cfg: MicrocompactConfig{Gap: time.Hour}, cleared: []int{1, 2}},
		{name: "custom gap not reached", tools: seven, after: 59 * time.Minute, cfg: MicrocompactConfig{Gap: time.Hour}},
		{name: "gap under the TTL: a warm clearing under the floor is deferred", tools: seven, after: 3 * time.Minute,
			cfg: MicrocompactConfig{Gap: 2 * time.Minute}, cache: CacheConfig{MinGain: 1}, deferred: true},
		{name: "gap under the TTL: far under the threshold the reads saved pay", tools: seven, after: 3 * time.Minute,
			cfg: MicrocompactConfig{Gap: 2 * time.Minute}, cleared: []int{1, 2}},
		{name: "gap under the TTL without a floor", tools: seven, after: 3 * time.Minute,
			cfg: MicrocompactConfig{Gap: 2 * time.Minute}, cache: CacheConfig{MinGain: -1}, cleared: []int{1, 2}},
		{name: "gap under the TTL, a low floor", tools: seven, after: 3 * time.Minute,
			cfg: MicrocompactConfig{Gap: 2 * time.Minute}, cache: CacheConfig{MinGain: 0.01}, cleared: []int{1, 2}},
		{name: "disabled", tools: seven, after: 5 * time.Hour, cfg: MicrocompactConfig{Disable: true}},
		{name: "fewer than keepRecent", tools: []string{"Read", "Read", "Read"}, after: 5 * time.Hour},
		{
			name:  "non-compactable tools untouched and not counted",
			tools: []string{"Task", "Read", "TodoWrite", "Read", "Read", "Read", "Read", "Read", "mcp__x__y"},
			after: 2 * time.Hour, cleared: []int{2},
		},
		{
			name:  "custom tool list",
			tools: []string{"Task", "Read", "Task", "Read"},
			after: 2 * time.Hour, cfg: MicrocompactConfig{Tools: []string{"Task"}, KeepRecent: 1}, cleared: []int{1},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			k, ids := mcSession(tc.tools...)
			p := newTestPipeline(t, Config{Microcompact: tc.cfg, Cache: tc.cache}, k.at(tc.after))
			res, err := p.Prepare(t.Context(), Input{Records: k.recs})
			require.NoError(t, err)
			mcValid(t, res.Request)
			if tc.deferred {
				require.Len(t, res.Report.CacheCosts, 1)
				cc := res.Report.CacheCosts[0]
				assert.False(t, cc.Made)
				assert.False(t, cc.Cold)
				assert.Equal(t, "microcompact", cc.Decision)
				assert.Less(t, cc.Freed, cc.MinGain, cc.String())
			} else if tc.cfg.Gap == 2*time.Minute {
				require.Len(t, res.Report.CacheCosts, 1)
				assert.True(t, res.Report.CacheCosts[0].Made, res.Report.CacheCosts[0].String())
			} else {
				assert.Empty(t, res.Report.CacheCosts, "a cold clearing is no advisory decision")
			}
			got, _ := toolResults(res.Request)
			require.Len(t, got, len(ids))
			want := map[string]bool{}
			for _, i := range tc.cleared {
				want[ids[i-1]] = true
			}
			var wantIDs []string
			for _, id := range ids {
				if want[id] {
					wantIDs = append(wantIDs, id)
					assert.Equal(t, ClearedToolResultText, resultText(got[id]), id)
					assert.True(t, got[id].StringContent, id)
				} else {
					assert.Equal(t, mcBody(id), resultText(got[id]), id)
				}
			}
			st := res.Report.Stage("microcompact")
			require.NotNil(t, st)
			if len(wantIDs) == 0 {
				assert.Empty(t, mcAppend(res))
				if !tc.deferred {
					assert.Empty(t, st.Actions)
				}
				return
			}
			require.Len(t, mcAppend(res), 1)
			d := mcAppend(res)[0]
			assert.Equal(t, transcript.SubtypeMicrocompact, d.Subtype)
			assert.Equal(t, transcript.TypeSystem, d.Type)
			assert.Empty(t, d.ParentUUID)
			require.NotNil(t, d.Microcompact)
			assert.Equal(t, "time", d.Microcompact.Trigger)
			assert.Equal(t, wantIDs, d.Microcompact.ClearedToolUseIDs)
			assert.InDelta(t, tc.after.Minutes(), d.Microcompact.GapMinutes, 0.05)
			assert.Equal(t, st.TokensFreed, d.Microcompact.TokensSaved)
			assert.Positive(t, st.TokensFreed)
			require.Len(t, st.Actions, len(wantIDs))
			for i, a := range st.Actions {
				assert.Equal(t, ActionCleared, a.Kind)
				assert.Equal(t, wantIDs[i], a.ToolUseID)
				assert.Negative(t, a.Tokens)
			}
		})
	}
}

func TestMicrocompactClearsErrorsAndPersistedOutput(t *testing.T) {
	k := newTK()
	k.user("go")
	k.assistant(toolUse("e1", "Bash"))
	k.results(&transcript.ToolResult{ToolUseID: "e1", IsError: true, StringContent: true,
		Content: []transcript.Block{&transcript.Text{Text: "<tool_use_error>" + mcBody("e1") + "</tool_use_error>"}}})
	k.assistant(toolUse("p1", "Read"))
	k.results(&transcript.ToolResult{ToolUseID: "p1", Content: []transcript.Block{&transcript.Text{Text: "<persisted-output>\nOutput too large. Preview:\n" + mcBody("p1") + "</persisted-output>"}}})
	k.assistant(toolUse("k1", "Read"))
	k.results(result("k1", mcBody("k1")))
	k.assistant(text("ok"))
	before := k.recs[2].Message.Content[0].(*transcript.ToolResult)

	p := mcPipeline(t, k.at(3*time.Hour), MicrocompactConfig{KeepRecent: 1})
	res, err := p.Prepare(t.Context(), Input{Records: k.recs})
	require.NoError(t, err)
	mcValid(t, res.Request)
	got, _ := toolResults(res.Request)
	assert.Equal(t, ClearedToolResultText, resultText(got["e1"]))
	assert.True(t, got["e1"].IsError, "is_error survives clearing")
	assert.Equal(t, ClearedToolResultText, resultText(got["p1"]))
	assert.Equal(t, mcBody("k1"), resultText(got["k1"]))
	require.Len(t, mcAppend(res), 1)
	assert.Equal(t, []string{"e1", "p1"}, mcAppend(res)[0].Microcompact.ClearedToolUseIDs)
	// The transcript's blocks are untouched.
	assert.Same(t, before, k.recs[2].Message.Content[0])
	assert.Contains(t, resultText(before), "tool_use_error")
	enc := string(requestBytes(t, res.Request))
	assert.Contains(t, enc, `{"type":"tool_result","tool_use_id":"e1","content":"[Old tool result content cleared]","is_error":true}`)
}

// TestMicrocompactReapply: once the decision is appended, later turns re-apply it byte for
// byte, whatever the clock says, and decide nothing new for the same results.
func TestMicrocompactReapply(t *testing.T) {
	k, ids := mcSession("Read", "Read", "Bash", "Read", "Grep", "Read", "Glob")
	now := k.at(90 * time.Minute)
	p := mcPipeline(t, now, MicrocompactConfig{})
	first, err := p.Prepare(t.Context(), Input{Records: k.recs})
	require.NoError(t, err)
	require.Len(t, mcAppend(first), 1)

	// Prepare twice: identical bytes and identical decisions.
	again, err := p.Prepare(t.Context(), Input{Records: k.recs})
	require.NoError(t, err)
	assert.Equal(t, string(requestBytes(t, first.Request)), string(requestBytes(t, again.Request)))
	assert.Equal(t, first.Append, again.Append)

	// Persist the decisions through JSON, as the caller would.
	recs := roundTrip(t, append(append([]transcript.Record(nil), k.recs...), first.Append...))

	for _, tc := range []struct {
		name string
		now  time.Time
	}{
		{"same clock", now},
		{"clock back under the gap", k.at(time.Minute)},
		{"clock far later", k.at(50 * time.Hour)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := mcPipeline(t, tc.now, MicrocompactConfig{})
			res, err := p.Prepare(t.Context(), Input{Records: recs})
			require.NoError(t, err)
			mcValid(t, res.Request)
			assert.Equal(t, string(requestBytes(t, first.Request)), string(requestBytes(t, res.Request)))
			assert.Empty(t, res.Append, "no new decision for the same results")
			st := res.Report.Stage("microcompact")
			require.Len(t, st.Actions, 2)
			for i, a := range st.Actions {
				assert.Equal(t, ActionReapplied, a.Kind)
				assert.Equal(t, ids[i], a.ToolUseID)
			}
		})
	}

	t.Run("disabled still re-applies", func(t *testing.T) {
		p := mcPipeline(t, now, MicrocompactConfig{Disable: true})
		res, err := p.Prepare(t.Context(), Input{Records: recs})
		require.NoError(t, err)
		assert.Equal(t, string(requestBytes(t, first.Request)), string(requestBytes(t, res.Request)))
	})

	t.Run("new turn under the gap keeps the prefix", func(t *testing.T) {
		k2 := *k
		k2.recs = append([]transcript.Record(nil), recs...)
		k2.user("and now?")
		k2.assistant(toolUse("mc_08", "Read"))
		k2.results(result("mc_08", mcBody("mc_08")))
		p := mcPipeline(t, k2.at(time.Minute), MicrocompactConfig{})
		res, err := p.Prepare(t.Context(), Input{Records: k2.recs})
		require.NoError(t, err)
		mcValid(t, res.Request)
		assert.Empty(t, mcAppend(res))
		got, _ := toolResults(res.Request)
		assert.Equal(t, ClearedToolResultText, resultText(got["mc_01"]))
		assert.Equal(t, ClearedToolResultText, resultText(got["mc_02"]))
		assert.Equal(t, mcBody("mc_03"), resultText(got["mc_03"]), "the gap is not reached: nothing new")
		// Every message before the new ones is byte-identical, but for the marker, which was
		// on the closing answer (before the continuation the first request ended with).
		for i := range len(first.Request.Messages) - 1 {
			assert.Equal(t, strings.Replace(mcMessageBytes(t, first.Request, i), `,"cache_control":{"type":"ephemeral"}`, "", 1),
				mcMessageBytes(t, res.Request, i), "message %d", i)
		}
	})
}

// mcMessageBytes marshals message i of req alone.
func mcMessageBytes(t *testing.T, req provider.Request, i int) string {
	t.Helper()
	return string(requestBytes(t, provider.Request{Messages: []provider.Message{req.Messages[i]}}))
}

// mcCachedSession: 7 Read rounds, a closing answer, then a new user prompt (the last message).
func mcCachedSession() (*tk, []string) {
	k, ids := mcSession("Read", "Read", "Read", "Read", "Read", "Read", "Read")
	k.user("next question")
	return k, ids
}

func TestMicrocompactCached(t *testing.T) {
	tests := []struct {
		name    string
		trigger int
		skip    bool
		marked  []string
	}{
		{name: "below the trigger", trigger: 1_000_000},
		{name: "above the trigger", trigger: 500, marked: []string{"mc_01", "mc_02"}},
		{name: "above the trigger, skip cache write", trigger: 500, skip: true, marked: []string{"mc_01", "mc_02"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			k, ids := mcCachedSession()
			pinUUID := k.recs[len(k.recs)-1].UUID
			// Within the idle gap: the cache is warm, so results are deleted from it.
			p := mcPipeline(t, k.at(0), MicrocompactConfig{Cached: true, CacheEditingBeta: testCacheBeta, CachedTriggerTokens: tc.trigger})
			res, err := p.Prepare(t.Context(), Input{Records: k.recs, SkipCacheWrite: tc.skip})
			require.NoError(t, err)
			mcValid(t, res.Request)
			got, _ := toolResults(res.Request)
			for _, id := range ids {
				assert.Equal(t, mcBody(id), resultText(got[id]), "cached mode leaves content in place: %s", id)
			}
			edits, at := mcCacheEdits(res.Request)
			// The deleted results are sent but not counted, and the request names its beta.
			counted := p.counter.Request(&res.Request)
			assert.Equal(t, counted-res.Report.CacheDeletedTokens, res.Report.InputTokens)
			assert.Equal(t, res.Report.InputTokens, res.Report.Pressure.Counted)
			bd := p.Breakdown(&res)
			assert.Equal(t, res.Report.InputTokens, bd.InputTokens(), "the breakdown leaves the deleted results out")
			assert.Equal(t, res.Report.CacheDeletedTokens, bd.CacheDeleted)
			if tc.marked == nil {
				assert.Zero(t, res.Report.CacheDeletedTokens)
				assert.Nil(t, res.Request.Betas)
				assert.Empty(t, mcAppend(res))
				assert.Empty(t, edits)
				for _, id := range ids {
					assert.Empty(t, got[id].CacheReference)
				}
				return
			}
			for _, id := range ids {
				if slices.Contains(tc.marked, id) {
					assert.Equal(t, id, got[id].CacheReference)
				} else {
					assert.Empty(t, got[id].CacheReference, id)
				}
			}
			// cache_edits: last block of the last message (the pinned prompt).
			require.Len(t, at, 1)
			last := len(res.Request.Messages) - 1
			assert.Equal(t, last, at[0])
			msg := res.Request.Messages[last]
			assert.Equal(t, transcript.RoleUser, msg.Role)
			assert.Equal(t, transcript.KindCacheEdits, msg.Content[len(msg.Content)-1].Kind())
			var refs []string
			for _, e := range edits {
				assert.Equal(t, "delete", e.Type)
				refs = append(refs, e.CacheReference)
			}
			assert.Equal(t, tc.marked, refs)
			mcAssertRefsBeforeMarker(t, res.Request)
			assert.Equal(t, []string{testCacheBeta}, res.Request.Betas)
			deleted := 0
			for _, id := range tc.marked {
				deleted += p.counter.Block(got[id])
			}
			assert.Equal(t, deleted, res.Report.CacheDeletedTokens)

			require.Len(t, mcAppend(res), 1)
			d := mcAppend(res)[0].Microcompact
			require.NotNil(t, d)
			assert.Equal(t, "cached", d.Trigger)
			assert.Equal(t, tc.marked, d.ClearedToolUseIDs)
			assert.Equal(t, pinUUID, d.PinnedUUID)
			assert.Positive(t, d.TokensSaved)
			st := res.Report.Stage("microcompact")
			assert.Equal(t, d.TokensSaved, st.TokensFreed)
			enc := string(requestBytes(t, res.Request))
			assert.Contains(t, enc, `{"type":"cache_edits","edits":[{"type":"delete","cache_reference":"mc_01"},{"type":"delete","cache_reference":"mc_02"}]}`)
			assert.Contains(t, enc, `"cache_reference":"mc_01"`)
		})
	}
}

// TestMicrocompactCachedPinned: a deletion is re-sent at the same message on later turns,
// while new messages are appended, and a later deletion is pinned at its own message.
func TestMicrocompactCachedPinned(t *testing.T) {
	k, _ := mcCachedSession()
	cfg := MicrocompactConfig{Cached: true, CacheEditingBeta: testCacheBeta, CachedTriggerTokens: 1800}
	p := mcPipeline(t, k.at(time.Minute), cfg)
	first, err := p.Prepare(t.Context(), Input{Records: k.recs})
	require.NoError(t, err)
	require.Len(t, mcAppend(first), 1)
	_, at1 := mcCacheEdits(first.Request)
	require.Len(t, at1, 1)
	pin := at1[0]

	// Prepare again with the decision appended: identical bytes, nothing new.
	k.recs = append(k.recs, first.Append...)
	again, err := p.Prepare(t.Context(), Input{Records: k.recs})
	require.NoError(t, err)
	assert.Equal(t, string(requestBytes(t, first.Request)), string(requestBytes(t, again.Request)))
	assert.Empty(t, again.Append)

	// A later turn: the answer, one more tool round and a new prompt. The live context
	// (minus the deleted results) stays under the trigger, so nothing new is deleted.
	k.assistant(text("answer"))
	k.assistant(toolUse("mc_08", "Read"))
	k.results(result("mc_08", "short"))
	k.assistant(text("answer 2"))
	k.user("third question")
	later, err := mcPipeline(t, k.at(time.Minute), cfg).Prepare(t.Context(), Input{Records: k.recs})
	require.NoError(t, err)
	assert.Empty(t, mcAppend(later))
	edits, at := mcCacheEdits(later.Request)
	require.Equal(t, []int{pin}, at, "cache_edits re-sent at the same message index")
	assert.Len(t, edits, 2)
	for i := range pin {
		assert.Equal(t, mcMessageBytes(t, first.Request, i), mcMessageBytes(t, later.Request, i), "message %d", i)
	}
	// The pinned message differs only by the cache marker that moved to the new last message.
	assert.Equal(t, strings.Replace(mcMessageBytes(t, first.Request, pin), `,"cache_control":{"type":"ephemeral"}`, "", 1),
		mcMessageBytes(t, later.Request, pin))
	mcAssertRefsBeforeMarker(t, later.Request)
	mcValid(t, later.Request)

	// Grow the live context past the trigger: a second deletion, pinned at the new last prompt.
	for i := 9; i <= 14; i++ {
		id := fmt.Sprintf("mc_%02d", i)
		k.assistant(toolUse(id, "Read"))
		k.results(result(id, mcBody(id)))
	}
	k.assistant(text("answer 3"))
	k.user("fourth question")
	fourth, err := mcPipeline(t, k.at(time.Minute), cfg).Prepare(t.Context(), Input{Records: k.recs})
	require.NoError(t, err)
	require.Len(t, mcAppend(fourth), 1)
	d := mcAppend(fourth)[0].Microcompact
	assert.Equal(t, k.recs[len(k.recs)-1].UUID, d.PinnedUUID)
	assert.NotContains(t, d.ClearedToolUseIDs, "mc_01", "already deleted")
	assert.Equal(t, []string{"mc_03", "mc_04", "mc_05", "mc_06", "mc_07", "mc_08", "mc_09"}, d.ClearedToolUseIDs)
	edits, at = mcCacheEdits(fourth.Request)
	require.Len(t, at, 2)
	assert.Equal(t, pin, at[0])
	assert.Equal(t, len(fourth.Request.Messages)-1, at[1])
	seen := map[string]bool{}
	for _, e := range edits {
		assert.False(t, seen[e.CacheReference], "deduped by cache_reference: %s", e.CacheReference)
		seen[e.CacheReference] = true
	}
	assert.Len(t, seen, 9)
	mcAssertRefsBeforeMarker(t, fourth.Request)
	mcValid(t, fourth.Request)
}

// TestMicrocompactCachedItems runs the stage alone and inspects the view.
func TestMicrocompactCachedItems(t *testing.T) {
	k, _ := mcCachedSession()
	p := mcPipeline(t, k.at(0), MicrocompactConfig{Cached: true, CacheEditingBeta: testCacheBeta, CachedTriggerTokens: 1, KeepRecent: 6})
	in := &Input{Records: k.recs}
	chain, err := transcript.BuildChain(in.Records, transcript.ChainOptions{})
	require.NoError(t, err)
	tn := p.newTurn(t.Context(), in, chain)
	require.NoError(t, p.stages.microcompact.run(tn))
	last := tn.items[len(tn.items)-1]
	require.Equal(t, k.recs[len(k.recs)-1].UUID, last.uuid)
	require.True(t, last.owned)
	ce, ok := last.blocks[len(last.blocks)-1].(*transcript.CacheEdits)
	require.True(t, ok, "cache_edits is the pinned item's last block")
	assert.Equal(t, []transcript.CacheEdit{{Type: "delete", CacheReference: "mc_01"}}, ce.Edits)
	// The record itself is untouched.
	assert.Len(t, k.recs[len(k.recs)-1].Message.Content, 1)
	for _, r := range k.recs {
		if r.Message == nil {
			continue
		}
		for _, b := range r.Message.Content {
			if tr, ok := b.(*transcript.ToolResult); ok {
				assert.Empty(t, tr.CacheReference, "transcript block modified")
			}
		}
	}
}

// TestMicrocompactCachedPinSnipped: a pin whose record left the view moves to the next user
// record in file order.
func TestMicrocompactCachedPinSnipped(t *testing.T) {
	k, _ := mcCachedSession()
	k.assistant(text("answer"))
	k.user("later prompt")
	pinned := k.recs[len(k.recs)-3] // "next question"
	require.Equal(t, transcript.TypeUser, pinned.Type)
	dec := transcript.Record{Type: transcript.TypeSystem, Subtype: transcript.SubtypeMicrocompact, UUID: "dec-1",
		Microcompact: &transcript.MicrocompactDecision{Trigger: "cached", ClearedToolUseIDs: []string{"mc_01"}, PinnedUUID: "not-in-view"}}
	k.decision(dec)
	p := mcPipeline(t, k.at(0), MicrocompactConfig{Cached: true, CacheEditingBeta: testCacheBeta})
	res, err := p.Prepare(t.Context(), Input{Records: k.recs})
	require.NoError(t, err)
	edits, _ := mcCacheEdits(res.Request)
	assert.Empty(t, edits, "a pin unknown to the file is dropped")

	k.recs[len(k.recs)-1].Microcompact.PinnedUUID = pinned.UUID
	res, err = p.Prepare(t.Context(), Input{Records: k.recs})
	require.NoError(t, err)
	edits, at := mcCacheEdits(res.Request)
	require.Len(t, edits, 1)
	assert.Equal(t, "mc_01", edits[0].CacheReference)
	got, _ := toolResults(res.Request)
	assert.Equal(t, "mc_01", got["mc_01"].CacheReference)
	require.Len(t, at, 1)
}

func TestMicrocompactConfigValidate(t *testing.T) {
	tests := []struct {
		cfg MicrocompactConfig
		ok  bool
	}{
		{MicrocompactConfig{}, true},
		{MicrocompactConfig{Gap: -time.Second}, false},
		{MicrocompactConfig{KeepRecent: -1}, false},
		{MicrocompactConfig{CachedTriggerTokens: -1}, false},
		{MicrocompactConfig{Tools: []string{"Read", ""}}, false},
	}
	for _, tc := range tests {
		_, err := New(Config{ContextWindow: 1000, Tokens: EstimateCounter{}, Microcompact: tc.cfg})
		if tc.ok {
			assert.NoError(t, err, "%+v", tc.cfg)
		} else {
			assert.ErrorContains(t, err, "agentctx: Microcompact.", "%+v", tc.cfg)
		}
	}
}

// mcCacheEdits returns every cache_edits deletion of the request and the message indexes of
// the cache_edits blocks.
func mcCacheEdits(req provider.Request) ([]transcript.CacheEdit, []int) {
	var edits []transcript.CacheEdit
	var at []int
	for i, m := range req.Messages {
		for _, b := range m.Content {
			if ce, ok := b.(*transcript.CacheEdits); ok {
				edits = append(edits, ce.Edits...)
				at = append(at, i)
			}
		}
	}
	return edits, at
}

// mcAssertRefsBeforeMarker checks that every cache_reference sits strictly before the message
// carrying the message-level cache marker.
func mcAssertRefsBeforeMarker(t *testing.T, req provider.Request) {
	t.Helper()
	marker := -1
	for i, m := range req.Messages {
		for _, b := range m.Content {
			if transcript.CacheControlOf(b) != nil {
				marker = i
			}
		}
	}
	require.GreaterOrEqual(t, marker, 0, "a message marker")
	for i, m := range req.Messages {
		for _, b := range m.Content {
			if tr, ok := b.(*transcript.ToolResult); ok && tr.CacheReference != "" {
				assert.Less(t, i, marker, "cache_reference %s", tr.CacheReference)
			}
		}
	}
}

// mcAppend returns the microcompact decisions among the records a turn appends (other
// stages append their own).
func mcAppend(res Result) []transcript.Record {
	var out []transcript.Record
	for _, r := range res.Append {
		if r.Subtype == transcript.SubtypeMicrocompact {
			out = append(out, r)
		}
	}
	return out
}

// mcValid asserts the request passes the provider contract checker.
func mcValid(t *testing.T, req provider.Request) {
	t.Helper()
	require.NoError(t, provider.Validate(req, provider.ValidateOptions{}))
}

func TestMicrocompactCachedDeterministic(t *testing.T) {
	k, _ := mcCachedSession()
	cfg := MicrocompactConfig{Cached: true, CacheEditingBeta: testCacheBeta, CachedTriggerTokens: 500}
	a, err := mcPipeline(t, k.at(0), cfg).Prepare(t.Context(), Input{Records: k.recs})
	require.NoError(t, err)
	b, err := mcPipeline(t, k.at(0), cfg).Prepare(t.Context(), Input{Records: k.recs})
	require.NoError(t, err)
	assert.Equal(t, string(requestBytes(t, a.Request)), string(requestBytes(t, b.Request)))
	assert.Equal(t, a.Append, b.Append)
	require.Len(t, mcAppend(a), 1)

	// Without a cache (Cache.Disable) there is nothing to edit: no decision, no cache_edits.
	p, err := New(Config{ContextWindow: 200_000, Tokens: EstimateCounter{}, Microcompact: cfg,
		Cache: CacheConfig{Disable: true}, Now: func() time.Time { return k.at(0) }})
	require.NoError(t, err)
	res, err := p.Prepare(t.Context(), Input{Records: k.recs})
	require.NoError(t, err)
	assert.Empty(t, mcAppend(res))
	assert.NotContains(t, string(requestBytes(t, res.Request)), "cache_")
}

// Results after the last assistant message are the model's latest input: an idle gap never
// clears them, even when there are more of them than KeepRecent.
func TestMicrocompactTimeKeepsUnseenResults(t *testing.T) {
	k, ids := mcSession("Read", "Read") // mc_01, mc_02: answered
	var tus []transcript.Block
	var trs []*transcript.ToolResult
	for i := 3; i <= 9; i++ { // mc_03..mc_09: seven parallel calls, not answered yet
		id := fmt.Sprintf("mc_%02d", i)
		ids = append(ids, id)
		tus = append(tus, toolUse(id, "Read"))
		trs = append(trs, result(id, mcBody(id)))
	}
	k.assistant(tus...)
	k.results(trs...)
	p := mcPipeline(t, k.at(2*time.Hour), MicrocompactConfig{})
	res, err := p.Prepare(t.Context(), Input{Records: k.recs})
	require.NoError(t, err)
	mcValid(t, res.Request)
	got, _ := toolResults(res.Request)
	require.Len(t, got, len(ids))
	for _, id := range ids[:2] {
		assert.Equal(t, ClearedToolResultText, resultText(got[id]), id)
	}
	for _, id := range ids[2:] {
		assert.Equal(t, mcBody(id), resultText(got[id]), "%s: the model has not seen it yet", id)
	}
	require.Len(t, mcAppend(res), 1)
	assert.Equal(t, ids[:2], mcAppend(res)[0].Microcompact.ClearedToolUseIDs)
}

// A tool_use id answered twice, first by a result as small as the cleared placeholder, then by
// a large one: the clearing is decided per id, so the turn clears both results, as every later
// turn re-applying the decision does (found by FuzzPrepareInvariants: the first turn kept the
// small result and the resumed turn cleared it, changing the request).
func TestMicrocompactTimeDuplicateID(t *testing.T) {
	k := newTK()
	k.user("please look")
	k.assistant(toolUse("d1", "Read"))
	k.results(result("d1", "ok"))
	k.assistant(text("again"))
	k.results(result("d1", mcBody("d1"))) // parented on d1's tool_use record, like the first
	k.assistant(toolUse("d2", "Read"))
	k.results(result("d2", mcBody("d2")))
	k.assistant(text("done"))
	p := mcPipeline(t, k.at(3*time.Hour), MicrocompactConfig{KeepRecent: 1})
	first, err := p.Prepare(t.Context(), Input{Records: k.recs})
	require.NoError(t, err)
	require.Len(t, mcAppend(first), 1)
	assert.Equal(t, []string{"d1"}, mcAppend(first)[0].Microcompact.ClearedToolUseIDs)
	var cleared []string
	for _, a := range first.Report.Stage("microcompact").Actions {
		if a.Kind == ActionCleared && a.ToolUseID == "d1" {
			cleared = append(cleared, a.UUID)
		}
	}
	assert.Equal(t, []string{tkUUID(3), tkUUID(5)}, cleared, "both results of d1 are cleared")

	next, err := p.Prepare(t.Context(), Input{Records: append(slices.Clone(k.recs), roundTrip(t, first.Append)...)})
	require.NoError(t, err)
	assert.Equal(t, string(requestBytes(t, first.Request)), string(requestBytes(t, next.Request)))
	assert.Empty(t, next.Append)
}

// In cached mode an idle gap over Gap means the provider's cache expired: old results are
// cleared as in time-based mode, the earlier deletions end (their cache_edits are no longer
// sent, nor is the beta), and the clearing is replayed byte for byte.
func TestMicrocompactCachedIdle(t *testing.T) {
	k, ids := mcCachedSession()
	cfg := MicrocompactConfig{Cached: true, CacheEditingBeta: testCacheBeta, CachedTriggerTokens: 500}
	warm, err := mcPipeline(t, k.at(0), cfg).Prepare(t.Context(), Input{Records: k.recs})
	require.NoError(t, err)
	require.Len(t, mcAppend(warm), 1, "a deletion while the cache is warm")
	recs := append(slices.Clone(k.recs), warm.Append...)

	p := mcPipeline(t, k.at(3*time.Hour), cfg)
	res, err := p.Prepare(t.Context(), Input{Records: recs})
	require.NoError(t, err)
	mcValid(t, res.Request)
	edits, _ := mcCacheEdits(res.Request)
	assert.Empty(t, edits, "the expired cache is not edited")
	assert.Nil(t, res.Request.Betas)
	assert.Zero(t, res.Report.CacheDeletedTokens)
	got, _ := toolResults(res.Request)
	cleared := 0
	for _, id := range ids {
		assert.Empty(t, got[id].CacheReference, id)
		if resultText(got[id]) == ClearedToolResultText {
			cleared++
		}
	}
	assert.Equal(t, len(ids)-defaultMicrocompactKeepRecent, cleared, "all but the newest are cleared")
	require.Len(t, mcAppend(res), 1)
	assert.Equal(t, "time", mcAppend(res)[0].Microcompact.Trigger)

	again, err := p.Prepare(t.Context(), Input{Records: append(recs, res.Append...)})
	require.NoError(t, err)
	assert.Equal(t, string(requestBytes(t, res.Request)), string(requestBytes(t, again.Request)))
	assert.Empty(t, mcAppend(again))
}

// TestMicrocompactCachedIdleSmallResult: a result deleted from the cache while it was warm but
// too small for a clearing to shrink keeps no cache_reference and gets no cache_edits on the
// turn whose idle gap clears the others, as on every turn after it: the clearing decided this
// turn expires the deletions as the recorded one does (the prefix cached by that turn is the
// next turn's).
func TestMicrocompactCachedIdleSmallResult(t *testing.T) {
	k := newTK()
	k.user("please look around")
	for i := 1; i <= 7; i++ {
		id := fmt.Sprintf("mc_%02d", i)
		body := mcBody(id)
		if i == 1 {
			body = "ok" // smaller than the clearing placeholder
		}
		k.assistant(text("calling Read"), toolUse(id, "Read"))
		k.results(result(id, body))
	}
	k.assistant(text("done"))
	k.user("next question")
	cfg := MicrocompactConfig{Cached: true, CacheEditingBeta: testCacheBeta, CachedTriggerTokens: 500}
	warm, err := mcPipeline(t, k.at(0), cfg).Prepare(t.Context(), Input{Records: k.recs})
	require.NoError(t, err)
	require.Len(t, mcAppend(warm), 1)
	require.Contains(t, mcAppend(warm)[0].Microcompact.ClearedToolUseIDs, "mc_01", "the small result is deleted while the cache is warm")
	recs := append(slices.Clone(k.recs), warm.Append...)

	p := mcPipeline(t, k.at(3*time.Hour), cfg)
	res, err := p.Prepare(t.Context(), Input{Records: recs})
	require.NoError(t, err)
	require.Len(t, mcAppend(res), 1)
	d := mcAppend(res)[0].Microcompact
	assert.Equal(t, "time", d.Trigger)
	assert.NotContains(t, d.ClearedToolUseIDs, "mc_01", "clearing would not shrink it")
	got, _ := toolResults(res.Request)
	assert.Empty(t, got["mc_01"].CacheReference, "the expired deletion is not re-applied")
	edits, _ := mcCacheEdits(res.Request)
	assert.Empty(t, edits, "the expired cache is not edited")
	assert.Nil(t, res.Request.Betas)
	mcValid(t, res.Request)

	again, err := p.Prepare(t.Context(), Input{Records: append(recs, res.Append...)})
	require.NoError(t, err)
	assert.Equal(t, string(requestBytes(t, res.Request)), string(requestBytes(t, again.Request)), "the next turn sends the same bytes")
	assert.Empty(t, mcAppend(again))
}

// The provider's cache_deleted_input_tokens is read from usage.
func TestUsageCacheDeleted(t *testing.T) {
	for _, tc := range []struct {
		usage string
		want  int
	}{
		{`{"input_tokens":5,"cache_deleted_input_tokens":1200}`, 1200},
		{`{"input_tokens":5}`, 0},
		{`{"input_tokens":5,"cache_deleted_input_tokens":"x"}`, 0},
		{`{"input_tokens":5,"cache_deleted_input_tokens":-3}`, 0},
	} {
		var u transcript.Usage
		require.NoError(t, u.UnmarshalJSON([]byte(tc.usage)))
		assert.Equal(t, tc.want, u.CacheDeletedInputTokens(), tc.usage)
	}
	assert.Zero(t, (*transcript.Usage)(nil).CacheDeletedInputTokens())
	_, err := New(Config{Model: "claude-sonnet-4-5", Microcompact: MicrocompactConfig{Cached: true}})
	assert.ErrorContains(t, err, "Microcompact.Cached needs Microcompact.CacheEditingBeta")
}
