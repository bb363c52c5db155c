package agentctx

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentctx/agentctx/provider"

	"github.com/agentctx/agentctx/transcript"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// normMixed returns a session of the given turns with, at places rng picks, what normalize
// repairs or drops, and what reaches from the records written later into earlier messages:
// prompts that are blank or hold an image, consecutive user records, thinking (trailing
// too), tool ids and names the provider rejects, a tool_use id used again, a call answered only
// after the next prompt, a result repeated later, a response going on after a prompt,
// server tool blocks, API error, synthetic, virtual and display-only records, and a compaction.
func normMixed(turns int, seed uint64) []transcript.Record {
	rng := rand.New(rand.NewPCG(seed, 0x9e11))
	k := newTK()
	var unanswered []*transcript.ToolResult // results held back, written after a later prompt
	var answered []string                   // ids of calls answered
	lastMsg := ""                           // message id of the last response
	for i := range turns {
		switch rng.IntN(14) {
		case 0:
			k.user("   \n")
		case 1:
			k.userBlocks(text(fmt.Sprintf("look at this %d", i)), pngBlock(64))
		case 2:
			k.user(fmt.Sprintf("first part %d", i))
			k.user(fmt.Sprintf("second part %d", i))
		default:
			k.user(fmt.Sprintf("question %d", i))
		}
		for _, tr := range unanswered {
			k.results(tr)
		}
		unanswered = nil
		var blocks []transcript.Block
		if rng.IntN(4) == 0 {
			blocks = append(blocks, &transcript.Thinking{Thinking: fmt.Sprintf("thinking %d", i), Signature: memoSignature})
		}
		blocks = append(blocks, text(fmt.Sprintf("answering %d", i)))
		var trs []*transcript.ToolResult
		for c := range rng.IntN(3) {
			id, name := fmt.Sprintf("t%d_%d", i, c), "Read"
			switch rng.IntN(12) {
			case 0:
				id = fmt.Sprintf("bad id %d.%d", i, c)
			case 1:
				name = "bad name!"
			case 2:
				if len(answered) > 0 {
					id = answered[rng.IntN(len(answered))] // a tool_use id used again
				}
			}
			blocks = append(blocks, &transcript.ToolUse{ID: id, Name: name, Input: json.RawMessage(`{"path":"x"}`)})
			trs = append(trs, result(id, fmt.Sprintf("contents %d %d", i, c)))
		}
		if rng.IntN(6) == 0 { // a tool search, answered by a tool_reference (sent as one when Input.Tools declares Read)
			id := fmt.Sprintf("ts%d", i)
			blocks = append(blocks, &transcript.ToolUse{ID: id, Name: "ToolSearch", Input: json.RawMessage(`{"query":"read"}`)})
			trs = append(trs, &transcript.ToolResult{ToolUseID: id, Content: []transcript.Block{&transcript.ToolReference{ToolName: "Read"}}})
		}
		if rng.IntN(10) == 0 {
			blocks = append(blocks, &transcript.ServerToolUse{ID: fmt.Sprintf("srv_%d", i), Name: "web_search", Input: json.RawMessage(`{}`)},
				&transcript.ServerToolResult{Type: "web_search_tool_result", ToolUseID: fmt.Sprintf("srv_%d", i), Content: json.RawMessage(`[]`)})
		}
		if rng.IntN(8) == 0 {
			blocks = append(blocks, &transcript.Thinking{Thinking: "trailing", Signature: memoSignature})
		}
		k.assistant(blocks...)
		lastMsg = fmt.Sprintf("msg_%04d", k.msgN)
		switch rng.IntN(8) {
		case 0: // answered after the next prompt
			unanswered = trs
		case 1: // one result left out for good
			if len(trs) > 0 {
				k.results(trs[1:]...)
			}
		case 2: // answered in the reverse order
			rev := slices.Clone(trs)
			slices.Reverse(rev)
			k.results(rev...)
		default:
			k.results(trs...)
		}
		for _, tr := range trs {
			answered = append(answered, tr.ToolUseID)
		}
		if len(trs) > 0 {
			k.assistant(text(fmt.Sprintf("done %d", i)))
			lastMsg = fmt.Sprintf("msg_%04d", k.msgN)
		}
		for range rng.IntN(2) {
			switch rng.IntN(9) {
			case 0: // a result repeated later
				if len(answered) > 0 {
					k.userBlocks(result(answered[rng.IntN(len(answered))], "again"))
				}
			case 1: // the last response goes on after a prompt
				k.user(fmt.Sprintf("meanwhile %d", i))
				r := k.next(transcript.TypeAssistant)
				r.Message = &transcript.Message{ID: lastMsg, Type: "message", Role: transcript.RoleAssistant, Model: "claude-sonnet-4-5",
					Content: []transcript.Block{text("and more")}, Usage: &transcript.Usage{InputTokens: 10, OutputTokens: 5}}
				k.add(r)
			case 2:
				r := k.next(transcript.TypeAssistant)
				r.IsAPIErrorMessage = true
				r.Message = &transcript.Message{ID: fmt.Sprintf("err_%d", i), Role: transcript.RoleAssistant, Model: transcript.SyntheticModel, Content: []transcript.Block{text("API Error")}}
				k.add(r)
			case 3:
				r := k.next(transcript.TypeAssistant)
				r.Message = &transcript.Message{ID: fmt.Sprintf("syn_%d", i), Role: transcript.RoleAssistant, Model: transcript.SyntheticModel, Content: []transcript.Block{text("No response requested.")}}
				k.add(r)
			case 4:
				r := k.next(transcript.TypeUser)
				r.IsVirtual = true
				r.Message = &transcript.Message{Role: transcript.RoleUser, Content: []transcript.Block{text("virtual")}}
				k.add(r)
			case 5:
				r := k.next(transcript.TypeUser)
				r.IsVisibleInTranscriptOnly = true
				r.Message = &transcript.Message{Role: transcript.RoleUser, Content: []transcript.Block{text("shown only")}}
				k.add(r)
			case 6: // an empty assistant record
				r := k.next(transcript.TypeAssistant)
				k.msgN++
				r.Message = &transcript.Message{ID: fmt.Sprintf("msg_%04d", k.msgN), Role: transcript.RoleAssistant, Model: "claude-sonnet-4-5"}
				k.add(r)
			case 7: // a compaction
				b := k.next(transcript.TypeSystem)
				b.Subtype, b.ParentUUID, b.LogicalParentUUID = transcript.SubtypeCompactBoundary, "", k.recs[len(k.recs)-1].UUID
				b.CompactMetadata = &transcript.CompactMetadata{Trigger: transcript.TriggerAuto}
				k.add(b)
				s := k.user(fmt.Sprintf("summary %d", i))
				s.IsCompactSummary = true
			case 8: // a system record on the chain
				r := k.next(transcript.TypeSystem)
				r.Subtype = transcript.SubtypeLocalCommand
				k.add(r)
			}
		}
	}
	return k.recs
}

