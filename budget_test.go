package agentctx

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var budgetNow = time.Date(2026, 1, 2, 4, 0, 0, 0, time.UTC)

func budgetPipeline(t testing.TB, b BudgetConfig) *Pipeline {
	t.Helper()
	// Microcompact off: these tests look at tool-result content, which idle-gap clearing hides.
	return newTestPipeline(t, Config{Budget: b, Microcompact: MicrocompactConfig{Disable: true}}, budgetNow)
}

func budgetPrepare(t testing.TB, p *Pipeline, recs []Record) Result {
	t.Helper()
	res, err := p.Prepare(context.Background(), Input{Records: recs, Tools: budgetTools})
	require.NoError(t, err)
	return res
}

var budgetTools = []Tool{{Name: "Read", Definition: json.RawMessage(`{"name":"Read","input_schema":{"type":"object"}}`)}}

// budgetLines returns n characters of numbered lines, so previews have newlines to cut at.
func budgetLines(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "line %05d of the tool output\n", i)
	}
	return b.String()[:n]
}

// budgetParallel builds a prompt, one response with parallel Read calls, and their results in
// separate user records (as Claude Code writes them).
func budgetParallel(k *tk, sizes map[string]int, ids ...string) {
	k.user("read the files")
	var uses []Block
	for _, id := range ids {
		uses = append(uses, toolUse(id, "Read"))
	}
	k.assistant(uses...)
	var trs []*ToolResult
	for _, id := range ids {
		trs = append(trs, result(id, budgetLines(sizes[id])))
	}
	k.results(trs...)
}

func budgetDecisions(recs []Record) []BudgetResult {
	var out []BudgetResult
	for _, r := range recs {
		if r.Subtype == SubtypeToolResultBudget && r.Budget != nil {
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
			k.assistant(toolUse("toolu_a", "Read"))
			tr := result("toolu_a", tc.content)
			tr.IsError = tc.isError
			k.results(tr)
			res := budgetPrepare(t, p, k.recs)

			trs, _ := toolResults(res.Request)
			got := trs["toolu_a"]
			require.NotNil(t, got)
			assert.Equal(t, tc.isError, got.IsError)
			dec := budgetDecisions(res.Append)
			require.Len(t, dec, 1)
			assert.Equal(t, "toolu_a", dec[0].ToolUseID)
			assert.Equal(t, tc.replaced, dec[0].Replaced)
			if !tc.replaced {
				if tc.content != "" { // normalize fills an empty result with a placeholder
					assert.Equal(t, tc.content, resultText(got))
				}
				assert.Equal(t, 0, store.Len())
				return
			}
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
			dec := budgetDecisions(res.Append)
			require.Len(t, dec, 3, "every new result is frozen")
			assert.Equal(t, []string{"toolu_c", "toolu_a", "toolu_b"}, []string{dec[0].ToolUseID, dec[1].ToolUseID, dec[2].ToolUseID})
			if kept := 3 - len(tc.replaced); kept > 0 {
				var kinds []ActionKind
				for _, a := range res.Report.Stage("budget").Actions {
					kinds = append(kinds, a.Kind)
					if a.Kind == ActionKept {
						assert.Equal(t, fmt.Sprintf("%d new results frozen as kept", kept), a.Detail)
					}
				}
				assert.Contains(t, kinds, ActionKept)
			}
		})
	}
}

