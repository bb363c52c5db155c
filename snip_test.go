package agentctx

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentctx/agentctx/provider"

	"github.com/agentctx/agentctx/transcript"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var snipNow = time.Date(2026, 1, 2, 4, 0, 0, 0, time.UTC)

var snipTools = []provider.Tool{
	{Name: "Read", Definition: json.RawMessage(`{"name":"Read","input_schema":{"type":"object"}}`)},
	{Name: "ToolSearch", Definition: json.RawMessage(`{"name":"ToolSearch","input_schema":{"type":"object"}}`)},
}

func snipPipeline(t testing.TB, cfg Config) *Pipeline {
	t.Helper()
	return newTestPipeline(t, cfg, snipNow)
}

func snipPrepare(t testing.TB, p *Pipeline, recs []transcript.Record) Result {
	t.Helper()
	res, err := p.Prepare(context.Background(), Input{Records: recs, Tools: snipTools})
	require.NoError(t, err)
	assertPairedRequest(t, res.Request)
	assert.NoError(t, provider.Validate(res.Request, provider.ValidateOptions{}), "the request passes the provider contract")
	return res
}

// assertPairedRequest checks the contract rules snip and collapse can break: user first, roles
// alternate, no empty message, tool_result blocks first in their user message, every tool_use
// answered in the next message and every tool_result answering the previous one.
func assertPairedRequest(t testing.TB, req provider.Request) {
	t.Helper()
	require.NotEmpty(t, req.Messages)
	assert.Equal(t, transcript.RoleUser, req.Messages[0].Role, "first message is a user message")
	for i, m := range req.Messages {
		assert.NotEmpty(t, m.Content, "message %d is empty", i)
		if i > 0 {
			assert.NotEqual(t, req.Messages[i-1].Role, m.Role, "messages %d and %d have the same role", i-1, i)
		}
		uses := map[string]bool{}
		if i > 0 && req.Messages[i-1].Role == transcript.RoleAssistant {
			for _, b := range req.Messages[i-1].Content {
				if tu, ok := b.(*transcript.ToolUse); ok {
					uses[tu.ID] = true
				}
			}
		}
		answered := map[string]bool{}
		seenOther := false
		for _, b := range m.Content {
			tr, ok := b.(*transcript.ToolResult)
			if !ok {
				seenOther = true
				continue
			}
			assert.False(t, seenOther, "message %d: tool_result after other content", i)
			assert.True(t, uses[tr.ToolUseID], "message %d: tool_result %s answers no tool_use of the previous message", i, tr.ToolUseID)
			answered[tr.ToolUseID] = true
		}
		if m.Role == transcript.RoleAssistant {
			for _, b := range m.Content {
				if tu, ok := b.(*transcript.ToolUse); ok {
					require.Less(t, i+1, len(req.Messages), "tool_use %s in the last message", tu.ID)
					found := false
					for _, nb := range req.Messages[i+1].Content {
						if tr, ok := nb.(*transcript.ToolResult); ok && tr.ToolUseID == tu.ID {
							found = true
						}
					}
					assert.True(t, found, "tool_use %s has no result in the next message", tu.ID)
				}
			}
		}
	}
}

// snipRecord returns a snip record removing uuids, as NewSnip builds it.
func snipRecord(t testing.TB, recs []transcript.Record, reason string, uuids ...string) transcript.Record {
	t.Helper()
	r, err := NewSnip(recs, uuids, reason, snipNow)
	require.NoError(t, err)
	return r
}

// runSnip runs the snip stage alone over recs and returns the turn.
func runSnip(t testing.TB, p *Pipeline, recs []transcript.Record) *turn {
	t.Helper()
	chain, err := transcript.BuildChain(recs, transcript.ChainOptions{})
	require.NoError(t, err)
	tt := p.newTurn(context.Background(), &Input{Records: recs}, chain)
	require.NoError(t, p.stages.snip.run(tt))
	return tt
}

func viewUUIDs(tt *turn) []string {
	var out []string
	for _, it := range tt.items {
		out = append(out, it.uuid)
	}
	return out
}

func actionsOf(rep *StageReport, kind ActionKind) []Action {
	var out []Action
	if rep == nil {
		return nil
	}
	for _, a := range rep.Actions {
		if a.Kind == kind {
			out = append(out, a)
		}
	}
	return out
}