// prefixConfigs are the configurations the settled-prefix tests run under: each changes what
// normalize does with a view.
func prefixConfigs() map[string]Config {
	big := 10_000_000
	return map[string]Config{
		"default":      {ContextWindow: big},
		"user context": {ContextWindow: big, Context: ContextConfig{User: &ctxStatic{sections: []ContextSection{{"claudeMd", "Use tabs."}}}}},
		"thinking":     {ContextWindow: big, Thinking: &provider.Thinking{Type: "enabled", BudgetTokens: 2048}},
		"prefill":      {ContextWindow: big, Normalize: NormalizeConfig{AllowPrefill: true}},
		"budget":       {ContextWindow: big, Budget: BudgetConfig{MaxResultChars: 12, PreviewBytes: 4}},
	}
}

// checkPrefixTurns runs a Pipeline through turns of all, in one slice a caller grows in place
// (records appended a few at a time, turns built again with other last records, rewinds,
// another slice holding the same records, now and then Input.Tools declaring Read), and after
// each turn compares its request body and report with a new Pipeline's. It returns how many
// turns started from a settled prefix of the conversation's previous turn.
func checkPrefixTurns(t *testing.T, all []transcript.Record, cfg Config, seed uint64, steps int) int {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 0x5e77))
	now := time.Date(2026, 1, 3, 0, 0, 0, 0, time.UTC)
	warm := newTestPipeline(t, cfg, now)
	buf := make([]transcript.Record, 0, len(all)+8)
	prompt, used := 0, 0
	var tools []provider.Tool
	newPrompt := func() transcript.Record {
		prompt++
		return promptAfter(buf, prompt)
	}
	check := func(what string) {
		t.Helper()
		before := prefixLen(warm)
		in := Input{Records: buf, Tools: tools}
		got, gerr := warm.Prepare(t.Context(), in)
		want, werr := newTestPipeline(t, cfg, now).Prepare(t.Context(), in)
		if werr != nil || gerr != nil {
			require.Equal(t, fmt.Sprint(werr), fmt.Sprint(gerr), "%s, %d records", what, len(buf))
			return
		}
		if wb, gb := string(requestBytes(t, want.Request)), string(requestBytes(t, got.Request)); wb != gb {
			t.Log(describeDiff(want.Request, got.Request))
			require.Equal(t, wb, gb, "%s, %d records", what, len(buf))
		}
		require.Equal(t, want.Report.String(), got.Report.String(), "%s, %d records", what, len(buf))
		if before > 0 && prefixLen(warm) >= before {
			used++
		}
	}
	step := max(1, len(all)/steps)
	for len(buf) < len(all) {
		switch op := rng.IntN(12); {
		case op < 6: // records written since
			buf = append(buf, all[len(buf):min(len(all), len(buf)+1+rng.IntN(2*step))]...)
			check("grown")
		case op < 8: // the turn built again, with a new prompt or two as its last records
			base := len(buf)
			for range 1 + rng.IntN(2) {
				buf = buf[:base]
				for range 1 + rng.IntN(2) {
					buf = append(buf, newPrompt())
				}
				check("built again")
			}
			buf = buf[:base]
		case op < 9: // a rewind
			buf = buf[:max(0, len(buf)-1-rng.IntN(4))]
			check("rewound")
		case op < 10: // the same records in another slice
			buf = append(make([]transcript.Record, 0, len(all)+8), buf...)
			check("another slice")
		case op < 11: // the tools declared change
			if tools == nil {
				tools = []provider.Tool{{Name: "Read", Definition: json.RawMessage(`{"name":"Read","input_schema":{"type":"object"}}`)}}
			} else {
				tools = nil
			}
			check("tools changed")
		default:
			check("the same records")
		}
	}
	check("the whole transcript")
	return used
}

