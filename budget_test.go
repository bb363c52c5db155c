package agentctx

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/agentctx/agentctx/provider"

	"github.com/agentctx/agentctx/transcript"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var budgetNow = time.Date(2026, 1, 2, 4, 0, 0, 0, time.UTC)

func budgetPipeline(t testing.TB, b BudgetConfig) *Pipeline {
	t.Helper()
	// Microcompact off: these tests look at tool-result content, which idle-gap clearing hides.
	return newTestPipeline(t, Config{Budget: b, Microcompact: MicrocompactConfig{Disable: true}}, budgetNow)
}

func budgetPrepare(t testing.TB, p *Pipeline, recs []transcript.Record) Result {
	t.Helper()
	res, err := p.Prepare(context.Background(), Input{Records: recs, Tools: budgetTools})
	require.NoError(t, err)
	return res
}

// budgetTool is the tool of most budget tests: one without a default cap of its own, so that
// MaxResultChars applies.
const budgetTool = "Exec"

var budgetTools = []provider.Tool{{Name: budgetTool, Definition: json.RawMessage(`{"name":"Exec","input_schema":{"type":"object"}}`)}}

// budgetLines returns n characters of numbered lines, so previews have newlines to cut at.
func budgetLines(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "line %05d of the tool output\n", i)
	}
	return b.String()[:n]
}

// budgetParallel builds a prompt, one response with parallel calls of budgetTool, and their
// results in separate user records (as Claude Code writes them).
func budgetParallel(k *tk, sizes map[string]int, ids ...string) {
	k.user("run the commands")
	var uses []transcript.Block
	for _, id := range ids {
		uses = append(uses, toolUse(id, budgetTool))
	}
	k.assistant(uses...)
	var trs []*transcript.ToolResult
	for _, id := range ids {
		trs = append(trs, result(id, budgetLines(sizes[id])))
	}
	k.results(trs...)
}

func budgetDecisions(recs []transcript.Record) []transcript.BudgetResult {
	var out []transcript.BudgetResult
	for _, r := range recs {
		if r.Subtype == transcript.SubtypeToolResultBudget && r.Budget != nil {
			out = append(out, r.Budget.Results...)
		}
	}
	return out
}

func TestBudgetPerResultCap(t *testing.T) {
	tests := []struct {
		name     string
		content  string
		isError  bool
		replaced bool
	}{
		{"under cap", budgetLines(1000), false, false},
		{"over cap", budgetLines(1001), false, true},
		{"over cap error kept", budgetLines(5000), true, true},
		{"runes not bytes", strings.Repeat("é", 1000), false, false}, // 2,000 bytes, 1,000 characters
		{"runes over cap", strings.Repeat("é", 1001), false, true},
		{"empty", "", false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			store := &MapStore{}
			p := budgetPipeline(t, BudgetConfig{MaxResultChars: 1000, PreviewBytes: 100, Store: store})
			k := newTK()
			k.user("go")
			k.assistant(toolUse("toolu_a", budgetTool))
			tr := result("toolu_a", tc.content)
			tr.IsError = tc.isError
			k.results(tr)
			res := budgetPrepare(t, p, k.recs)

			trs, _ := toolResults(res.Request)
			got := trs["toolu_a"]
			require.NotNil(t, got)
			assert.Equal(t, tc.isError, got.IsError)
			dec := budgetDecisions(res.Append)
			if !tc.replaced {
				assert.Empty(t, res.Append, "a kept result needs no record")
				assert.Empty(t, res.Report.Stage("budget").Actions)
				if tc.content != "" { // normalize fills an empty result with a placeholder
					assert.Equal(t, tc.content, resultText(got))
				}
				assert.Equal(t, 0, store.Len())
				return
			}
			require.Len(t, dec, 1)
			assert.Equal(t, "toolu_a", dec[0].ToolUseID)
			assert.True(t, dec[0].Replaced)
			chars := utf8.RuneCountInString(tc.content)
			pv := resultText(got)
			assert.Equal(t, dec[0].Preview, pv)
			assert.Equal(t, chars, dec[0].OriginalChars)
			assert.Equal(t, "memory:toolu_a", dec[0].Ref)
			assert.True(t, strings.HasPrefix(pv, fmt.Sprintf(
				"<persisted-output>\nOutput too large (%d characters). Full output saved to: memory:toolu_a\n\nPreview (first 100 bytes):\n", chars)), pv)
			assert.True(t, strings.HasSuffix(pv, "\n...\n</persisted-output>"), pv)
			assert.True(t, utf8.ValidString(pv))
			assert.Less(t, utf8.RuneCountInString(pv), chars)
			stored, ok := store.Get("toolu_a")
			require.True(t, ok)
			assert.Equal(t, tc.content, string(stored))

			sr := res.Report.Stage("budget")
			require.NotNil(t, sr)
			require.Len(t, sr.Actions, 1)
			assert.Equal(t, ActionReplaced, sr.Actions[0].Kind)
			assert.Equal(t, "toolu_a", sr.Actions[0].ToolUseID)
			assert.Equal(t, k.recs[len(k.recs)-1].UUID, sr.Actions[0].UUID)
			assert.Less(t, sr.Actions[0].Tokens, 0)
			assert.Equal(t, -sr.Actions[0].Tokens, sr.TokensFreed)
		})
	}
}

