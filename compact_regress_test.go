package agentctx

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentctx/agentctx/summarize"

	"github.com/agentctx/agentctx/provider"

	"github.com/agentctx/agentctx/transcript"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Regression tests for the findings of the compaction review.

// plainTK is a session that overflows a 12,000-token window with nothing to rehydrate.
func plainTK() *tk {
	k := newTK()
	k.user("build the parser " + strings.Repeat("with care ", 300))
	k.assistant(text("ok " + strings.Repeat("thinking about it ", 300)))
	k.user("and more " + strings.Repeat("detail ", 300))
	a := k.assistant(text("done " + strings.Repeat("reading the files ", 200)))
	a.Message.Usage = &transcript.Usage{InputTokens: 9_000, OutputTokens: 1_500}
	k.user("now the error recovery, please")
	return k
}

func gistSummarizer() summarize.Summarizer {
	return summarize.Func(func(context.Context, summarize.Request) (summarize.Summary, error) {
		return summarize.Summary{Text: "<summary>gist</summary>"}, nil
	})
}

var smallTail = TailConfig{MinTokens: 100, MinTextMessages: 1, MaxTokens: 1000}

// With Input.Leaf set, a compaction that writes nothing after its summary keeps its tail, and
// Result.Leaf is the tail's end in both modes.
func TestCompactExplicitLeafKeepsTail(t *testing.T) {
	for _, explicit := range []bool{false, true} {
		k := plainTK()
		p := newTestPipeline(t, Config{ContextWindow: 12_000, Compact: CompactConfig{Summarizer: gistSummarizer(), Tail: smallTail}}, k.at(time.Second))
		in := Input{Records: k.recs}
		if explicit {
			in.Leaf = k.recs[len(k.recs)-1].UUID
		}
		res, err := p.Prepare(t.Context(), in)
		require.NoError(t, err)
		require.Equal(t, CompactCompacted, res.Report.Compaction.Outcome)
		last := res.Request.Messages[len(res.Request.Messages)-1]
		assert.Contains(t, transcript.TextOf(last.Content), "now the error recovery", "explicit=%v: the latest prompt is kept", explicit)
		assert.Equal(t, k.recs[len(k.recs)-1].UUID, res.Leaf, "explicit=%v: the conversation goes on from the tail", explicit)

		recs := append(append([]transcript.Record(nil), k.recs...), roundTrip(t, res.Append)...)
		again, err := p.Prepare(t.Context(), Input{Records: recs, Leaf: in.Leaf})
		require.NoError(t, err)
		assert.Equal(t, string(requestBytes(t, res.Request)), string(requestBytes(t, again.Request)))
		assert.Empty(t, again.Append)
	}
}

// Several tool calls in one record (one record per message, as most runtimes write them) are
// rehydrated in a fixed order.
func TestRehydrateOrderDeterministic(t *testing.T) {
	k := newTK()
	k.user("build the parser " + strings.Repeat("with care ", 300))
	r := k.next(transcript.TypeAssistant)
	r.Message = &transcript.Message{ID: "msg_multi", Type: "message", Role: transcript.RoleAssistant, Model: "claude-sonnet-4-5", Usage: &transcript.Usage{InputTokens: 10, OutputTokens: 5}}
	u := k.next(transcript.TypeUser)
	u.Message = &transcript.Message{Role: transcript.RoleUser}
	for i, f := range []string{"a", "b", "c", "d"} {
		id := fmt.Sprintf("r%d", i)
		r.Message.Content = append(r.Message.Content, &transcript.ToolUse{ID: id, Name: "Read", Input: []byte(`{"file_path":"/repo/` + f + `.go"}`)})
		u.Message.Content = append(u.Message.Content, result(id, f))
	}
	k.add(r)
	k.add(u)
	a := k.assistant(text("done " + strings.Repeat("reading the files ", 300)))
	a.Message.Usage = &transcript.Usage{InputTokens: 9_000, OutputTokens: 1_500}
	k.user("now the error recovery, please")
	files := FileSourceFunc(func(_ context.Context, path string) ([]byte, error) {
		return []byte("package x // " + path + "\n"), nil
	})
	p := newTestPipeline(t, Config{ContextWindow: 12_000, Compact: CompactConfig{Summarizer: summarize.Extractive{},
		Rehydrate: RehydrateConfig{Files: files, MaxFiles: 2}, Tail: smallTail}}, k.at(time.Second))
	var first []string
	for i := range 30 {
		res, err := p.Prepare(t.Context(), Input{Records: k.recs})
		require.NoError(t, err)
		if i == 0 {
			first = res.Report.Compaction.Rehydrated
			assert.Equal(t, []string{"file /repo/d.go", "file /repo/c.go"}, first, "the last calls first")
			continue
		}
		require.Equal(t, first, res.Report.Compaction.Rehydrated)
	}
}