// prefixLen is how many view items the settled prefixes p keeps cover, in all.
func prefixLen(p *Pipeline) int {
	n, _ := prefixStats(p)
	return n
}

// prefixStats is how many view items the settled prefixes p keeps cover, and how many turns
// started from them since they were last emptied, in all.
func prefixStats(p *Pipeline) (items, hits int) {
	for i := 0; p.stages.normalize.prefixes.Entry(i) != nil; i++ {
		e := p.stages.normalize.prefixes.Entry(i)
		items, hits = items+len(e.items), hits+e.hits
	}
	return items, hits
}

// TestNormalizePrefixGenerated checks a warm Pipeline against a new one, turn after turn, on
// generated sessions full of what normalize repairs, under every configuration of
// prefixConfigs, and that most turns do start from a settled prefix.
func TestNormalizePrefixGenerated(t *testing.T) {
	for name, cfg := range prefixConfigs() {
		for seed := range uint64(6) {
			t.Run(fmt.Sprintf("%s/%d", name, seed), func(t *testing.T) {
				all := normMixed(40, seed)
				used := checkPrefixTurns(t, all, cfg, seed, 60)
				assert.Positive(t, used, "no turn started from a settled prefix")
			})
		}
	}
	t.Run("steady", func(t *testing.T) {
		// A plain session grown one exchange a turn: the first turn settles no prefix, the
		// second does, and every turn after starts from it and grows it.
		k := newTK()
		k.readTurns(30)
		p := newTestPipeline(t, Config{ContextWindow: 10_000_000}, normNow)
		turns := 0
		for i := range k.recs {
			if k.recs[i].Type != transcript.TypeUser || k.recs[i].Message.Content[0].Kind() != transcript.KindText {
				continue
			}
			before := prefixLen(p)
			requireSameTurn(t, p, Config{ContextWindow: 10_000_000}, Input{Records: k.recs[:i+1]}, "turn %d", turns)
			switch {
			case turns == 0:
				assert.Zero(t, prefixLen(p), "the first turn settles no prefix")
			case turns > 1:
				assert.Greater(t, prefixLen(p), before, "turn %d: the prefix grows by the last exchange", turns)
			}
			turns++
		}
		assert.Equal(t, 30, turns)
	})
}