func TestBudgetAggregateParallel(t *testing.T) {
	tests := []struct {
		name     string
		sizes    map[string]int
		max      int
		replaced []string
	}{
		{"under aggregate", map[string]int{"toolu_a": 300, "toolu_b": 300, "toolu_c": 300}, 1000, nil},
		{"largest replaced", map[string]int{"toolu_a": 300, "toolu_b": 500, "toolu_c": 400}, 1000, []string{"toolu_b"}},
		{"two replaced", map[string]int{"toolu_a": 450, "toolu_b": 500, "toolu_c": 400}, 800, []string{"toolu_a", "toolu_b"}},
		{"tie by id", map[string]int{"toolu_c": 400, "toolu_b": 400, "toolu_a": 400}, 1000, []string{"toolu_a"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := budgetPipeline(t, BudgetConfig{MaxResultChars: 1000, MaxMessageChars: tc.max, PreviewBytes: 50, Store: &MapStore{}})
			k := newTK()
			budgetParallel(k, tc.sizes, "toolu_c", "toolu_a", "toolu_b")
			res := budgetPrepare(t, p, k.recs)

			trs, msg := toolResults(res.Request)
			require.Len(t, trs, 3)
			assert.Equal(t, msg["toolu_a"], msg["toolu_b"], "parallel results share one API message")
			assert.Equal(t, msg["toolu_a"], msg["toolu_c"])
			var got []string
			total := 0
			for _, id := range []string{"toolu_a", "toolu_b", "toolu_c"} {
				s := resultText(trs[id])
				total += utf8.RuneCountInString(s)
				if strings.HasPrefix(s, "<persisted-output>") {
					got = append(got, id)
				}
			}
			assert.Equal(t, tc.replaced, got)
			assert.LessOrEqual(t, total, tc.max)
			var recorded []string
			for _, d := range budgetDecisions(res.Append) {
				assert.True(t, d.Replaced, "only replacements are recorded")
				recorded = append(recorded, d.ToolUseID)
			}
			var want []string // the record lists them in view order
			for _, id := range []string{"toolu_c", "toolu_a", "toolu_b"} {
				if slices.Contains(tc.replaced, id) {
					want = append(want, id)
				}
			}
			assert.Equal(t, want, recorded)
			assert.Len(t, res.Append, min(len(want), 1), "one record per turn, none when nothing is replaced")
			for _, a := range res.Report.Stage("budget").Actions {
				assert.Equal(t, ActionReplaced, a.Kind)
			}
		})
	}
}

// Results of different API user messages are not summed.
func TestBudgetAggregatePerMessage(t *testing.T) {
	p := budgetPipeline(t, BudgetConfig{MaxMessageChars: 1000, PreviewBytes: 50})
	k := newTK()
	k.user("go")
	k.assistant(toolUse("toolu_a", budgetTool))
	k.results(result("toolu_a", budgetLines(900)))
	k.assistant(toolUse("toolu_b", budgetTool))
	k.results(result("toolu_b", budgetLines(900)))
	res := budgetPrepare(t, p, k.recs)
	trs, msg := toolResults(res.Request)
	assert.NotEqual(t, msg["toolu_a"], msg["toolu_b"])
	assert.Equal(t, budgetLines(900), resultText(trs["toolu_a"]))
	assert.Equal(t, budgetLines(900), resultText(trs["toolu_b"]))
}

// Non-text blocks count their JSON length and are stored as JSON.
func TestBudgetNonTextBlocks(t *testing.T) {
	store := &MapStore{}
	p := budgetPipeline(t, BudgetConfig{MaxResultChars: 1000, PreviewBytes: 100, Store: store})
	img := &transcript.Image{Source: transcript.MediaSource{Type: "base64", MediaType: "image/png", Data: strings.Repeat("A", 200000)}}
	sr := &transcript.UnknownBlock{Type: transcript.KindSearchResult, JSON: json.RawMessage(`{"type":"search_result","source":"s","title":"t","content":[{"type":"text","text":"` + strings.Repeat("x", 1500) + `"}]}`)}
	k := newTK()
	k.user("go")
	k.assistant(toolUse("toolu_img", budgetTool), toolUse("toolu_sr", "Search"))
	k.results(&transcript.ToolResult{ToolUseID: "toolu_img", Content: []transcript.Block{text(strings.Repeat("caption ", 200)), img}},
		&transcript.ToolResult{ToolUseID: "toolu_sr", Content: []transcript.Block{text("found"), sr}})
	res := budgetPrepare(t, p, k.recs)
	dec := map[string]transcript.BudgetResult{}
	for _, d := range budgetDecisions(res.Append) {
		dec[d.ToolUseID] = d
	}
	require.Len(t, dec, 1)
	assert.NotContains(t, dec, "toolu_img", "a result holding an image is never replaced, whatever its size")
	require.True(t, dec["toolu_sr"].Replaced, "other non-text blocks count their JSON length")
	assert.Equal(t, len("found")+len(sr.JSON), dec["toolu_sr"].OriginalChars)
	stored, _ := store.Get("toolu_sr")
	assert.Equal(t, "found\n"+string(sr.JSON), string(stored))
	_, ok := store.Get("toolu_img")
	assert.False(t, ok, "nothing stored for the kept image result")
	trs, _ := toolResults(res.Request)
	assert.Len(t, trs["toolu_img"].Content, 2, "text and image sent as they are")
	assert.True(t, trs["toolu_sr"].StringContent)
}