// A file whose read the runtime refused is not re-read by rehydration.
func TestRehydrateSkipsRefusedReads(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, ".env"), []byte("AWS_SECRET_ACCESS_KEY=hunter2\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(root, "main.go"), []byte("package main\n"), 0o600))
	k := newTK()
	u := k.user("build the parser " + strings.Repeat("with care ", 300))
	u.Cwd = root
	k.assistant(&transcript.ToolUse{ID: "r1", Name: "Read", Input: []byte(`{"file_path":"` + root + `/.env"}`)},
		&transcript.ToolUse{ID: "r2", Name: "Read", Input: []byte(`{"file_path":"` + root + `/main.go"}`)})
	k.results(&transcript.ToolResult{ToolUseID: "r1", IsError: true, StringContent: true, Content: []transcript.Block{text("Permission to read .env was denied.")}},
		result("r2", "package main"))
	a := k.assistant(text("ok, I will not read it " + strings.Repeat("more words ", 300)))
	a.Message.Usage = &transcript.Usage{InputTokens: 9_000, OutputTokens: 1_500}
	k.user("continue")
	p := newTestPipeline(t, Config{ContextWindow: 12_000, Compact: CompactConfig{Summarizer: summarize.Extractive{}, Tail: smallTail}}, k.at(time.Second))
	res, err := p.Prepare(t.Context(), Input{Records: k.recs})
	require.NoError(t, err)
	assert.Equal(t, []string{"file " + root + "/main.go"}, res.Report.Compaction.Rehydrated, "read from the session's working directory")
	assert.NotContains(t, string(requestBytes(t, res.Request)), "hunter2")
}

// A pin record naming a record without a message pins nothing and breaks nothing.
func TestPinNamingSystemRecord(t *testing.T) {
	k := newTK()
	sys := k.next(transcript.TypeSystem)
	sys.Subtype = "local_command"
	k.add(sys)
	k.user("hello")
	k.assistant(text("hi"))
	k.decision(transcript.Record{Type: transcript.TypeSystem, Subtype: transcript.SubtypePin, UUID: "pin-1", Pin: &transcript.PinDecision{UUIDs: []string{sys.UUID, "missing"}}})
	b := k.next(transcript.TypeSystem)
	b.Subtype, b.ParentUUID = transcript.SubtypeCompactBoundary, ""
	k.add(b)
	s := k.user("<summary>x</summary>")
	s.IsCompactSummary = true
	k.user("go on")
	p := newTestPipeline(t, Config{}, k.at(time.Second))
	res, err := p.Prepare(t.Context(), Input{Records: k.recs})
	require.NoError(t, err)
	assert.NotContains(t, string(requestBytes(t, res.Request)), "pinned")
}

// A second compaction whose records were written hanging off the first one's anchor (Claude
// Code's convention) keeps what it says it keeps.
func TestSecondCompactionAfterAnchorChildren(t *testing.T) {
	k := newTK()
	for i := range 4 {
		k.user(strings.Repeat("big prompt ", 400) + string(rune('A'+i)))
		a := k.assistant(text("answer " + string(rune('A'+i)) + " " + strings.Repeat("x ", 50)))
		a.Message.Usage = &transcript.Usage{InputTokens: 2_000 * (i + 1), OutputTokens: 100}
	}
	k.user("short prompt P1")
	a := k.assistant(text("short answer Q1"))
	a.Message.Usage = &transcript.Usage{InputTokens: 11_000, OutputTokens: 100}
	k.user("short prompt P2")
	p := newTestPipeline(t, Config{ContextWindow: 12_000, Compact: CompactConfig{Summarizer: gistSummarizer(),
		Tail: TailConfig{MinTokens: 100, MinTextMessages: 3, MaxTokens: 1500}}}, k.at(time.Second))
	res, err := p.Prepare(t.Context(), Input{Records: k.recs})
	require.NoError(t, err)
	require.Equal(t, CompactCompacted, res.Report.Compaction.Outcome)
	k.recs = append(k.recs, res.Append...)
	k.last = res.Report.Compaction.SummaryUUID // hang the next records off the anchor
	a = k.assistant(text("answer to P2"))
	a.Message.Usage = &transcript.Usage{InputTokens: 3_000, OutputTokens: 100}
	k.user("short prompt P3")
	res2, err := p.Compact(t.Context(), Input{Records: k.recs}, CompactOptions{})
	require.NoError(t, err)
	c := res2.Report.Compaction
	require.Equal(t, CompactCompacted, c.Outcome)
	body := string(requestBytes(t, res2.Request))
	assert.Equal(t, 1, strings.Count(body, "<summary>"), "only the new summary: the old one is summarized, not kept")
	assert.Contains(t, body, "short prompt P3")
	assert.Positive(t, c.Kept)
	recs := append(append([]transcript.Record(nil), k.recs...), roundTrip(t, res2.Append)...)
	again, err := p.Prepare(t.Context(), Input{Records: recs})
	require.NoError(t, err)
	assert.Equal(t, body, string(requestBytes(t, again.Request)))
}