func actionUUIDs(as []Action) []string {
	var out []string
	for _, a := range as {
		out = append(out, a.UUID)
	}
	return out
}

// tkUUID is the uuid the test kit gives its n-th record.
func tkUUID(n int) string { return fmt.Sprintf("00000000-0000-4000-8000-%012d", n) }

func tkUUIDs(ns ...int) []string {
	var out []string
	for _, n := range ns {
		out = append(out, tkUUID(n))
	}
	return out
}

// snipParallel builds:
//
//	1 user "read two files"
//	2 A text, 3 A tool_use t1, 4 A tool_use t2   (one response)
//	5 result t2, 6 result t1                     (written in reverse, parented on their calls)
//	7 A "both read"
//	8 user "thanks"  9 A "welcome"  10 user "bye"
func snipParallel() *tk {
	k := newTK()
	k.user("read two files")
	k.assistant(text("reading both"), toolUse("t1", "Read"), toolUse("t2", "Read"))
	k.results(result("t2", strings.Repeat("two ", 200)))
	k.results(result("t1", strings.Repeat("one ", 100)))
	a := k.next(transcript.TypeAssistant)
	a.ParentUUID = tkUUID(6)
	a.Message = &transcript.Message{ID: "msg_x", Role: transcript.RoleAssistant, Content: []transcript.Block{text("both read")}}
	k.add(a)
	k.user("thanks")
	k.assistant(text("welcome"))
	k.user("bye")
	return k
}

func TestSnipToolPairClosure(t *testing.T) {
	for _, tc := range []struct {
		name     string
		snip     []int
		removed  []int // records removed from the view, in view order
		expanded []int // the ones added by the closure
	}{
		{"prompt only", []int{8}, []int{8}, nil},
		{"tool_use takes its result", []int{3}, []int{3, 6}, []int{6}},
		{"result takes its tool_use", []int{5}, []int{4, 5}, []int{4}},
		{"both parallel calls", []int{3, 4}, []int{3, 4, 5, 6}, []int{5, 6}},
		{"text of the response only", []int{2}, []int{2}, nil},
		{"a whole round", []int{1, 2, 3, 4, 7}, []int{1, 2, 3, 4, 5, 6, 7}, []int{5, 6}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := snipParallel()
			k.decision(snipRecord(t, k.recs, "test", tkUUIDs(tc.snip...)...))
			p := snipPipeline(t, Config{Snip: SnipConfig{TagMessages: true}})
			before := k.jsonl(t)
			tt := runSnip(t, p, k.recs)

			rep := tt.report.Stage("snip")
			require.NotNil(t, rep)
			assert.Equal(t, tkUUIDs(tc.removed...), actionUUIDs(actionsOf(rep, ActionSnipped)))
			assert.Equal(t, tkUUIDs(tc.expanded...), actionUUIDs(actionsOf(rep, ActionExpanded)))
			for _, a := range actionsOf(rep, ActionExpanded) {
				assert.NotEmpty(t, a.ToolUseID, "an expansion names the tool call it keeps paired")
			}
			var want []string
			for n := 1; n <= 10; n++ {
				if !slices.Contains(tc.removed, n) {
					want = append(want, tkUUID(n))
				}
			}
			assert.Equal(t, want, viewUUIDs(tt))
			assert.Equal(t, before, k.jsonl(t), "the transcript is untouched")

			// The request stays valid for the provider.
			res := snipPrepare(t, p, k.recs)
			assert.Equal(t, actionsOf(rep, ActionSnipped), actionsOf(res.Report.Stage("snip"), ActionSnipped))
			for _, r := range res.Append {
				assert.NotEqual(t, transcript.SubtypeSnip, r.Subtype, "snip replays records; it appends none")
			}

			// SnippedUUIDs agrees with the view.
			got := SnippedUUIDs(k.recs)
			assert.Len(t, got, len(tc.removed))
			for _, n := range tc.removed {
				assert.True(t, got[tkUUID(n)], "record %d reported snipped", n)
			}
		})
	}
}