// A result that a response follows has been sent as it is: it is kept by definition, with no
// record, even when a later config would replace it; only new results are decided.
func TestBudgetSentResultsKept(t *testing.T) {
	k := newTK()
	budgetParallel(k, map[string]int{"toolu_a": 800}, "toolu_a")
	res1 := budgetPrepare(t, budgetPipeline(t, BudgetConfig{MaxResultChars: 1000}), k.recs)
	require.Empty(t, res1.Append, "kept: no record")
	k.assistant(toolUse("toolu_b", budgetTool))
	k.results(result("toolu_b", budgetLines(800)))

	tight := budgetPipeline(t, BudgetConfig{MaxResultChars: 500, PreviewBytes: 50})
	res2 := budgetPrepare(t, tight, k.recs)
	trs, _ := toolResults(res2.Request)
	assert.Equal(t, budgetLines(800), resultText(trs["toolu_a"]), "sent result stays")
	assert.True(t, strings.HasPrefix(resultText(trs["toolu_b"]), "<persisted-output>"), "new result is replaced")
	dec2 := budgetDecisions(res2.Append)
	require.Len(t, dec2, 1, "only the new result is decided")
	assert.Equal(t, "toolu_b", dec2[0].ToolUseID)
	assert.Equal(t, "transcript:"+k.recs[len(k.recs)-1].UUID, dec2[0].Ref, "nil store: ref names the record")

	// An imported session: every oversize result already answered is kept, only the last,
	// unanswered ones are candidates.
	k.assistant(text("done"))
	res3 := budgetPrepare(t, budgetPipeline(t, BudgetConfig{MaxResultChars: 500, PreviewBytes: 50}), k.recs)
	assert.Empty(t, res3.Append)
	trs, _ = toolResults(res3.Request)
	assert.Equal(t, budgetLines(800), resultText(trs["toolu_b"]), "answered without a record: kept")
}

// Records of earlier versions list kept results too: a result listed as kept stays kept,
// even while it is new and over its cap.
func TestBudgetRecordedKept(t *testing.T) {
	k := newTK()
	budgetParallel(k, map[string]int{"toolu_a": 800, "toolu_b": 3000}, "toolu_a", "toolu_b")
	old := (&turn{now: budgetNow}).newDecision(transcript.SubtypeToolResultBudget, "old", "Tool-result budget: 2 new results, 0 replaced by a preview, 2 kept")
	old.Budget = &transcript.BudgetDecision{Results: []transcript.BudgetResult{{ToolUseID: "toolu_a"}, {ToolUseID: "toolu_b"}}}
	k.decision(old)
	res := budgetPrepare(t, budgetPipeline(t, BudgetConfig{MaxResultChars: 500, PreviewBytes: 50}), k.recs)
	assert.Empty(t, res.Append)
	trs, _ := toolResults(res.Request)
	assert.Equal(t, budgetLines(800), resultText(trs["toolu_a"]))
	assert.Equal(t, budgetLines(3000), resultText(trs["toolu_b"]))
}

// New results are decided on every Prepare until a response follows them: the same records
// and config give the same verdict, and once the replacements are appended nothing more is
// decided.
func TestBudgetNewResultsDecidedEachPrepare(t *testing.T) {
	k := newTK()
	budgetParallel(k, map[string]int{"toolu_a": 3000, "toolu_b": 200, "toolu_c": 900}, "toolu_a", "toolu_b", "toolu_c")
	p := budgetPipeline(t, BudgetConfig{MaxResultChars: 1000, MaxMessageChars: 1500, PreviewBytes: 100, Store: &MapStore{}})
	res1 := budgetPrepare(t, p, k.recs)
	res2 := budgetPrepare(t, p, k.recs)
	assert.Equal(t, res1.Append, res2.Append)
	assert.Equal(t, string(requestBytes(t, res1.Request)), string(requestBytes(t, res2.Request)))
	require.Len(t, res1.Append, 1)
	assert.Len(t, budgetDecisions(res1.Append), 1, "toolu_a over its cap; then 200+900+preview fit")

	recs := append(append([]transcript.Record(nil), k.recs...), res1.Append...)
	res3 := budgetPrepare(t, p, recs)
	assert.Empty(t, res3.Append, "the kept ones are decided again, the same way")
	assert.Equal(t, string(requestBytes(t, res1.Request)), string(requestBytes(t, res3.Request)))
}

// An assistant record Claude Code synthesized (an API error notice) never reached the
// provider: the results before it are still new.
func TestBudgetSyntheticResponse(t *testing.T) {
	k := newTK()
	budgetParallel(k, map[string]int{"toolu_a": 3000}, "toolu_a")
	r := k.assistant(text("API Error: prompt is too long"))
	r.Message.Model = transcript.SyntheticModel
	res := budgetPrepare(t, budgetPipeline(t, BudgetConfig{MaxResultChars: 1000, PreviewBytes: 100}), k.recs)
	dec := budgetDecisions(res.Append)
	require.Len(t, dec, 1)
	assert.Equal(t, "toolu_a", dec[0].ToolUseID)
}