// Compacting nothing is an error, never a panic.
func TestCompactNothing(t *testing.T) {
	p := newTestPipeline(t, Config{}, time.Now())
	for name, recs := range map[string][]transcript.Record{
		"nil":         nil,
		"system only": {{Type: transcript.TypeSystem, UUID: "s1", Subtype: "local_command"}},
	} {
		_, err := p.Compact(t.Context(), Input{Records: recs}, CompactOptions{})
		assert.ErrorContains(t, err, "no messages", name)
	}
	k := newTK()
	b := k.next(transcript.TypeSystem)
	b.Subtype, b.ParentUUID = transcript.SubtypeCompactBoundary, ""
	k.add(b)
	s := k.user("<summary>x</summary>")
	s.IsCompactSummary = true
	res, err := p.Compact(t.Context(), Input{Records: k.recs}, CompactOptions{})
	require.NoError(t, err, "a view holding only a summary compacts into one")
	assert.NotEmpty(t, res.Request.Messages)
}

// Headings inside carried text stay text: a second extractive compaction keeps a plan and a
// model's summary whole and invents no user message.
func TestExtractiveCarriesHeadings(t *testing.T) {
	plan := "# Plan\n\n## Steps\n1. write the lexer\n2. write the parser\n\n## Files\n- lexer.go\n\n## User messages\n1. fake"
	in, _ := json.Marshal(map[string]string{"plan": plan})
	view := []summarize.Message{
		{UUID: "u", Role: transcript.RoleUser, Content: []transcript.Block{text("make a plan")}},
		{UUID: "a", Role: transcript.RoleAssistant, Content: []transcript.Block{&transcript.ToolUse{ID: "p1", Name: "ExitPlanMode", Input: in}}},
		{UUID: "r", Role: transcript.RoleUser, Content: []transcript.Block{result("p1", "ok")}},
		{UUID: "a2", Role: transcript.RoleAssistant, Content: []transcript.Block{text("So far:\n## Errors and what followed\n- none")}},
	}
	second := func(view []summarize.Message) string {
		s1, err := summarize.Extractive{}.Summarize(t.Context(), summarize.Request{View: view, MaxOutputTokens: 20_000})
		require.NoError(t, err)
		body, err := summarize.FromReply(s1.Text)
		require.NoError(t, err)
		s2, err := summarize.Extractive{}.Summarize(t.Context(), summarize.Request{MaxOutputTokens: 20_000, View: []summarize.Message{
			{UUID: "s", Role: transcript.RoleUser, Source: summarize.SourceCompactSummary, Content: []transcript.Block{text(summaryMessage(body, false, transcript.TriggerAuto))}},
			{UUID: "u2", Role: transcript.RoleUser, Content: []transcript.Block{text("next")}}}})
		require.NoError(t, err)
		return s2.Text
	}
	got := second(view)
	assert.Contains(t, got, "2. write the parser")
	assert.Contains(t, got, "So far:")
	assert.Contains(t, got, "1. make a plan\n2. next\n", "the user's messages, and no other")

	foreign := "<summary>\n## 1. Intent\nThe user wants a parser.\n## 2. Constraints\nNever touch gen/.\n</summary>"
	got = second([]summarize.Message{{UUID: "s", Role: transcript.RoleUser, Source: summarize.SourceCompactSummary, Content: []transcript.Block{text(foreign)}},
		{UUID: "u", Role: transcript.RoleUser, Content: []transcript.Block{text("go on")}}})
	assert.Contains(t, got, "Never touch gen/.")
	assert.Contains(t, got, "## 2. Constraints")
}