func TestSnipMergedResultRecord(t *testing.T) {
	// One user record answering two calls of two different responses: removing one call
	// removes the record, and with it the other call.
	k := newTK()
	k.user("go")                      // 1
	k.assistant(toolUse("a", "Read")) // 2
	k.assistant(toolUse("b", "Read")) // 3 (a second response, no result in between)
	r := k.next(transcript.TypeUser)  // 4
	r.Message = &transcript.Message{Role: transcript.RoleUser, Content: []transcript.Block{result("a", "A"), result("b", "B")}}
	k.add(r)
	k.assistant(text("done")) // 5
	k.user("next")            // 6
	k.decision(snipRecord(t, k.recs, "", tkUUID(2)))

	tt := runSnip(t, snipPipeline(t, Config{}), k.recs)
	assert.Equal(t, tkUUIDs(1, 5, 6), viewUUIDs(tt))
	assert.Equal(t, tkUUIDs(3, 4), actionUUIDs(actionsOf(tt.report.Stage("snip"), ActionExpanded)))
}

func TestSnipProtected(t *testing.T) {
	ref := &transcript.ToolResult{ToolUseID: "ts", Content: []transcript.Block{&transcript.ToolReference{ToolName: "mcp__db__query"}}}
	build := func() *tk {
		k := newTK()
		k.user("find a db tool")                                    // 1
		k.assistant(text("searching"), toolUse("ts", "ToolSearch")) // 2, 3
		k.results(ref)                                              // 4
		k.assistant(text("found it"))                               // 5
		k.user("now read")                                          // 6
		k.assistant(toolUse("r1", "Read"))                          // 7
		k.results(result("r1", "content"))                          // 8
		return k
	}
	for _, tc := range []struct {
		name    string
		snip    []int
		removed []int
		refused []int
		reason  string
	}{
		{"tool_reference result", []int{4}, nil, []int{4}, "carries a tool_reference"},
		{"its tool_use: the pair is protected", []int{3}, nil, []int{3}, "tool-paired"},
		{"unprotected neighbours still go", []int{2, 3, 5}, []int{2, 5}, []int{3}, "carries a tool_reference"},
		{"latest user input", []int{8}, nil, []int{8}, "latest user input"},
		{"in-flight tool call is paired with the latest input", []int{7}, nil, []int{7}, "latest user input"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := build()
			k.decision(snipRecord(t, k.recs, "", tkUUIDs(tc.snip...)...))
			p := snipPipeline(t, Config{})
			tt := runSnip(t, p, k.recs)
			rep := tt.report.Stage("snip")
			assert.Equal(t, tkUUIDs(tc.removed...), actionUUIDs(actionsOf(rep, ActionSnipped)))
			skipped := actionsOf(rep, ActionSkipped)
			assert.Equal(t, tkUUIDs(tc.refused...), actionUUIDs(skipped))
			for _, a := range skipped {
				assert.Contains(t, a.Detail, tc.reason)
				assert.Contains(t, a.Detail, "refused")
			}
			for _, n := range tc.refused {
				assert.Contains(t, viewUUIDs(tt), tkUUID(n))
			}
			snipPrepare(t, p, k.recs)
		})
	}
}

// TestSnipRefusedForGood: a snip that named the latest user input, or a call whose result had
// not come yet, stays refused once answers and prompts follow: applied later, it would change
// messages a request already sent, with no decision of that turn to say why.
func TestSnipRefusedForGood(t *testing.T) {
	for _, tc := range []struct {
		name string
		snip int
	}{
		{"the latest prompt", 6},
		{"a call in flight", 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := newTK()
			k.user("read a")                   // 1
			k.assistant(toolUse("r0", "Read")) // 2
			k.results(result("r0", "A"))       // 3
			k.assistant(text("a says hi"))     // 4
			k.user("old prompt")               // 5
			k.user("now read b")               // 6
			k.assistant(toolUse("r1", "Read")) // 7
			if tc.snip == 6 {
				k.recs = k.recs[:len(k.recs)-1] // the snip comes before the call
				k.last = tkUUID(6)
			}
			k.decision(snipRecord(t, k.recs, "", tkUUID(tc.snip)))
			if tc.snip == 6 {
				k.assistant(toolUse("r1", "Read")) // 8
			}
			k.results(result("r1", "B"))    // the call's result
			k.assistant(text("b says bye")) // the answer
			k.user("thanks")
			p := snipPipeline(t, Config{})
			tt := runSnip(t, p, k.recs)
			assert.Contains(t, viewUUIDs(tt), tkUUID(tc.snip), "still in the view")
			skipped := actionsOf(tt.report.Stage("snip"), ActionSkipped)
			require.NotEmpty(t, skipped)
			assert.Contains(t, skipped[0].Detail, "was the latest user input when snip")
			snipPrepare(t, p, k.recs)
		})
	}
}