// A replaced result is shown on later turns as the preview of its record, byte for byte, even
// after the config changes, after a resume from the JSONL file, and as the cache prefix of
// later turns.
func TestBudgetReappliedByteIdentical(t *testing.T) {
	k := newTK()
	budgetParallel(k, map[string]int{"toolu_a": 5000, "toolu_b": 300}, "toolu_a", "toolu_b")
	p1 := budgetPipeline(t, BudgetConfig{MaxResultChars: 1000, PreviewBytes: 200, Store: &MapStore{}})
	res1 := budgetPrepare(t, p1, k.recs)
	want := requestBytes(t, res1.Request)
	require.Len(t, res1.Append, 1)

	again := budgetPrepare(t, p1, k.recs)
	assert.Equal(t, want, requestBytes(t, again.Request), "Prepare twice: same bytes")
	assert.Equal(t, res1.Append, again.Append, "Prepare twice: same decisions")

	recs := append(append([]transcript.Record(nil), k.recs...), res1.Append...)
	for name, p := range map[string]*Pipeline{
		"same config":  p1,
		"other config": budgetPipeline(t, BudgetConfig{MaxResultChars: 100, PreviewBytes: 999, Store: &MapStore{}}),
		"disabled":     budgetPipeline(t, BudgetConfig{Disable: true}),
	} {
		t.Run(name, func(t *testing.T) {
			res2 := budgetPrepare(t, p, recs)
			assert.Equal(t, string(want), string(requestBytes(t, res2.Request)))
			assert.Empty(t, res2.Append)
			sr := res2.Report.Stage("budget")
			require.Len(t, sr.Actions, 1)
			assert.Equal(t, ActionReapplied, sr.Actions[0].Kind)
			assert.Equal(t, "toolu_a", sr.Actions[0].ToolUseID)
			assert.Less(t, sr.Actions[0].Tokens, 0)
		})
	}

	t.Run("resume", func(t *testing.T) {
		kk := &tk{recs: recs}
		tr, err := transcript.Read(strings.NewReader(kk.jsonl(t)), "session.jsonl", transcript.ReadOptions{})
		require.NoError(t, err)
		require.True(t, tr.Clean())
		res2 := budgetPrepare(t, p1, tr.Records)
		assert.Equal(t, string(want), string(requestBytes(t, res2.Request)))
		assert.Empty(t, res2.Append)
	})

	t.Run("prefix of later turns", func(t *testing.T) {
		k2 := &tk{recs: append([]transcript.Record(nil), recs...), t0: k.t0, n: k.n, last: k.last, msgN: k.msgN}
		k2.assistant(toolUse("toolu_c", budgetTool))
		k2.results(result("toolu_c", budgetLines(7000)))
		res3 := budgetPrepare(t, p1, k2.recs)
		require.Greater(t, len(res3.Request.Messages), len(res1.Request.Messages))
		trs1, msg1 := toolResults(res1.Request)
		trs3, msg3 := toolResults(res3.Request)
		for id, tr := range trs1 {
			assert.Equal(t, resultText(tr), resultText(trs3[id]), id)
			assert.Equal(t, msg1[id], msg3[id], id)
		}
		dec := budgetDecisions(res3.Append)
		require.Len(t, dec, 1)
		assert.Equal(t, "toolu_c", dec[0].ToolUseID)
		assert.True(t, dec[0].Replaced)
	})
}

// The first decision on a tool_use_id wins; later records naming it again are ignored.
func TestBudgetFirstDecisionWins(t *testing.T) {
	k := newTK()
	budgetParallel(k, map[string]int{"toolu_a": 3000}, "toolu_a")
	mk := func(key, preview string, replaced bool) transcript.Record {
		r := (&turn{now: budgetNow}).newDecision(transcript.SubtypeToolResultBudget, key, "test")
		r.Budget = &transcript.BudgetDecision{Results: []transcript.BudgetResult{{ToolUseID: "toolu_a", Replaced: replaced, Preview: preview}}}
		return r
	}
	tests := []struct {
		name  string
		decs  []transcript.Record
		shown string
	}{
		{"replaced first", []transcript.Record{mk("1", "first preview", true), mk("2", "second preview", true)}, "first preview"},
		{"kept first", []transcript.Record{mk("1", "", false), mk("2", "second preview", true)}, budgetLines(3000)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			recs := append(append([]transcript.Record(nil), k.recs...), tc.decs...)
			res := budgetPrepare(t, budgetPipeline(t, BudgetConfig{MaxResultChars: 1000, Store: &MapStore{}}), recs)
			trs, _ := toolResults(res.Request)
			assert.Equal(t, tc.shown, resultText(trs["toolu_a"]))
			assert.Empty(t, res.Append)
		})
	}
}

func TestBudgetDisable(t *testing.T) {
	k := newTK()
	budgetParallel(k, map[string]int{"toolu_a": 3000}, "toolu_a")
	res := budgetPrepare(t, budgetPipeline(t, BudgetConfig{Disable: true, MaxResultChars: 1000}), k.recs)
	assert.Empty(t, res.Append, "no new decisions")
	assert.Empty(t, res.Report.Stage("budget").Actions)
	trs, _ := toolResults(res.Request)
	assert.Equal(t, budgetLines(3000), resultText(trs["toolu_a"]))
}