// Results of different API user messages are not summed.
func TestBudgetAggregatePerMessage(t *testing.T) {
	p := budgetPipeline(t, BudgetConfig{MaxMessageChars: 1000, PreviewBytes: 50})
	k := newTK()
	k.user("go")
	k.assistant(toolUse("toolu_a", "Read"))
	k.results(result("toolu_a", budgetLines(900)))
	k.assistant(toolUse("toolu_b", "Read"))
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
	img := &Image{Source: MediaSource{Type: "base64", MediaType: "image/png", Data: strings.Repeat("A", 200000)}}
	sr := &UnknownBlock{Type: KindSearchResult, JSON: json.RawMessage(`{"type":"search_result","source":"s","title":"t","content":[{"type":"text","text":"` + strings.Repeat("x", 1500) + `"}]}`)}
	k := newTK()
	k.user("go")
	k.assistant(toolUse("toolu_img", "Read"), toolUse("toolu_sr", "Search"))
	k.results(&ToolResult{ToolUseID: "toolu_img", Content: []Block{text(strings.Repeat("caption ", 200)), img}},
		&ToolResult{ToolUseID: "toolu_sr", Content: []Block{text("found"), sr}})
	res := budgetPrepare(t, p, k.recs)
	dec := map[string]BudgetResult{}
	for _, d := range budgetDecisions(res.Append) {
		dec[d.ToolUseID] = d
	}
	require.Len(t, dec, 2)
	assert.False(t, dec["toolu_img"].Replaced, "a result holding an image is never replaced, whatever its size")
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

// A result frozen as kept is never replaced, even when a later config would replace it now.
func TestBudgetFrozenKept(t *testing.T) {
	k := newTK()
	budgetParallel(k, map[string]int{"toolu_a": 800}, "toolu_a")
	res1 := budgetPrepare(t, budgetPipeline(t, BudgetConfig{MaxResultChars: 1000}), k.recs)
	dec := budgetDecisions(res1.Append)
	require.Len(t, dec, 1)
	require.False(t, dec[0].Replaced)
	for _, r := range res1.Append {
		k.decision(r)
	}
	k.assistant(toolUse("toolu_b", "Read"))
	k.results(result("toolu_b", budgetLines(800)))

	tight := budgetPipeline(t, BudgetConfig{MaxResultChars: 500, PreviewBytes: 50})
	res2 := budgetPrepare(t, tight, k.recs)
	trs, _ := toolResults(res2.Request)
	assert.Equal(t, budgetLines(800), resultText(trs["toolu_a"]), "frozen kept result stays")
	assert.True(t, strings.HasPrefix(resultText(trs["toolu_b"]), "<persisted-output>"), "new result is replaced")
	dec2 := budgetDecisions(res2.Append)
	require.Len(t, dec2, 1, "only the new result is decided")
	assert.Equal(t, "toolu_b", dec2[0].ToolUseID)
	assert.Equal(t, "transcript:"+k.recs[len(k.recs)-1].UUID, dec2[0].Ref, "nil store: ref names the record")
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

	recs := append(append([]Record(nil), k.recs...), res1.Append...)
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
		tr, err := ReadTranscript(strings.NewReader(kk.jsonl(t)), "session.jsonl", ReadOptions{})
		require.NoError(t, err)
		require.True(t, tr.Clean())
		res2 := budgetPrepare(t, p1, tr.Records)
		assert.Equal(t, string(want), string(requestBytes(t, res2.Request)))
		assert.Empty(t, res2.Append)
	})

	t.Run("prefix of later turns", func(t *testing.T) {
		k2 := &tk{recs: append([]Record(nil), recs...), t0: k.t0, n: k.n, last: k.last, msgN: k.msgN}
		k2.assistant(toolUse("toolu_c", "Read"))
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
	mk := func(key, preview string, replaced bool) Record {
		r := (&turn{now: budgetNow}).newDecision(SubtypeToolResultBudget, key, "test")
		r.Budget = &BudgetDecision{Results: []BudgetResult{{ToolUseID: "toolu_a", Replaced: replaced, Preview: preview}}}
		return r
	}
	tests := []struct {
		name  string
		decs  []Record
		shown string
	}{
		{"replaced first", []Record{mk("1", "first preview", true), mk("2", "second preview", true)}, "first preview"},
		{"kept first", []Record{mk("1", "", false), mk("2", "second preview", true)}, budgetLines(3000)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			recs := append(append([]Record(nil), k.recs...), tc.decs...)
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
	chain, err := BuildChain(in.Records, ChainOptions{})
	require.NoError(t, err)
	tn := p.newTurn(context.Background(), &in, chain)
	tn.report.stage("budget")
	require.NoError(t, p.budget(tn))
	assert.Equal(t, before, k.jsonl(t))

	var owned, shared int
	for _, it := range tn.items {
		for _, b := range it.blocks {
			tr, ok := b.(*ToolResult)
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
	assert.Equal(t, TypeSystem, tn.appended[0].Type)
	assert.Equal(t, SubtypeToolResultBudget, tn.appended[0].Subtype)
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
	dec := budgetDecisions(res.Append)
	require.Len(t, dec, 1)
	assert.False(t, dec[0].Replaced)
}

// Results written between the records of one streamed response still belong to the one user
// message that follows the response, so their sizes are summed.
func TestBudgetAggregateInterleaved(t *testing.T) {
	k := newTK()
	k.user("go")
	a1 := k.assistant(toolUse("toolu_a", "Read"))
	k.results(result("toolu_a", budgetLines(600)))
	a2 := k.next(TypeAssistant)
	a2.ParentUUID = a1.UUID
	a2.Message = &Message{ID: a1.Message.ID, Type: "message", Role: RoleAssistant, Content: []Block{toolUse("toolu_b", "Read")}}
	k.add(a2)
	k.results(result("toolu_b", budgetLines(500)))

	res := budgetPrepare(t, budgetPipeline(t, BudgetConfig{MaxMessageChars: 1000, PreviewBytes: 50}), k.recs)
	dec := budgetDecisions(res.Append)
	require.Len(t, dec, 2)
	got := map[string]bool{}
	for _, d := range dec {
		got[d.ToolUseID] = d.Replaced
	}
	assert.Equal(t, map[string]bool{"toolu_a": true, "toolu_b": false}, got)
}

// TestBudgetCorpus runs the budget with small caps on every corpus session and checks the
// caps hold in the request: no tool result over the per-result cap, and no user message whose
// tool results together exceed the per-message cap, except for what the budget may not
// replace (results holding media). Every replaced result shows its frozen preview; Prepare is
// repeatable, and appending the decisions reproduces the same bytes with no new decision.
// Only ErrNoMessages lets a session through without a request.
func TestBudgetCorpus(t *testing.T) {
	const maxResult, maxMessage = 5000, 8000
	replaced, aggregate, empty := 0, 0, 0
	for _, f := range corpusFiles(t) {
		tr, err := ReadFile(f, ReadOptions{})
		require.NoError(t, err, f)
		// Microcompact off: the corpus is old, so time-based clearing would hide the previews.
		p, err := New(Config{ContextWindow: 200_000, Tokens: EstimateCounter{}, Now: func() time.Time { return budgetNow },
			Microcompact: MicrocompactConfig{Disable: true},
			Budget:       BudgetConfig{MaxResultChars: maxResult, MaxMessageChars: maxMessage, PreviewBytes: 500, Store: &MapStore{}}})
		require.NoError(t, err)
		res, err := p.Prepare(t.Context(), Input{Records: tr.Records})
		if errors.Is(err, ErrNoMessages) {
			empty++
			continue
		}
		require.NoError(t, err, f)
		want := requestBytes(t, res.Request)
		again, err := p.Prepare(t.Context(), Input{Records: tr.Records})
		require.NoError(t, err, f)
		assert.Equal(t, string(want), string(requestBytes(t, again.Request)), f)
		assert.Equal(t, res.Append, again.Append, f)

		for i, m := range res.Request.Messages {
			total := 0
			for _, b := range m.Content {
				r, ok := b.(*ToolResult)
				if !ok || slices.ContainsFunc(r.Content, isMedia) {
					continue // media: never replaced, and not counted in characters
				}
				n := resultChars(r)
				total += n
				assert.LessOrEqual(t, n, maxResult, "%s: messages[%d] tool_result %s is over the per-result cap", f, i, r.ToolUseID)
			}
			assert.LessOrEqual(t, total, maxMessage, "%s: messages[%d]: tool results over the per-message cap", f, i)
		}
		trs, _ := toolResults(res.Request)
		for _, d := range budgetDecisions(res.Append) {
			if d.Replaced {
				replaced++
				if d.OriginalChars <= maxResult {
					aggregate++
				}
				assert.Equal(t, d.Preview, resultText(trs[d.ToolUseID]), "%s %s", f, d.ToolUseID)
			}
		}

		recs := append(append([]Record(nil), tr.Records...), res.Append...)
		res2, err := p.Prepare(t.Context(), Input{Records: recs})
		require.NoError(t, err, f)
		assert.Equal(t, string(want), string(requestBytes(t, res2.Request)), f)
		assert.Empty(t, res2.Append, f)
	}
	t.Logf("%d results replaced, %d of them under the per-result cap (the per-message cap); %d sessions with nothing to send", replaced, aggregate, empty)
	assert.Positive(t, replaced, "the corpus has results over the cap")
	assert.Positive(t, aggregate, "the corpus has messages over the per-message cap")
}
