package agentctx

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/agentctx/agentctx/provider"

	"github.com/agentctx/agentctx/transcript"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// snipToolTK is a conversation in which the model calls the snip tool: a tool search whose
// result carries a tool_reference, a Read, a pinned prompt, and the latest prompt, answered by
// the snip call (record 13).
func snipToolTK() *tk {
	ref := &transcript.ToolResult{ToolUseID: "ts", Content: []transcript.Block{&transcript.ToolReference{ToolName: "mcp__db__query"}}}
	k := newTK()
	k.user("find a db tool")                   // 1
	k.assistant(toolUse("ts", "ToolSearch"))   // 2
	k.results(ref)                             // 3
	k.user("read the schema")                  // 4
	k.assistant(toolUse("r1", "Read"))         // 5
	k.results(result("r1", "a long schema"))   // 6
	k.assistant(text("The schema has users.")) // 7
	k.user("never drop the users table")       // 8 (pinned below)
	k.assistant(text("Understood."))           // 9
	k.user("list the indexes")                 // 10
	k.assistant(toolUse("r2", "Read"))         // 11
	k.results(result("r2", "three indexes"))   // 12
	k.assistant(toolUse("sn", SnipToolName))   // 13
	return k
}

// snipInput is the snip tool's input naming records of recs by number, as their tags.
func snipInput(recs []transcript.Record, reason string, ns ...int) json.RawMessage {
	var uuids []string
	for i := range recs {
		if recs[i].IsConversation() {
			uuids = append(uuids, recs[i].UUID)
		}
	}
	tags := transcript.Tags(uuids)
	ids := make([]string, len(ns))
	for i, n := range ns {
		ids[i] = "[id:" + tags[tkUUID(n)] + "]"
	}
	b, _ := json.Marshal(SnipInput{IDs: ids, Reason: reason})
	return b
}

func TestHandleSnip(t *testing.T) {
	for _, tc := range []struct {
		name    string
		input   json.RawMessage
		removed []int    // records that leave the view
		refused []string // a substring of the reason of each refused id, in order
		isError bool
	}{
		{"a result takes its call", snipInput(snipToolTK().recs, "schema read", 6), []int{5, 6}, nil, false},
		{"a prompt alone", snipInput(snipToolTK().recs, "done", 4), []int{4}, nil, false},
		{"a record uuid", json.RawMessage(fmt.Sprintf(`{"ids":[%q],"reason":"r"}`, tkUUID(6))), []int{5, 6}, nil, false},
		{"some refused, the rest snipped", snipInput(snipToolTK().recs, "old", 6, 8, 3), []int{5, 6}, []string{"pinned", "tool_reference"}, false},
		{"the call of a tool_reference result", snipInput(snipToolTK().recs, "old", 2), nil, []string{"tool_reference"}, true},
		{"the latest prompt", snipInput(snipToolTK().recs, "old", 10), nil, []string{"latest prompt"}, true},
		{"the latest prompt's results may go", snipInput(snipToolTK().recs, "old", 12), []int{11, 12}, nil, false},
		{"a record that is no message", json.RawMessage(`{"ids":["[id:99999999]"],"reason":"r"}`), nil, []string{"no message has tag"}, true},
		{"a uuid of no record", json.RawMessage(`{"ids":["00000000-0000-4000-8000-999999999999"],"reason":"r"}`), nil, []string{"no such record"}, true},
		{"not a tag", json.RawMessage(`{"ids":["the schema"],"reason":"r"}`), nil, []string{"is not a message tag"}, true},
		{"named twice", snipInput(snipToolTK().recs, "old", 6, 6), []int{5, 6}, []string{"names the same message as"}, false},
		{"no ids", json.RawMessage(`{"ids":[],"reason":"r"}`), nil, nil, true},
		{"not an object", json.RawMessage(`["[id:1]"]`), nil, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := snipToolTK()
			p := snipPipeline(t, Config{})
			pin, err := p.Pin(k.recs, []string{tkUUID(8)}, "rule", snipNow)
			require.NoError(t, err)
			k.decision(pin)
			before := k.jsonl(t)
			out := p.HandleSnip(k.recs, tc.input, snipNow)
			assert.Equal(t, before, k.jsonl(t), "the records are untouched")
			assert.Equal(t, tc.isError, out.IsError, out.Text)
			assert.Equal(t, tkUUIDs(tc.removed...), out.Removed, out.Text)
			require.Len(t, out.Refused, len(tc.refused), out.Text)
			for i, why := range tc.refused {
				assert.Contains(t, out.Refused[i].Why, why)
				assert.Contains(t, out.Text, out.Refused[i].ID, "the text names the refused id")
			}
			if tc.isError {
				assert.Nil(t, out.Record)
				assert.True(t, out.Result("sn").IsError)
				assert.True(t, strings.HasPrefix(out.Text, "Nothing was snipped"), out.Text)
				return
			}
			require.NotNil(t, out.Record)
			assert.Equal(t, transcript.SubtypeSnip, out.Record.Subtype)
			assert.Positive(t, out.Record.Snip.TokensFreed)
			assert.Equal(t, out.Tokens, out.Record.Snip.TokensFreed)
			assert.Contains(t, out.Text, fmt.Sprintf("about %d tokens", out.Tokens))

			// The record, appended before the call's result, removes what the outcome said.
			k.decision(*out.Record)
			k.results(out.Result("sn"))
			res := snipPrepare(t, p, k.recs)
			var gone []string
			for _, a := range actionsOf(res.Report.Stage("snip"), ActionSnipped) {
				gone = append(gone, a.UUID)
			}
			assert.Equal(t, out.Removed, gone)
			assert.Empty(t, actionsOf(res.Report.Stage("snip"), ActionSkipped), "the pipeline refuses nothing the handler let through")
		})
	}
}