// A Store error fails the turn, naming the stage, and nothing is appended.
func TestBudgetStoreError(t *testing.T) {
	boom := errors.New("disk full")
	k := newTK()
	budgetParallel(k, map[string]int{"toolu_a": 3000}, "toolu_a")
	p := budgetPipeline(t, BudgetConfig{MaxResultChars: 1000, Store: budgetStoreFunc(func(context.Context, string, []byte) (string, error) {
		return "", boom
	})})
	res, err := p.Prepare(context.Background(), Input{Records: k.recs})
	require.Error(t, err)
	assert.ErrorIs(t, err, boom)
	var se *StageError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, "budget", se.Stage)
	assert.Empty(t, res.Append)
}

type budgetStoreFunc func(ctx context.Context, id string, content []byte) (string, error)

func (f budgetStoreFunc) Put(ctx context.Context, id string, content []byte) (string, error) {
	return f(ctx, id, content)
}

// The stage never modifies the transcript's records or blocks: it replaces blocks in the view.
func TestBudgetCopyOnWrite(t *testing.T) {
	k := newTK()
	budgetParallel(k, map[string]int{"toolu_a": 3000, "toolu_b": 10}, "toolu_a", "toolu_b")
	before := k.jsonl(t)
	p := budgetPipeline(t, BudgetConfig{MaxResultChars: 1000})
	in := Input{Records: k.recs}
	chain, err := transcript.BuildChain(in.Records, transcript.ChainOptions{})
	require.NoError(t, err)
	tn := p.newTurn(context.Background(), &in, chain)
	tn.report.stage("budget")
	require.NoError(t, p.stages.budget.run(tn))
	assert.Equal(t, before, k.jsonl(t))

	var owned, shared int
	for _, it := range tn.items {
		for _, b := range it.blocks {
			tr, ok := b.(*transcript.ToolResult)
			if !ok {
				continue
			}
			if tr.ToolUseID == "toolu_a" {
				assert.True(t, it.owned)
				assert.NotSame(t, it.rec.Message.Content[0], b)
				owned++
			} else {
				assert.Same(t, it.rec.Message.Content[0], b)
				shared++
			}
		}
	}
	assert.Equal(t, 1, owned)
	assert.Equal(t, 1, shared)
	require.Len(t, tn.appended, 1)
	assert.Equal(t, transcript.TypeSystem, tn.appended[0].Type)
	assert.Equal(t, transcript.SubtypeToolResultBudget, tn.appended[0].Subtype)
	assert.Empty(t, tn.appended[0].ParentUUID)
}

func TestBudgetPreviewHead(t *testing.T) {
	tests := []struct {
		name string
		in   string
		n    int
		want string
		more bool
	}{
		{"short", "abc", 10, "abc", false},
		{"exact", "abcdefghij", 10, "abcdefghij", false},
		{"cut", "abcdefghijkl", 10, "abcdefghij", true},
		{"newline in second half", "abcdefg\nijkl", 10, "abcdefg", true},
		{"newline in first half", "ab\ndefghijkl", 10, "ab\ndefghij", true},
		{"utf8 boundary", "aaaaaaaaa€", 10, "aaaaaaaaa", true}, // € is 3 bytes at 9..11
		{"all multibyte", strings.Repeat("€", 5), 10, "€€€", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, more := previewHead(tc.in, tc.n)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.more, more)
			assert.True(t, utf8.ValidString(got))
		})
	}
}

func TestBudgetPreviewTail(t *testing.T) {
	tests := []struct {
		name string
		in   string
		n    int
		want string
	}{
		{"short", "abc", 10, "abc"},
		{"cut", "abcdefghijkl", 10, "cdefghijkl"},
		{"newline in first half", "abcdef\nhijkl", 10, "hijkl"},
		{"newline in second half", "abcdefghij\nkl", 10, "defghij\nkl"},
		{"utf8 boundary", "€aaaaaaaaa", 10, "aaaaaaaaa"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := previewTail(tc.in, tc.n)
			assert.Equal(t, tc.want, got)
			assert.True(t, utf8.ValidString(got))
		})
	}
}

// TestBudgetShellPreviewKeepsTail: the preview of a shell tool's result shows its last lines,
// where the exit status and the error are; other tools' previews show the head only.
func TestBudgetShellPreviewKeepsTail(t *testing.T) {
	var out strings.Builder
	for i := range 400 {
		fmt.Fprintf(&out, "compiling package %03d\n", i)
	}
	out.WriteString("error: package 399 does not build\nexit status 2\n")
	for _, tc := range []struct {
		tool string
		cfg  BudgetConfig
		tail bool
	}{
		{"Bash", BudgetConfig{}, true},
		{"exec_command", BudgetConfig{}, true},
		{"Grep", BudgetConfig{}, false},
		{"Bash", BudgetConfig{TailTools: []string{}}, false},
		{"Make", BudgetConfig{TailTools: []string{"Make"}}, true},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			k := newTK()
			k.user("build it")
			tu := toolUse("b1", tc.tool)
			k.assistant(tu)
			k.results(result("b1", out.String()))
			tc.cfg.MaxResultChars, tc.cfg.PreviewBytes = 2000, 600
			p := newTestPipeline(t, Config{Budget: tc.cfg}, k.at(time.Second))
			res, err := p.Prepare(t.Context(), Input{Records: k.recs})
			require.NoError(t, err)
			trs, _ := toolResults(res.Request)
			pv := resultText(trs["b1"])
			assert.Contains(t, pv, "compiling package 000")
			assert.Equal(t, tc.tail, strings.Contains(pv, "exit status 2"), pv)
			assert.Equal(t, tc.tail, strings.Contains(pv, "first 300 and last 300 bytes"), pv)
			assert.Less(t, len(pv), 900)
		})
	}
}