// TestNormalizePrefixGoldenAndCorpus does the same on every transcript under testdata and
// every corpus session, under the default configuration and with a user context.
func TestNormalizePrefixGoldenAndCorpus(t *testing.T) {
	cfgs := prefixConfigs()
	for k, path := range transcriptPaths(t) {
		t.Run(path, func(t *testing.T) {
			tr, err := transcript.ReadFile(path, transcript.ReadOptions{})
			if err != nil {
				t.Skipf("not a transcript: %v", err)
			}
			name := "default"
			if k%2 == 1 {
				name = "user context"
			}
			checkPrefixTurns(t, tr.Records, cfgs[name], uint64(k), 12)
		})
	}
}

// TestNormalizePrefixReach covers each way the messages after a settled prefix reach into it,
// or the prefix's items change, one case each: every turn after must give what a new Pipeline
// gives, the turn that reaches and the two after it, each a prompt and an answer more.
func TestNormalizePrefixReach(t *testing.T) {
	for _, tt := range []struct {
		name string
		more func(k *tk)
	}{
		{"tool_use id of the prefix used again", func(k *tk) { k.assistant(toolUse("toolu_1", "Read")) }},
		{"tool_use id used again in one exchange", func(k *tk) {
			k.assistant(toolUse("toolu_7", "Read"))
			k.results(result("toolu_7", "seven"))
			k.assistant(text("and again"), toolUse("toolu_7", "Read"))
			k.results(result("toolu_7", "seven again"))
			k.assistant(text("twice"))
		}},
		{"result for a call of the prefix", func(k *tk) { k.userBlocks(result("toolu_1", "late")) }},
		{"response of the prefix goes on", func(k *tk) {
			r := k.next(transcript.TypeAssistant)
			r.Message = &transcript.Message{ID: "msg_0002", Type: "message", Role: transcript.RoleAssistant, Model: "claude-sonnet-4-5",
				Content: []transcript.Block{text("more")}, Usage: &transcript.Usage{InputTokens: 10, OutputTokens: 5}}
			k.add(r)
		}},
		{"first message after the prefix emptied", func(k *tk) {
			k.recs = k.recs[:len(k.recs)-1] // the prompt the prefix ends before
			k.last = k.recs[len(k.recs)-1].UUID
			k.userBlocks(result("toolu_9", "no such call"))
			k.assistant(text("an answer"))
		}},
		{"first message after the prefix emptied, then a call", func(k *tk) {
			k.recs = k.recs[:len(k.recs)-1]
			k.last = k.recs[len(k.recs)-1].UUID
			k.userBlocks(result("toolu_9", "no such call"))
			k.assistant(text("calling"), toolUse("toolu_10", "Read"))
			k.results(result("toolu_10", "ten"))
			k.assistant(text("an answer"))
		}},
		{"first message after the prefix only blank", func(k *tk) {
			k.recs = k.recs[:len(k.recs)-1]
			k.last = k.recs[len(k.recs)-1].UUID
			k.user(" ")
			k.assistant(text("an answer"))
		}},
		{"a prefix item changed in value", func(k *tk) {
			k.recs[0].Message = &transcript.Message{Role: transcript.RoleUser, Content: []transcript.Block{text("another first question")}, StringContent: true}
		}},
		{"a prefix record given a synthetic message", func(k *tk) {
			m := *k.recs[len(k.recs)-2].Message
			m.Model = transcript.SyntheticModel
			k.recs[len(k.recs)-2].Message = &m
		}},
		{"a prefix record shown only in the transcript, in a copy", func(k *tk) {
			k.recs = slices.Clone(k.recs)
			k.recs[1].IsVisibleInTranscriptOnly = true
		}},
		{"rewritten tool id of the prefix answered again", func(k *tk) {
			k.assistant(text("checking"), toolUse("bad id", "Read"))
			k.results(result("bad id", "once"))
			k.assistant(text("checked"))
			k.user("and?")
			k.userBlocks(result("bad id", "twice"))
			k.assistant(text("again"))
		}},
		{"rewritten tool name of the prefix used again", func(k *tk) {
			k.assistant(text("checking"), toolUse("toolu_n1", "bad name!"))
			k.results(result("toolu_n1", "once"))
			k.assistant(text("checked"))
			k.user("and?")
			k.assistant(text("again"), toolUse("toolu_n2", "bad name!"))
			k.results(result("toolu_n2", "twice"))
			k.assistant(text("done"))
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			k := newTK()
			k.readTurns(3)
			k.user("last question")
			warm := newTestPipeline(t, Config{}, normNow)
			turnOutput(t, warm, Input{Records: k.recs[:len(k.recs)-1]})
			require.Zero(t, prefixLen(warm), "a conversation's first turn settles no prefix")
			turnOutput(t, warm, Input{Records: k.recs})
			require.Positive(t, prefixLen(warm), "its second turn does")
			tt.more(k)
			for turn := range 3 {
				k.user(fmt.Sprintf("next question %d", turn))
				requireSameTurn(t, warm, Config{}, Input{Records: k.recs}, "turn %d", turn)
				k.assistant(text(fmt.Sprintf("answer %d", turn)))
			}
		})
	}
}