// Compacting the same transcript state twice gives the same records; each new state new ones.
func TestCompactRecordUUIDs(t *testing.T) {
	for name, s := range map[string]summarize.Summarizer{"gist": gistSummarizer(), "extractive": summarize.Extractive{}} {
		k := plainTK()
		p := newTestPipeline(t, Config{ContextWindow: 12_000, Compact: CompactConfig{Summarizer: s, Tail: smallTail}}, k.at(time.Second))
		recs := k.recs
		seen := map[string]bool{}
		for range 3 {
			res, err := p.Compact(t.Context(), Input{Records: recs}, CompactOptions{})
			require.NoError(t, err, name)
			for _, r := range res.Append {
				assert.False(t, seen[r.UUID], "%s: uuid %s appended twice", name, r.UUID)
				seen[r.UUID] = true
			}
			recs = append(append([]transcript.Record(nil), recs...), res.Append...)
		}
	}
	k := plainTK()
	failing := summarize.Func(func(context.Context, summarize.Request) (summarize.Summary, error) {
		return summarize.Summary{}, errors.New("down")
	})
	p := newTestPipeline(t, Config{ContextWindow: 14_000, Compact: CompactConfig{Summarizer: failing, DisableFallback: true}}, k.at(time.Second))
	recs := k.recs
	seen := map[string]bool{}
	for _, manual := range []bool{false, true, false} {
		var res Result
		if manual {
			res, _ = p.Compact(t.Context(), Input{Records: recs}, CompactOptions{})
		} else {
			res, _ = p.Prepare(t.Context(), Input{Records: recs})
		}
		for _, r := range res.Append {
			assert.False(t, seen[r.UUID], "failure uuid %s twice", r.UUID)
			seen[r.UUID] = true
		}
		recs = append(append([]transcript.Record(nil), recs...), res.Append...)
	}
	assert.Len(t, seen, 2, "one auto failure, one manual failure; the same turn is not attempted twice")
}

// A thinking budget that would take most of the summary's output is dropped from the
// summary request; a small one stays, so the prompt cache is shared.
func TestSummaryRequestThinking(t *testing.T) {
	for _, tt := range []struct {
		budget int
		want   bool
	}{{16_000, false}, {2_000, true}} {
		k := plainTK()
		var got provider.Request
		capture := summarize.Func(func(_ context.Context, req summarize.Request) (summarize.Summary, error) {
			got = req.Request
			return summarize.Summary{Text: "<summary>gist</summary>"}, nil
		})
		p := newTestPipeline(t, Config{ContextWindow: 100_000, MaxOutputTokens: 32_000, Thinking: &provider.Thinking{Type: "enabled", BudgetTokens: tt.budget},
			Compact: CompactConfig{Summarizer: capture}}, k.at(time.Second))
		_, err := p.Compact(t.Context(), Input{Records: k.recs}, CompactOptions{})
		require.NoError(t, err)
		if tt.want {
			require.NotNil(t, got.Thinking)
			assert.Equal(t, tt.budget, got.Thinking.BudgetTokens)
		} else {
			assert.Nil(t, got.Thinking, "budget %d of max_tokens %d", tt.budget, got.MaxTokens)
		}
	}
}

// A runtime that records no usage still gets auto-compact after the first compaction.
func TestCompactWithoutUsage(t *testing.T) {
	k := newTK()
	p := newTestPipeline(t, Config{ContextWindow: 12_000, Compact: CompactConfig{Summarizer: summarize.Extractive{}}}, k.at(time.Hour))
	compactions := 0
	for turn := range 12 {
		k.user(fmt.Sprintf("turn %d ", turn) + strings.Repeat("long prompt words ", 200))
		res, err := p.Prepare(t.Context(), Input{Records: k.recs})
		require.NoError(t, err, "turn %d\n%s", turn, res.Report.String())
		if c := res.Report.Compaction; c != nil && c.Outcome == CompactCompacted {
			compactions++
		}
		k.recs = append(k.recs, res.Append...)
		k.last = res.Leaf
		a := k.assistant(text(fmt.Sprintf("answer %d ", turn) + strings.Repeat("reply words ", 100)))
		a.Message.Usage = nil
	}
	assert.Greater(t, compactions, 1)
}

// Preparing a turn again after its failed attempt was appended calls no summarizer and
// appends nothing new.
func TestCompactFailureIdempotent(t *testing.T) {
	k := plainTK()
	calls := 0
	failing := summarize.Func(func(context.Context, summarize.Request) (summarize.Summary, error) {
		calls++
		return summarize.Summary{}, errors.New("down")
	})
	p := newTestPipeline(t, Config{ContextWindow: 16_000, Compact: CompactConfig{Summarizer: failing, DisableFallback: true}}, k.at(time.Second))
	res, err := p.Prepare(t.Context(), Input{Records: k.recs})
	require.NoError(t, err, "over the threshold, under the blocking limit: sent as it is\n%s", res.Report.String())
	require.Len(t, res.Append, 1)
	recs := append(append([]transcript.Record(nil), k.recs...), roundTrip(t, res.Append)...)
	for range 3 {
		again, err := p.Prepare(t.Context(), Input{Records: recs})
		require.NoError(t, err)
		assert.Empty(t, again.Append)
		assert.Equal(t, string(requestBytes(t, res.Request)), string(requestBytes(t, again.Request)))
	}
	assert.Equal(t, 1, calls)
}