func TestBudgetValidate(t *testing.T) {
	for _, b := range []BudgetConfig{{MaxResultChars: -1}, {MaxMessageChars: -1}, {PreviewBytes: -5}} {
		_, err := New(Config{ContextWindow: 1000, Tokens: EstimateCounter{}, Budget: b})
		assert.ErrorContains(t, err, "is negative")
	}
	_, err := New(Config{ContextWindow: 1000, Tokens: EstimateCounter{}})
	assert.NoError(t, err)
}

// A result whose preview would not be shorter than it stays as it is.
func TestBudgetPreviewNotShorter(t *testing.T) {
	p := budgetPipeline(t, BudgetConfig{MaxResultChars: 100, PreviewBytes: 2000, Store: &MapStore{}})
	k := newTK()
	budgetParallel(k, map[string]int{"toolu_a": 500}, "toolu_a")
	res := budgetPrepare(t, p, k.recs)
	trs, _ := toolResults(res.Request)
	assert.Equal(t, budgetLines(500), resultText(trs["toolu_a"]))
	assert.Empty(t, res.Append)
}

// Results written between the records of one streamed response still belong to the one user
// message that follows the response, so their sizes are summed.
func TestBudgetAggregateInterleaved(t *testing.T) {
	k := newTK()
	k.user("go")
	a1 := k.assistant(toolUse("toolu_a", budgetTool))
	k.results(result("toolu_a", budgetLines(600)))
	a2 := k.next(transcript.TypeAssistant)
	a2.ParentUUID = a1.UUID
	a2.Message = &transcript.Message{ID: a1.Message.ID, Type: "message", Role: transcript.RoleAssistant, Content: []transcript.Block{toolUse("toolu_b", budgetTool)}}
	k.add(a2)
	k.results(result("toolu_b", budgetLines(500)))

	res := budgetPrepare(t, budgetPipeline(t, BudgetConfig{MaxMessageChars: 1000, PreviewBytes: 50}), k.recs)
	dec := budgetDecisions(res.Append)
	require.Len(t, dec, 1, "the two results are summed: the larger is replaced")
	assert.Equal(t, "toolu_a", dec[0].ToolUseID)
}

// Every corpus session, replayed as if the budget had run live: before each response the turn
// is prepared and its records appended, so the budget meets every result while it is new
// (only turns with more than maxResult characters of new results are prepared: no other turn
// can replace anything). Then: every replacement shows its frozen preview, every result over
// its cap is sent as a preview unless it holds media or its tool is exempt, Prepare is
// repeatable, and appending the decisions reproduces the same bytes with no new decision.
//
// Prepared as they are, without the replay, the sessions' answered results are kept by
// definition (see TestBudgetSentResultsKept): the budget acts only on results still new. Only
// ErrNoMessages lets a session through without a request.
func TestBudgetCorpus(t *testing.T) {
	const maxResult = 5000
	cfg := Config{ContextWindow: 200_000, Tokens: EstimateCounter{}, Now: func() time.Time { return budgetNow },
		// Microcompact off: the corpus is old, so time-based clearing would hide the previews.
		Microcompact: MicrocompactConfig{Disable: true},
		Budget:       BudgetConfig{MaxResultChars: maxResult, MaxMessageChars: 20_000, PreviewBytes: 500, Store: &MapStore{}}}
	p, err := New(cfg)
	require.NoError(t, err)
	replaced, records, lines, empty := 0, 0, 0, 0
	for _, f := range corpusFiles(t) {
		tr, err := transcript.ReadFile(f, transcript.ReadOptions{})
		require.NoError(t, err, f)
		var live []transcript.Record
		var added []int // indexes in live of the records the replay appended
		newChars, lastMsgID := 0, ""
		for _, r := range tr.Records {
			if m := r.Message; r.Type == transcript.TypeAssistant && m != nil && m.Model != transcript.SyntheticModel && m.ID != lastMsgID {
				if newChars > maxResult {
					res, err := p.Prepare(t.Context(), Input{Records: live})
					if !errors.Is(err, ErrNoMessages) {
						require.NoError(t, err, f)
						for _, d := range res.Append {
							added = append(added, len(live))
							live = append(live, d)
						}
					}
				}
				newChars, lastMsgID = 0, m.ID
			}
			if r.Type == transcript.TypeUser && r.Message != nil {
				for _, b := range r.Message.Content {
					if tr, ok := b.(*transcript.ToolResult); ok {
						newChars += resultChars(tr)
					}
				}
			}
			live = append(live, r)
		}
		res, err := p.Prepare(t.Context(), Input{Records: live})
		if errors.Is(err, ErrNoMessages) {
			empty++
			continue
		}
		require.NoError(t, err, f)
		for _, d := range res.Append {
			added = append(added, len(live))
			live = append(live, d)
		}
		res, err = p.Prepare(t.Context(), Input{Records: live})
		require.NoError(t, err, f)
		assert.Empty(t, res.Append, f)
		want := requestBytes(t, res.Request)
		// A resume reads the appended records back from the file.
		resumed := slices.Clone(live)
		var decs []transcript.Record
		for _, i := range added {
			decs = append(decs, live[i])
		}
		for j, d := range roundTrip(t, decs) {
			resumed[added[j]] = d
		}
		again, err := p.Prepare(t.Context(), Input{Records: resumed})
		require.NoError(t, err, f)
		assert.True(t, string(want) == string(requestBytes(t, again.Request)), "%s: the request differs after a resume", f)
		assert.Empty(t, again.Append, f)

		chain, err := transcript.BuildChain(live, transcript.ChainOptions{})
		require.NoError(t, err)
		names := map[string]string{}
		for _, r := range chain.Messages() {
			for _, b := range r.Message.Content {
				if tu, ok := b.(*transcript.ToolUse); ok {
					names[tu.ID] = tu.Name
				}
			}
		}
		trs, _ := toolResults(res.Request)
		for id, r := range trs {
			limit := cfg.Budget.toolMax(names[id], p.Window())
			if n := resultChars(r); limit != NeverReplace && n > limit && !slices.ContainsFunc(r.Content, isMedia) {
				assert.Contains(t, resultText(r), "<persisted-output>\nOutput too large", "%s %s: %d characters sent", f, id, n)
			}
		}
		for _, d := range budgetDecisions(live) {
			assert.True(t, d.Replaced, "%s: only replacements are recorded", f)
			if got, ok := trs[d.ToolUseID]; ok {
				replaced++
				assert.Equal(t, d.Preview, resultText(got), "%s %s", f, d.ToolUseID)
			}
		}
		records += len(added)
		lines += len(live)
	}
	t.Logf("replay: %d results replaced; %d budget records in %d records; %d sessions with nothing to send", replaced, records, lines, empty)
	assert.Positive(t, replaced, "the corpus has new results over the cap")
}