// TestNormalizePrefixAfterUncompared checks that a block the prefix cannot compare (a
// tool_result holding a search_result, say) ends the prefix before it, and that later turns
// still start from the prefix.
func TestNormalizePrefixAfterUncompared(t *testing.T) {
	k := newTK()
	k.readTurns(3)
	k.user("search the docs")
	k.assistant(text("searching"), toolUse("toolu_s", "DocSearch"))
	k.results(&transcript.ToolResult{ToolUseID: "toolu_s", Content: []transcript.Block{&transcript.UnknownBlock{Type: transcript.KindSearchResult,
		JSON: json.RawMessage(`{"type":"search_result","source":"s","title":"t","content":[{"type":"text","text":"x"}]}`)}}})
	k.assistant(text("found"))
	p := newTestPipeline(t, Config{}, normNow)
	for turn := range 4 {
		k.user(fmt.Sprintf("question after the search %d", turn))
		requireSameTurn(t, p, Config{}, Input{Records: k.recs}, "turn %d", turn)
		k.assistant(text(fmt.Sprintf("answer %d", turn)))
	}
	items, hits := prefixStats(p)
	assert.Equal(t, 2, hits, "every turn after the second starts from the prefix the second settled")
	assert.Equal(t, 3*5+1, items, "the prefix ends before the call answered by the search result: the three read turns, of five records each, and the prompt")
}

// describeDiff says where two requests' messages first differ.
func describeDiff(want, got provider.Request) string {
	var b strings.Builder
	fmt.Fprintf(&b, "messages: want %d, got %d\n", len(want.Messages), len(got.Messages))
	for i := range min(len(want.Messages), len(got.Messages)) {
		w, g := want.Messages[i], got.Messages[i]
		wj, _ := json.Marshal(w)
		gj, _ := json.Marshal(g)
		if string(wj) != string(gj) {
			fmt.Fprintf(&b, "first difference at message %d:\nwant %.600s\ngot  %.600s\n", i, wj, gj)
			for k := max(0, i-3); k < len(want.Messages); k++ {
				var kinds []string
				for _, c := range want.Messages[k].Content {
					kinds = append(kinds, string(c.Kind()))
				}
				var gk []string
				for _, c := range got.Messages[k].Content {
					gk = append(gk, string(c.Kind()))
				}
				fmt.Fprintf(&b, "%d %s want %v got %v\n", k, want.Messages[k].Role, kinds, gk)
			}
			break
		}
	}
	return b.String()
}

// TestNormalizePrefixPrefillTrim checks that trimming a prefill's trailing whitespace, when the
// view ends on a message collect made, leaves the message as the settled prefix takes it on a
// later turn.
func TestNormalizePrefixPrefillTrim(t *testing.T) {
	k := newTK()
	k.user("q0")
	n1 := len(k.recs)
	k.assistant(text("answer with trailing space  "))
	k.userBlocks(result("toolu_nope", "orphan")) // dropped: the view ends on the answer
	n2 := len(k.recs)
	k.user("q1")
	cfg := Config{Normalize: NormalizeConfig{AllowPrefill: true}}
	warm := newTestPipeline(t, cfg, normNow)
	for i, n := range []int{n1, n2, len(k.recs)} {
		requireSameTurn(t, warm, cfg, Input{Records: k.recs[:n]}, "turn %d", i)
	}
}