func TestSnipThinkingRemainder(t *testing.T) {
	k := newTK()
	k.user("think")                                                                          // 1
	k.assistant(&transcript.Thinking{Thinking: "hmm", Signature: "sig"}, text("answer one")) // 2, 3
	k.user("again")                                                                          // 4
	k.assistant(text("answer two"))                                                          // 5
	k.user("last")                                                                           // 6
	k.decision(snipRecord(t, k.recs, "", tkUUID(3)))
	tt := runSnip(t, snipPipeline(t, Config{}), k.recs)
	assert.Equal(t, tkUUIDs(1, 4, 5, 6), viewUUIDs(tt), "a response reduced to thinking goes whole")
	exp := actionsOf(tt.report.Stage("snip"), ActionExpanded)
	require.Len(t, exp, 1)
	assert.Equal(t, tkUUID(2), exp[0].UUID)
	assert.Contains(t, exp[0].Detail, "only thinking")
}

func TestSnipTokensFreed(t *testing.T) {
	k := snipParallel()
	p := snipPipeline(t, Config{})
	before := snipPrepare(t, p, k.recs)

	k.decision(snipRecord(t, k.recs, "old reads", tkUUID(3), tkUUID(8)))
	after := snipPrepare(t, p, k.recs)
	rep := after.Report.Stage("snip")
	require.NotNil(t, rep)

	// Independently counted: the blocks of the removed records (3, 6 by closure, 8).
	c := NewCounter(EstimateCounter{})
	want := 0
	for _, n := range []int{3, 6, 8} {
		want += c.Blocks(k.recs[n-1].Message.Content)
	}
	assert.Equal(t, want, rep.TokensFreed)
	sum := 0
	for _, a := range actionsOf(rep, ActionSnipped) {
		require.Negative(t, a.Tokens)
		sum -= a.Tokens
	}
	assert.Equal(t, rep.TokensFreed, sum)
	drop := before.Report.InputTokens - after.Report.InputTokens
	assert.GreaterOrEqual(t, drop, rep.TokensFreed, "the request shrinks by at least what snip reports")
	assert.Less(t, drop, rep.TokensFreed+50, "…plus message overheads at most")
}

func TestSnipPrepareDeterministic(t *testing.T) {
	k := snipParallel()
	k.decision(snipRecord(t, k.recs, "", tkUUID(4), tkUUID(8)))
	p := snipPipeline(t, Config{Snip: SnipConfig{TagMessages: true}})
	r1 := snipPrepare(t, p, k.recs)
	r2 := snipPrepare(t, p, k.recs)
	assert.Equal(t, requestBytes(t, r1.Request), requestBytes(t, r2.Request))
	assert.Equal(t, r1.Append, r2.Append)
	assert.Equal(t, r1.Report.Stage("snip"), r2.Report.Stage("snip"))

	recs := append(append([]transcript.Record(nil), k.recs...), r1.Append...)
	r3 := snipPrepare(t, p, recs)
	assert.Equal(t, requestBytes(t, r1.Request), requestBytes(t, r3.Request))
	assert.Empty(t, r3.Append)

	// A new turn leaves the snipped prefix unchanged.
	k.assistant(text("see you"))
	k.user("one more")
	r4 := snipPrepare(t, p, k.recs)
	n := len(r1.Request.Messages) - 1 // the last message grows; the ones before are stable
	for i := range n {
		a, _ := json.Marshal(r1.Request.Messages[i].Content)
		b, _ := json.Marshal(r4.Request.Messages[i].Content)
		assert.JSONEq(t, string(a), string(b), "message %d", i)
	}
}