// Per-tool caps: Read is exempt by default up to ExemptMaxChars, Bash and Grep have lower
// caps, other tools MaxResultChars; entries are clamped to MaxResultChars; an empty map gives
// no tool a cap; at a smaller window every default cap is scaled.
func TestBudgetToolCaps(t *testing.T) {
	tests := []struct {
		name     string
		cfg      BudgetConfig
		window   int
		tool     string
		size     int
		replaced bool
		exempt   bool // kept as the result of an exempt tool, which the Report says
	}{
		{"Read is exempt up to ExemptMaxChars", BudgetConfig{}, 0, "Read", 100_000, false, true},
		{"Read over ExemptMaxChars", BudgetConfig{}, 0, "Read", 100_001, true, false},
		{"ExemptMaxChars NeverReplace lifts the cap", BudgetConfig{ExemptMaxChars: NeverReplace}, 0, "Read", 150_000, false, true},
		{"a window of 32,000: Read exempt up to 16,000", BudgetConfig{}, 32_000, "Read", 16_000, false, true},
		{"a window of 32,000: Read over 16,000", BudgetConfig{}, 32_000, "Read", 16_001, true, false},
		{"a window of 32,000: Bash at 4,800", BudgetConfig{}, 32_000, "Bash", 4_800, false, false},
		{"a window of 32,000: Bash over 4,800", BudgetConfig{}, 32_000, "Bash", 4_801, true, false},
		{"a window of 32,000: others at 8,000", BudgetConfig{}, 32_000, "WebFetch", 8_000, false, false},
		{"a window of 32,000: others over 8,000", BudgetConfig{}, 32_000, "WebFetch", 8_001, true, false},
		{"a window of 8,000: Grep at its floor of 2,000", BudgetConfig{}, 8_000, "Grep", 2_000, false, false},
		{"a window of 8,000: Grep over 2,000", BudgetConfig{}, 8_000, "Grep", 2_001, true, false},
		{"a set cap is not scaled", BudgetConfig{MaxResultChars: 50_000}, 32_000, "WebFetch", 8_001, false, false},
		{"Bash at its cap", BudgetConfig{}, 0, "Bash", 30_000, false, false},
		{"Bash over its cap", BudgetConfig{}, 0, "Bash", 30_001, true, false},
		{"Grep over its cap", BudgetConfig{}, 0, "Grep", 20_001, true, false},
		{"other tools at MaxResultChars", BudgetConfig{}, 0, "WebFetch", 50_000, false, false},
		{"other tools over MaxResultChars", BudgetConfig{}, 0, "WebFetch", 50_001, true, false},
		{"entries clamped to MaxResultChars", BudgetConfig{MaxResultChars: 5_000}, 0, "Bash", 5_001, true, false},
		{"Read still exempt under a small MaxResultChars", BudgetConfig{MaxResultChars: 5_000}, 0, "Read", 100_000, false, true},
		{"empty map: Read capped like the rest", BudgetConfig{ToolMaxChars: map[string]int{}}, 0, "Read", 50_001, true, false},
		{"custom cap", BudgetConfig{ToolMaxChars: map[string]int{"Exec": 1000}, PreviewBytes: 100}, 0, "Exec", 1001, true, false},
		{"zero entry means MaxResultChars", BudgetConfig{ToolMaxChars: map[string]int{"Exec": 0}}, 0, "Exec", 50_000, false, false},
		{"custom exemption", BudgetConfig{ToolMaxChars: map[string]int{"Exec": NeverReplace}}, 0, "Exec", 100_000, false, true},
		{"custom exemption past ExemptMaxChars", BudgetConfig{ToolMaxChars: map[string]int{"Exec": NeverReplace}}, 0, "Exec", 100_001, true, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			k := newTK()
			k.user("go")
			k.assistant(toolUse("toolu_a", tc.tool))
			k.results(result("toolu_a", budgetLines(tc.size)))
			p := newTestPipeline(t, Config{ContextWindow: tc.window, Budget: tc.cfg, Microcompact: MicrocompactConfig{Disable: true}}, budgetNow)
			res := budgetPrepare(t, p, k.recs)
			trs, _ := toolResults(res.Request)
			assert.Equal(t, tc.replaced, strings.HasPrefix(resultText(trs["toolu_a"]), "<persisted-output>"))
			assert.Len(t, budgetDecisions(res.Append), map[bool]int{false: 0, true: 1}[tc.replaced])
			kept := res.Report.Stage("budget").Actions
			if !tc.exempt {
				assert.NotContains(t, fmt.Sprint(kept), "exempt", "only an exempt result kept is reported as such")
				return
			}
			require.Len(t, kept, 1, "an exempt result kept is reported, with its size")
			assert.Equal(t, ActionExempt, kept[0].Kind)
			assert.Contains(t, kept[0].Detail, fmt.Sprintf("tool %s is exempt from the per-result cap: %d characters kept", tc.tool, tc.size))
		})
	}

	// An exempt result weighs in its message's total: the other results are replaced to make
	// room, and when that is not enough, the exempt result goes too.
	for _, tc := range []struct {
		maxMessage int
		want       []string
	}{{2000, []string{"toolu_x"}}, {1000, []string{"toolu_r", "toolu_x"}}} {
		k := newTK()
		k.user("go")
		k.assistant(toolUse("toolu_r", "Read"), toolUse("toolu_x", budgetTool))
		k.results(result("toolu_r", budgetLines(1500)), result("toolu_x", budgetLines(600)))
		res := budgetPrepare(t, budgetPipeline(t, BudgetConfig{MaxMessageChars: tc.maxMessage, PreviewBytes: 50}), k.recs)
		var got []string
		for _, d := range budgetDecisions(res.Append) {
			got = append(got, d.ToolUseID)
		}
		slices.Sort(got)
		assert.Equal(t, tc.want, got, "message cap %d", tc.maxMessage)
		exempt := slices.ContainsFunc(res.Report.Degradations, func(d Degradation) bool { return d.Kind == DegradedExempt })
		assert.Equal(t, len(tc.want) == 2, exempt, "replacing an exempt result is a degradation the Report names")
	}

	_, err := New(Config{ContextWindow: 1000, Tokens: EstimateCounter{}, Budget: BudgetConfig{ToolMaxChars: map[string]int{"Bash": -2}}})
	assert.ErrorContains(t, err, `Budget.ToolMaxChars["Bash"] -2 is below -1`)
	assert.Equal(t, map[string]int{"Read": NeverReplace, "Bash": 30_000, "Grep": 20_000}, DefaultToolMaxChars())
	for tool, v := range DefaultToolMaxChars() {
		got, ok := defaultToolMaxChars(tool)
		assert.True(t, ok)
		assert.Equal(t, v, got, tool)
	}
}