func TestHandleSnipAlreadySnipped(t *testing.T) {
	k := snipToolTK()
	p := snipPipeline(t, Config{})
	first := p.HandleSnip(k.recs, snipInput(snipToolTK().recs, "old", 6), snipNow)
	require.NotNil(t, first.Record)
	k.decision(*first.Record)
	again := p.HandleSnip(k.recs, snipInput(k.recs, "old", 6, 5), snipNow)
	assert.True(t, again.IsError)
	require.Len(t, again.Refused, 2)
	assert.Contains(t, again.Refused[0].Why, "snipped already")
	assert.Contains(t, again.Refused[1].Why, "snipped already")
}

func TestSnipToolDefinition(t *testing.T) {
	tl := SnipTool()
	var def struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Schema      json.RawMessage `json:"input_schema"`
	}
	require.NoError(t, json.Unmarshal(tl.Definition, &def))
	assert.Equal(t, SnipToolName, tl.Name)
	assert.Equal(t, tl.Name, def.Name)
	assert.Contains(t, def.Description, "[id:")
	assert.NoError(t, provider.Validate(provider.Request{Model: "m", MaxTokens: 10, Tools: []provider.Tool{tl},
		Messages: []provider.Message{{Role: transcript.RoleUser, Content: []transcript.Block{text("hi")}}}}, provider.ValidateOptions{}))
	tl.Definition[0] = 'x'
	assert.Equal(t, byte('{'), SnipTool().Definition[0], "each call returns its own definition")
}

// remindTK is a conversation of n prompts of about 700 tokens each, answered.
func remindTK(n int) *tk {
	k := newTK()
	for i := range n {
		k.user(fmt.Sprintf("part %d: %s", i, filler(2400)))
		if i < n-1 {
			k.assistant(text("Noted."))
		}
	}
	return k
}

func TestSnipReminder(t *testing.T) {
	offered := []provider.Tool{SnipTool()}
	prepare := func(t *testing.T, cfg Config, in Input) Result {
		t.Helper()
		res, err := snipPipeline(t, cfg).Prepare(t.Context(), in)
		require.NoError(t, err)
		return res
	}
	reminders := func(recs []transcript.Record) int {
		n := 0
		for _, r := range recs {
			if r.Subtype == transcript.SubtypeReminder {
				n++
			}
		}
		return n
	}
	step := Config{Snip: SnipConfig{ReminderTokens: 1500}}
	for _, tc := range []struct {
		name string
		cfg  Config
		in   Input
		want int
	}{
		{"the snip tool offered", step, Input{Tools: offered}, 1},
		{"tags on", Config{Snip: SnipConfig{TagMessages: true, ReminderTokens: 1500}}, Input{}, 1},
		{"neither", step, Input{}, 0},
		{"turned off", Config{Snip: SnipConfig{ReminderTokens: -1}}, Input{Tools: offered}, 0},
		{"below the default step", Config{}, Input{Tools: offered}, 0},
		{"a fork writes none", step, Input{Tools: offered, SkipCacheWrite: true}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := remindTK(3)
			tc.in.Records = k.recs
			res := prepare(t, tc.cfg, tc.in)
			require.Equal(t, tc.want, reminders(res.Append))
			if tc.want == 0 {
				return
			}
			r := res.Append[0]
			assert.Equal(t, tkUUID(5), r.Reminder.AfterUUID, "after the latest input")
			assert.GreaterOrEqual(t, r.Reminder.GrowthTokens, 1500)
			last := res.Request.Messages[len(res.Request.Messages)-1]
			assert.Equal(t, r.Reminder.Text, last.Content[len(last.Content)-1].(*transcript.Text).Text)

			// Appended, it replays in place and no second one comes for the same growth.
			tc.in.Records = append(k.recs, roundTrip(t, res.Append)...)
			again := prepare(t, tc.cfg, tc.in)
			assert.Empty(t, again.Append)
			assert.Equal(t, string(requestBytes(t, res.Request)), string(requestBytes(t, again.Request)))
		})
	}
}

// TestSnipReminderStopsAfterSnip: the growth that would bring a second reminder brings none
// when a snip came after the first; the count starts at the snip.
func TestSnipReminderStopsAfterSnip(t *testing.T) {
	cfg := Config{Snip: SnipConfig{ReminderTokens: 1500}}
	p := snipPipeline(t, cfg)
	run := func(recs []transcript.Record) Result {
		res, err := p.Prepare(t.Context(), Input{Records: recs, Tools: []provider.Tool{SnipTool()}})
		require.NoError(t, err)
		return res
	}
	k := remindTK(3)
	first := run(k.recs)
	require.Len(t, first.Append, 1)
	k.recs = append(k.recs, roundTrip(t, first.Append)...)
	k.assistant(text("Noted."))
	k.user("part 3: " + filler(2400))
	k.assistant(toolUse("sn", SnipToolName))
	without := &tk{recs: append([]transcript.Record(nil), k.recs...), t0: k.t0, n: k.n, last: k.last, msgN: k.msgN}
	out := p.HandleSnip(k.recs, snipInput(k.recs, "folded into notes", 1), snipNow)
	require.NotNil(t, out.Record, out.Text)
	k.decision(*out.Record)
	for _, k := range []*tk{k, without} {
		k.results(out.Result("sn"))
		k.assistant(text("Done."))
		k.user("part 4: " + filler(2400))
	}
	assert.Len(t, run(without.recs).Append, 1, "no snip: the growth since the first reminder brings a second")

	res := run(k.recs)
	assert.Empty(t, res.Append, "after a snip the count starts again")
	assert.Len(t, actionsOf(res.Report.Stage("snip"), ActionSnipped), 1)
}