// The memoized date holds across midnight until a compaction, which rewrites the prefix
// anyway: the post-compact request carries the new date, and the memo keeps it afterwards.
func TestCompactRefreshesMemoizedDate(t *testing.T) {
	for _, perInput := range []bool{false, true} {
		t.Run(fmt.Sprintf("Input.Context=%v", perInput), func(t *testing.T) { testCompactRefreshesMemoizedDate(t, perInput) })
	}
}

func testCompactRefreshesMemoizedDate(t *testing.T, perInput bool) {
	k := plainTK()
	day := time.Date(2026, 12, 1, 23, 0, 0, 0, time.UTC)
	now := day
	memo := Memoize(ContextProviderFunc(func(context.Context) ([]ContextSection, error) {
		return []ContextSection{{Name: "claudeMd", Text: "house rules"}}, nil
	}))
	cfg := Config{ContextWindow: 200_000, Compact: CompactConfig{Summarizer: gistSummarizer(), Tail: smallTail},
		Context: ContextConfig{User: memo, CurrentDate: true}, Now: func() time.Time { return now }}
	in := func(recs []transcript.Record) Input { return Input{Records: recs} }
	if perInput { // the conversation's own context on a shared pipeline
		cc := cfg.Context
		cfg.Context = ContextConfig{}
		in = func(recs []transcript.Record) Input { return Input{Records: recs, Context: &cc} }
	}
	p, err := New(cfg)
	require.NoError(t, err)
	body := func(res Result) string { return string(requestBytes(t, res.Request)) }

	res, err := p.Prepare(t.Context(), in(k.recs))
	require.NoError(t, err)
	assert.Contains(t, body(res), "Today's date is 2026-12-01.")
	now = day.Add(2 * time.Hour) // past midnight
	res, err = p.Prepare(t.Context(), in(k.recs))
	require.NoError(t, err)
	assert.Contains(t, body(res), "Today's date is 2026-12-01.", "midnight does not rewrite the prefix")

	res, err = p.Compact(t.Context(), in(k.recs), CompactOptions{})
	require.NoError(t, err)
	require.Equal(t, CompactCompacted, res.Report.Compaction.Outcome)
	assert.Contains(t, body(res), "Today's date is 2026-12-02.", "the compacted request is dated afresh")
	recs := append(append([]transcript.Record(nil), k.recs...), res.Append...)
	now = now.Add(30 * time.Hour)
	again, err := p.Prepare(t.Context(), in(recs))
	require.NoError(t, err)
	assert.Equal(t, body(res), body(again), "and the memo keeps that date")
}

// TestCompactSummaryWithoutThinking compacts the first half of the compacted golden session,
// whose view ends in a tool call made with thinking: the summary goes without thinking (its
// budget would take more than half the summary's output), so the thinking of the view's final
// turn must go too (rule 4.5), or the summary request is invalid and compaction fails.
func TestCompactSummaryWithoutThinking(t *testing.T) {
	dir := filepath.Join("testdata", "cases", "session-compacted")
	var spec caseSpec
	data, err := os.ReadFile(filepath.Join(dir, "case.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &spec))
	tr, err := transcript.ReadFile(filepath.Join(dir, spec.Transcript), transcript.ReadOptions{Strict: true})
	require.NoError(t, err)
	cfg := spec.config()
	var sent []provider.Request
	inner := cfg.Compact.Summarizer
	cfg.Compact.Summarizer = summarize.Func(func(ctx context.Context, req summarize.Request) (summarize.Summary, error) {
		sent = append(sent, req.Request)
		return inner.Summarize(ctx, req)
	})
	p, err := New(cfg)
	require.NoError(t, err)
	res, err := p.Prepare(t.Context(), spec.input(tr.Records[:len(tr.Records)/2]))
	require.NoError(t, err)
	require.NotNil(t, res.Report.Compaction)
	assert.Equal(t, CompactCompacted, res.Report.Compaction.Outcome)
	require.NotEmpty(t, sent)
	for i, req := range sent {
		assert.Nil(t, req.Thinking, "summary request %d", i)
		assert.Empty(t, provider.Validate(req, provider.ValidateOptions{}), "summary request %d", i)
	}
}