// A result the budget replaces is never given to the token counter: neither its stage action
// nor the pressure figure tokenizes it (the action estimates it by its bytes, the figure
// counts the view); what is sent is counted exactly.
func TestBudgetNeverTokenizesReplaced(t *testing.T) {
	const n, size = 20, 64 << 10
	var seen atomic.Int64 // texts holding a replaced result's tail
	counter := TokenCounterFunc(func(s string) int {
		if strings.Contains(s, "TAIL-OF-RESULT") {
			seen.Add(1)
		}
		return EstimateTokens(s)
	})
	k := newTK()
	k.user("go")
	var uses []transcript.Block
	var trs []*transcript.ToolResult
	for i := range n {
		id := fmt.Sprintf("toolu_%02d", i)
		uses = append(uses, toolUse(id, "Bash"))
		trs = append(trs, result(id, budgetLines(size)+fmt.Sprintf("TAIL-OF-RESULT %d", i)))
	}
	k.assistant(uses...)
	k.results(trs...)
	// Previews of the head only: a shell preview shows the tail, marker included.
	noTail := BudgetConfig{Store: &MapStore{}, TailTools: []string{}}
	p := newTestPipeline(t, Config{Tokens: counter, Budget: noTail}, budgetNow)
	res, err := p.Prepare(t.Context(), Input{Records: k.recs})
	require.NoError(t, err)
	assert.Zero(t, seen.Load(), "a replaced result was tokenized")
	sr := res.Report.Stage("budget")
	require.Len(t, sr.Actions, n)
	est := NewCounter(EstimateCounter{})
	for i, a := range sr.Actions {
		assert.Equal(t, p.counter.Block(replacedResult(trs[i], budgetDecisions(res.Append)[i].Preview))-est.Block(trs[i]), a.Tokens)
	}
	// The figures are those of a pipeline counting by bytes/3 throughout, which the counter
	// above matches on every text it is given.
	ref, err := newTestPipeline(t, Config{Tokens: EstimateCounter{}, Budget: noTail}, budgetNow).
		Prepare(t.Context(), Input{Records: k.recs})
	require.NoError(t, err)
	assert.Equal(t, ref.Report.Pressure, res.Report.Pressure)
	assert.Equal(t, ref.Report.AnchoredTokens, res.Report.AnchoredTokens)
	assert.Equal(t, ref.Report.InputTokens, res.Report.InputTokens)
}