func TestNewSnip(t *testing.T) {
	k := snipParallel()
	sys := k.next(transcript.TypeSystem)
	sys.Subtype = transcript.SubtypeTurnDuration
	k.add(sys) // 11

	t.Run("record", func(t *testing.T) {
		r, err := NewSnip(k.recs, []string{tkUUID(8), tkUUID(3), tkUUID(8)}, "stale", snipNow)
		require.NoError(t, err)
		assert.Equal(t, transcript.TypeSystem, r.Type)
		assert.Equal(t, transcript.SubtypeSnip, r.Subtype)
		assert.Empty(t, r.ParentUUID)
		assert.Equal(t, "11111111-1111-4111-8111-111111111111", r.SessionID)
		assert.Equal(t, "2026-01-02T04:00:00.000Z", r.Timestamp)
		require.NotNil(t, r.Snip)
		assert.Equal(t, tkUUIDs(3, 8), r.Snip.RemovedUUIDs, "sorted, deduplicated")
		assert.Equal(t, "stale", r.Snip.Reason)
		_, err = uuid.Parse(r.UUID)
		require.NoError(t, err)

		again, err := NewSnip(k.recs, []string{tkUUID(3), tkUUID(8)}, "other reason", snipNow.Add(time.Hour))
		require.NoError(t, err)
		assert.Equal(t, r.UUID, again.UUID, "the uuid derives from the removed set")
		other, err := NewSnip(k.recs, []string{tkUUID(3)}, "stale", snipNow)
		require.NoError(t, err)
		assert.NotEqual(t, r.UUID, other.UUID)

		// Round trip through the transcript format.
		line, err := json.Marshal(r)
		require.NoError(t, err)
		assert.NotContains(t, string(line), "parentUuid")
		var back transcript.Record
		require.NoError(t, json.Unmarshal(line, &back))
		assert.Equal(t, r.Snip, back.Snip)
		assert.True(t, back.IsDecision())
	})

	for _, tc := range []struct {
		name string
		ids  []string
		want []string // substrings of the error
	}{
		{"no ids", nil, []string{"names no records"}},
		{"unknown uuids are all named", []string{tkUUID(3), "00000000-0000-4000-8000-000000000099", "nope"}, []string{`"00000000-0000-4000-8000-000000000099"`, `"nope"`}},
		{"system record", []string{tkUUID(11)}, []string{tkUUID(11), "not a user or assistant record"}},
		{"ambiguous tag", []string{"[id:000000000000]"}, []string{"ambiguous"}}, // a prefix of all, no record's tag
		{"unknown tag", []string{"[id:deadbeef]"}, []string{"[id:deadbeef]", "no message has tag"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewSnip(k.recs, tc.ids, "", snipNow)
			require.Error(t, err)
			assert.True(t, strings.HasPrefix(err.Error(), "agentctx: "), err.Error())
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

// tagTK builds a transcript; relabel gives it uuids that look random, so that tags are 8 hex
// digits.
func tagTK() *tk {
	k := newTK()
	k.user("read a file")                               // 1
	k.assistant(text("reading"), toolUse("t1", "Read")) // 2, 3
	k.results(result("t1", "file content"))             // 4
	k.assistant(text("done"))                           // 5
	k.user("and now?")                                  // 6
	return k
}

// relabel returns a copy of recs whose uuids (and parent uuids) are mapped by f.
func relabel(recs []transcript.Record, f func(string) string) []transcript.Record {
	out := append([]transcript.Record(nil), recs...)
	for i := range out {
		if out[i].UUID != "" {
			out[i].UUID = f(out[i].UUID)
		}
		if out[i].ParentUUID != "" {
			out[i].ParentUUID = f(out[i].ParentUUID)
		}
	}
	return out
}

// tagUUID maps a test kit uuid to one that looks random.
func tagUUID(u string) string {
	return uuid.NewSHA1(uuid.NameSpaceOID, []byte("tag record "+u)).String()
}

var tagRE = regexp.MustCompile(`^\[id:([0-9a-f]{8,32})\]$`)

// requestTags returns the tag blocks of the request, in order, with their message index.
func requestTags(req provider.Request) (tags []string, msg []int) {
	for i, m := range req.Messages {
		for _, b := range m.Content {
			if tx, ok := b.(*transcript.Text); ok && tagRE.MatchString(tx.Text) {
				tags = append(tags, tx.Text)
				msg = append(msg, i)
			}
		}
	}
	return tags, msg
}

func TestSnipTags(t *testing.T) {
	k := tagTK()
	recs := relabel(k.recs, tagUUID)
	p := snipPipeline(t, Config{Snip: SnipConfig{TagMessages: true}})
	off := snipPrepare(t, snipPipeline(t, Config{}), recs)
	tags, _ := requestTags(off.Request)
	assert.Empty(t, tags, "off by default")

	r1 := snipPrepare(t, p, recs)
	tags, _ = requestTags(r1.Request)
	// Records 1 and 6 carry prompts; record 4 (the tool result) is not tagged.
	prompts := []string{tagUUID(tkUUID(1)), tagUUID(tkUUID(6))}
	want := []string{"[id:" + strings.ToLower(strings.ReplaceAll(prompts[0], "-", ""))[:8] + "]", "[id:" + strings.ToLower(strings.ReplaceAll(prompts[1], "-", ""))[:8] + "]"}
	assert.Equal(t, want, tags)
	first := r1.Request.Messages[0].Content
	require.Len(t, first, 2)
	assert.Equal(t, want[0], first[0].(*transcript.Text).Text, "the tag precedes the prompt text")
	assert.Equal(t, "read a file", first[1].(*transcript.Text).Text)
	assert.Len(t, recs[0].Message.Content, 1, "the record is untouched")
	tagged := actionsOf(r1.Report.Stage("snip"), ActionTagged)
	require.Len(t, tagged, 1)
	assert.Positive(t, tagged[0].Tokens)

	// Each tag resolves to its record, in every accepted spelling.
	for i, tag := range tags {
		hex := tagRE.FindStringSubmatch(tag)[1]
		for _, spelling := range []string{tag, "id:" + hex, hex, strings.ToUpper(hex), prompts[i]} {
			got, err := transcript.ResolveTag(recs, spelling)
			require.NoError(t, err, spelling)
			assert.Equal(t, prompts[i], got)
		}
	}
	_, err := transcript.ResolveTag(recs, "[id:12]")
	assert.ErrorContains(t, err, "not a message tag")

	// Stable across turns: the next turn shows the same tags on the same messages, and the
	// messages before the last are byte-identical.
	k.assistant(text("more"))
	k.user("ok")
	recs = relabel(k.recs, tagUUID)
	r2 := snipPrepare(t, p, recs)
	tags2, _ := requestTags(r2.Request)
	require.Len(t, tags2, 3)
	assert.Equal(t, tags, tags2[:2])
	for i := range len(r1.Request.Messages) - 1 {
		a, _ := json.Marshal(r1.Request.Messages[i].Content)
		b, _ := json.Marshal(r2.Request.Messages[i].Content)
		assert.JSONEq(t, string(a), string(b), "message %d", i)
	}

	// A snip tool can name a message by its tag.
	recs = append(recs, snipRecord(t, recs, "by tag", tags[0]))
	r3 := snipPrepare(t, p, recs)
	snipped := actionsOf(r3.Report.Stage("snip"), ActionSnipped)
	require.Len(t, snipped, 1)
	assert.Equal(t, prompts[0], snipped[0].UUID)
}

func TestSnipTagPlacementAndCollisions(t *testing.T) {
	k := newTK()
	k.user("go")                       // 1
	k.assistant(toolUse("t1", "Read")) // 2
	r := k.next(transcript.TypeUser)   // 3: a tool result with text after it
	r.Message = &transcript.Message{Role: transcript.RoleUser, Content: []transcript.Block{result("t1", "x"), text("also this")}}
	k.add(r)
	k.assistant(text("ok")) // 4
	k.user("next")          // 5
	// Records 1 and 3 share their first 13 hex digits; the others look random.
	recs := relabel(k.recs, func(u string) string {
		switch u {
		case tkUUID(1):
			return "abcdef01-2345-4000-8000-000000000001"
		case tkUUID(3):
			return "abcdef01-2345-4111-8000-000000000003"
		}
		return tagUUID(u)
	})
	p := snipPipeline(t, Config{Snip: SnipConfig{TagMessages: true}})
	res := snipPrepare(t, p, recs)
	tags, _ := requestTags(res.Request)
	require.Len(t, tags, 3)
	assert.Equal(t, "[id:abcdef01]", tags[0], "the earlier record keeps its short tag: a later one never changes it")
	assert.Equal(t, "[id:abcdef01234541]", tags[1], "the later one is lengthened one digit past the prefix it shares")
	assert.Equal(t, "[id:"+strings.ToLower(strings.ReplaceAll(tagUUID(tkUUID(5)), "-", ""))[:8]+"]", tags[2])
	for i, tag := range tags[:2] {
		got, err := transcript.ResolveTag(recs, tag)
		require.NoError(t, err)
		assert.Equal(t, recs[[]int{0, 2}[i]].UUID, got)
	}
	// Before the second record was written, the first had the same tag.
	before := snipPrepare(t, p, recs[:2])
	first, _ := requestTags(before.Request)
	assert.Equal(t, tags[:1], first)
	_, err := transcript.ResolveTag(recs, "[id:abcdef0123]")
	assert.ErrorContains(t, err, "ambiguous", "a prefix of both that is no record's tag")

	// The tool_result stays first in its message; the tag comes before the record's text.
	var msg []transcript.Block
	for _, m := range res.Request.Messages {
		for _, b := range m.Content {
			if tr, ok := b.(*transcript.ToolResult); ok && tr.ToolUseID == "t1" {
				msg = m.Content
			}
		}
	}
	require.Len(t, msg, 3)
	assert.Equal(t, transcript.KindToolResult, msg[0].Kind())
	assert.Equal(t, tags[1], msg[1].(*transcript.Text).Text)
	assert.Equal(t, "also this", msg[2].(*transcript.Text).Text)
}

func TestSnipTagsSkipNonPrompts(t *testing.T) {
	k := newTK()
	k.user("go") // 1
	meta := k.next(transcript.TypeUser)
	meta.IsMeta = true
	meta.Message = &transcript.Message{Role: transcript.RoleUser, Content: []transcript.Block{text("<system-reminder>x</system-reminder>")}}
	k.add(meta)                              // 2
	k.assistant(toolUse("t1", "Read"))       // 3
	k.results(result("t1", "only a result")) // 4
	k.assistant(text("ok"))                  // 5
	k.user("next")                           // 6
	k.recs[0].UUID = "aaaaaaaa-0000-4000-8000-000000000001"
	k.recs[1].ParentUUID = k.recs[0].UUID

	tt := runSnip(t, snipPipeline(t, Config{Snip: SnipConfig{TagMessages: true}}), k.recs)
	var got []string
	for _, it := range tt.items {
		for _, b := range it.blocks {
			if tx, ok := b.(*transcript.Text); ok && tagRE.MatchString(tx.Text) {
				got = append(got, it.uuid)
			}
		}
	}
	assert.Equal(t, []string{k.recs[0].UUID, tkUUID(6)}, got, "meta and tool-result-only records carry no tag")
}

// A nil block (normalize drops it later) must not make the snip stage or tagging panic.
func TestSnipNilBlocks(t *testing.T) {
	k := newTK()
	r := k.next(transcript.TypeUser) // 1
	r.Message = &transcript.Message{Role: transcript.RoleUser, Content: []transcript.Block{nil, text("question")}}
	k.add(r)
	k.assistant(toolUse("t1", "Read"))                                                                          // 2
	k.results(&transcript.ToolResult{ToolUseID: "t1", Content: []transcript.Block{nil, text("result")}})        // 3
	k.assistant(&transcript.Thinking{Thinking: "hmm", Signature: "sig"}, text("answer"), transcript.Block(nil)) // 4, 5, 6
	k.user("last")                                                                                              // 7
	k.decision(snipRecord(t, k.recs, "", tkUUID(2), tkUUID(5)))
	p := snipPipeline(t, Config{Snip: SnipConfig{TagMessages: true}})
	var tt *turn
	require.NotPanics(t, func() { tt = runSnip(t, p, k.recs) })
	assert.Equal(t, tkUUIDs(1, 4, 6, 7), viewUUIDs(tt), "a nil block is not thinking: the response keeps its thinking")
	require.Len(t, tt.items[0].blocks, 3)
	assert.Regexp(t, `^\[id:[0-9a-f]{8,32}\]$`, tt.items[0].blocks[0].(*transcript.Text).Text, "the tag goes before the nil block")
	assert.Nil(t, k.recs[0].Message.Content[0], "the record is not modified")
	require.NotPanics(t, func() {
		_, err := p.Prepare(context.Background(), Input{Records: k.recs, Tools: snipTools})
		assert.ErrorContains(t, err, "nil block", "Prepare rejects nil blocks before any stage runs")
	})
}
