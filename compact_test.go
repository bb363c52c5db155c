package agentctx

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentctx/agentctx/summarize"

	"github.com/agentctx/agentctx/transcript"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSafeCuts(t *testing.T) {
	items := []item{
		normUser("u1", text("hi")),
		normAsst("a1", "m1", text("look")),
		normAsst("a2", "m1", toolUse("t1", "Read")),
		normUser("r1", result("t1", "x")),
		normAsst("a3", "m2", text("done")),
		normUser("u2", text("next")),
		normAsst("a4", "m3", &transcript.ServerToolUse{ID: "s1", Name: "web_search"}),
		normAsst("a5", "m4", &transcript.ServerToolResult{Type: "web_search_tool_result", ToolUseID: "s1"}),
	}
	got := safeCuts(items)
	// Before a1: ok. Inside m1 (before a2): no. Between the tool_use and its result: no.
	// Between the server tool call and its result (two responses): no.
	assert.Equal(t, []bool{true, true, false, false, true, true, true, false, true}, got)
}

func TestExtractSummary(t *testing.T) {
	tests := []struct {
		in, want, err string
	}{
		{"<analysis>draft</analysis>\n<summary>\nthe gist\n</summary>", "the gist", ""},
		{"<summary>a <analysis>hidden</analysis> b</summary>", "a  b", ""},
		{"<summary>quotes <summary>x</summary> inside</summary>", "quotes <summary>x</summary> inside", ""},
		{"<analysis>mentions <summary> here</analysis><summary>real</summary>", "real", ""},
		{"no tags at all", "", "no complete <summary>"},
		{"<summary>cut off", "", "cut off"},
		{"<summary> \n </summary>", "", "empty"},
		{"<summary><analysis>only a draft</analysis></summary>", "", "empty"},
	}
	for _, tt := range tests {
		got, err := summarize.FromReply(tt.in)
		if tt.err != "" {
			assert.ErrorContains(t, err, tt.err, tt.in)
			continue
		}
		require.NoError(t, err, tt.in)
		assert.Equal(t, tt.want, got)
	}
}

// longSession builds a conversation of n rounds: a typed prompt, a response that reads a file
// and runs a command (one of them failing), their results, and an answer.
func longSession(n int) *tk {
	k := newTK()
	for i := range n {
		k.user(fmt.Sprintf("prompt %d: please work on part %d of the parser %s", i, i, strings.Repeat("and keep the API small ", 10)))
		k.assistant(text(fmt.Sprintf("working on part %d", i)),
			&transcript.ToolUse{ID: fmt.Sprintf("r%d", i), Name: "Read", Input: fmt.Appendf(nil, `{"file_path":"/repo/part%d.go"}`, i)},
			&transcript.ToolUse{ID: fmt.Sprintf("b%d", i), Name: "Bash", Input: fmt.Appendf(nil, `{"command":"go test ./part%d"}`, i)})
		failed := &transcript.ToolResult{ToolUseID: fmt.Sprintf("b%d", i), Content: []transcript.Block{text("FAIL: TestPart")}, StringContent: true, IsError: i%3 == 0}
		k.results(result(fmt.Sprintf("r%d", i), strings.Repeat("package parser\n", 40)), failed)
		k.assistant(text(fmt.Sprintf("part %d done", i)))
	}
	return k
}

func TestExtractiveSummarizer(t *testing.T) {
	k := longSession(12)
	p := newTestPipeline(t, Config{ContextWindow: 200_000}, k.at(time.Second))
	res, err := p.Prepare(t.Context(), Input{Records: k.recs})
	require.NoError(t, err)
	_ = res
	tt := p.mustTurn(t, k.recs)
	req := summarize.Request{View: viewOf(tt.items), MaxOutputTokens: 20_000, Trigger: transcript.TriggerManual}
	a, err := summarize.Extractive{}.Summarize(t.Context(), req)
	require.NoError(t, err)
	b, err := summarize.Extractive{}.Summarize(t.Context(), req)
	require.NoError(t, err)
	assert.Equal(t, a, b, "deterministic")
	body, err := summarize.FromReply(a.Text)
	require.NoError(t, err)
	for _, want := range []string{"without a model", "## User messages", "1. prompt 0: please work on part 0", "12. prompt 11:",
		"## Files", "/repo/part3.go: read", "## Commands", "`go test ./part0` → failed: FAIL: TestPart", "`go test ./part1` → ok",
		"## Errors and what followed", "## Last assistant message", "part 11 done"} {
		assert.Contains(t, body, want)
	}

	// A small budget cuts older prompts, keeps the newest whole, then leaves the oldest out.
	req.MaxOutputTokens = 600
	s, err := summarize.Extractive{}.Summarize(t.Context(), req)
	require.NoError(t, err)
	assert.Contains(t, s.Text, "earlier user messages left out to fit")
	assert.Contains(t, s.Text, "prompt 11: please work on part 11 of the parser "+strings.Repeat("and keep the API small ", 9))

	// An earlier extractive summary is merged: its user messages come first.
	first, _ := summarize.FromReply(a.Text)
	view := append([]summarize.Message{{UUID: "s", Role: transcript.RoleUser, Source: summarize.SourceCompactSummary, Content: []transcript.Block{text(summaryMessage(first, false, transcript.TriggerAuto))}}},
		summarize.Message{UUID: "u", Role: transcript.RoleUser, Content: []transcript.Block{text("one more prompt")}})
	c, err := summarize.Extractive{}.Summarize(t.Context(), summarize.Request{View: view, MaxOutputTokens: 20_000})
	require.NoError(t, err)
	assert.Contains(t, c.Text, "1. prompt 0: please work on part 0")
	assert.Contains(t, c.Text, "13. one more prompt")
	assert.Contains(t, c.Text, "`go test ./part0` → failed", "carried commands")

	// A foreign earlier summary is kept as is.
	view[0].Content = []transcript.Block{text("<summary>The model's own summary of the work.</summary>")}
	d, err := summarize.Extractive{}.Summarize(t.Context(), summarize.Request{View: view, MaxOutputTokens: 20_000})
	require.NoError(t, err)
	assert.Contains(t, d.Text, "## Earlier summary\n   The model's own summary of the work.")
}

// mustTurn builds the turn of records (the view after every stage).
func (p *Pipeline) mustTurn(t *testing.T, records []transcript.Record) *turn {
	t.Helper()
	tt, err := p.build(t.Context(), &Input{Records: records})
	require.NoError(t, err)
	return tt
}

func viewOf(items []item) []summarize.Message {
	out := make([]summarize.Message, len(items))
	for i := range items {
		out[i] = viewMessage(&items[i])
	}
	return out
}

func TestDirFiles(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "a.go"), []byte("package a\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(outside, "secret"), []byte("secret\n"), 0o644))
	require.NoError(t, os.Symlink(filepath.Join(outside, "secret"), filepath.Join(root, "link")))
	d := DirFiles{Root: root}
	ctx := t.Context()
	got, err := d.ReadFile(ctx, filepath.Join(root, "a.go"))
	require.NoError(t, err)
	assert.Equal(t, "package a\n", string(got))
	got, err = d.ReadFile(ctx, "a.go")
	require.NoError(t, err, "relative to the root")
	assert.Equal(t, "package a\n", string(got))
	for _, path := range []string{filepath.Join(outside, "secret"), "../" + filepath.Base(outside) + "/secret", filepath.Join(root, "link")} {
		_, err := d.ReadFile(ctx, path)
		assert.ErrorIs(t, err, ErrOutsideRoot, path)
	}
	_, err = d.ReadFile(ctx, filepath.Join(root, "missing.go"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}

// compactTK is a session that overflows a 12,000-token window, with files read and a skill.
func compactTK() *tk {
	k := newTK()
	k.user("build the parser " + strings.Repeat("with care ", 300))
	k.assistant(text("reading"), &transcript.ToolUse{ID: "r1", Name: "Read", Input: []byte(`{"file_path":"/repo/a.go"}`)},
		&transcript.ToolUse{ID: "r2", Name: "Read", Input: []byte(`{"file_path":"/repo/secret"}`)},
		&transcript.ToolUse{ID: "s1", Name: "Skill", Input: []byte(`{"skill":"go-style"}`)},
		&transcript.ToolUse{ID: "td", Name: "TodoWrite", Input: []byte(`{"todos":[{"content":"write the lexer","status":"in_progress"},{"content":"write the parser","status":"pending"}]}`)})
	k.results(result("r1", strings.Repeat("package a\n", 300)), result("r2", "no"), result("s1", "Launching skill: go-style"), result("td", "ok"))
	sk := k.user("Follow the Go style guide: short names, no stutter.")
	sk.IsMeta, sk.SourceToolUseID = true, "s1"
	a := k.assistant(text("done " + strings.Repeat("reading the files ", 200)))
	a.Message.Usage = &transcript.Usage{InputTokens: 9_000, OutputTokens: 1_500}
	k.user("now the error recovery, please")
	return k
}

func TestCompactRecordsAndRehydration(t *testing.T) {
	k := compactTK()
	files := FileSourceFunc(func(_ context.Context, path string) ([]byte, error) {
		switch path {
		case "/repo/a.go":
			return []byte("package a // as it is now\n"), nil
		case "/repo/secret":
			return nil, ErrOutsideRoot
		}
		return nil, os.ErrNotExist
	})
	p := newTestPipeline(t, Config{ContextWindow: 12_000, Compact: CompactConfig{Summarizer: summarize.Extractive{}, Rehydrate: RehydrateConfig{Files: files},
		Tail: TailConfig{MinTokens: 100, MinTextMessages: 1, MaxTokens: 1000}}}, k.at(time.Second))
	res, err := p.Prepare(t.Context(), Input{Records: k.recs})
	require.NoError(t, err)
	c := res.Report.Compaction
	require.NotNil(t, c)
	require.Equal(t, CompactCompacted, c.Outcome, c.Reason)
	assert.Less(t, c.PostTokens, p.Levels().Threshold)
	assert.Equal(t, []string{"file /repo/a.go", "skill go-style", "todos"}, c.Rehydrated)
	assert.True(t, hasAction(&res.Report, ActionSkipped, "rehydration: file /repo/secret skipped: outside the working directory"), res.Report.String())

	var b, s *transcript.Record
	var atts []transcript.Record
	for i := range res.Append {
		r := &res.Append[i]
		switch {
		case r.IsCompactBoundary():
			b = r
		case r.IsCompactSummary:
			s = r
		case r.Rehydration != nil:
			atts = append(atts, *r)
		}
	}
	require.NotNil(t, b)
	require.NotNil(t, s)
	assert.Empty(t, b.ParentUUID, "a boundary is a chain root")
	assert.Equal(t, k.recs[len(k.recs)-1].UUID, b.LogicalParentUUID)
	assert.Equal(t, transcript.TriggerAuto, b.CompactMetadata.Trigger)
	assert.Equal(t, c.PreTokens, b.CompactMetadata.PreTokens)
	assert.Equal(t, c.PostTokens, b.CompactMetadata.PostTokens)
	assert.Equal(t, "extractive", b.CompactMetadata.Summarizer)
	seg := b.CompactMetadata.PreservedSegment
	require.NotNil(t, seg)
	assert.Equal(t, s.UUID, seg.AnchorUUID)
	assert.Equal(t, k.recs[len(k.recs)-1].UUID, seg.TailUUID)
	assert.Equal(t, b.UUID, s.ParentUUID)
	assert.True(t, s.IsVisibleInTranscriptOnly)
	require.Len(t, atts, 3)
	assert.Equal(t, seg.TailUUID, atts[0].ParentUUID, "rehydration follows the kept tail")
	assert.Contains(t, transcript.TextOf(atts[0].Message.Content), "package a // as it is now")
	assert.Contains(t, transcript.TextOf(atts[1].Message.Content), "Follow the Go style guide")
	assert.Contains(t, transcript.TextOf(atts[2].Message.Content), "1. [in_progress] write the lexer")
	assert.Equal(t, atts[2].UUID, res.Leaf, "the next record hangs off the last one appended")

	// Resume: the same bytes, nothing new, and the request ends with the latest prompt's
	// message carrying the rehydration.
	body := requestBytes(t, res.Request)
	again, err := p.Prepare(t.Context(), Input{Records: append(append([]transcript.Record(nil), k.recs...), roundTrip(t, res.Append)...)})
	require.NoError(t, err)
	assert.Equal(t, string(body), string(requestBytes(t, again.Request)))
	assert.Empty(t, again.Append)
	last := res.Request.Messages[len(res.Request.Messages)-1]
	assert.Contains(t, transcript.TextOf(last.Content), "now the error recovery, please")
}

func TestCompactHistory(t *testing.T) {
	k := newTK()
	leaf := k.user("start")
	boundary := func(trigger string, fallback bool, summarizer string) {
		b := k.next(transcript.TypeSystem)
		b.Subtype, b.ParentUUID = transcript.SubtypeCompactBoundary, ""
		b.CompactMetadata = &transcript.CompactMetadata{Trigger: trigger, Fallback: fallback, Summarizer: summarizer}
		k.add(b)
	}
	failure := func(trigger string, fallback bool) {
		k.decision(transcript.Record{Type: transcript.TypeSystem, Subtype: transcript.SubtypeCompactFailure, UUID: fmt.Sprintf("f%d", len(k.recs)),
			CompactFailure: &transcript.CompactFailure{Trigger: trigger, Fallback: fallback, Attempts: 1}})
	}
	turns := func(n int) {
		for range n {
			k.assistant(text("a"))
		}
	}
	failure(transcript.TriggerAuto, false)
	boundary(transcript.TriggerAuto, true, "extractive") // the fallback succeeded: the primary's count stays
	turns(1)
	failure(transcript.TriggerAuto, false)
	failure(transcript.TriggerAuto, true) // the fallback's own failure does not count
	// Nor does a summary request the library could not fit: the summarizer was not called.
	k.decision(transcript.Record{Type: transcript.TypeSystem, Subtype: transcript.SubtypeCompactFailure, UUID: fmt.Sprintf("f%d", len(k.recs)),
		CompactFailure: &transcript.CompactFailure{Trigger: transcript.TriggerAuto, Attempts: 0}})
	h := readHistory(k.recs, nil, leaf, len(k.recs), 3)
	assert.Equal(t, 2, h.failures)
	assert.Equal(t, 1, h.compactions)

	boundary(transcript.TriggerAuto, true, "extractive") // one response after the previous: a refill
	turns(2)
	boundary(transcript.TriggerAuto, false, "scripted") // the primary succeeded: breaker reset
	h = readHistory(k.recs, nil, leaf, len(k.recs), 3)
	assert.Equal(t, 0, h.failures)
	assert.Equal(t, 2, h.refills)
	turns(5)
	boundary(transcript.TriggerAuto, false, "scripted") // five responses later: not a refill
	h = readHistory(k.recs, nil, leaf, len(k.recs), 3)
	assert.Equal(t, 0, h.refills)
	failure(transcript.TriggerAuto, false)
	failure(transcript.TriggerManual, false) // a manual attempt re-arms the breaker
	h = readHistory(k.recs, nil, leaf, len(k.recs), 3)
	assert.Equal(t, 0, h.failures)
	assert.Equal(t, 4, h.compactions)
}

func TestPin(t *testing.T) {
	k := newTK()
	c := k.user("Never touch the generated files in gen/.")
	a := k.assistant(text("Understood: gen/ stays as it is."))
	tool := k.assistant(toolUse("t1", "Read"))
	p := newTestPipeline(t, Config{Compact: CompactConfig{PinnedMaxTokens: 40}}, k.at(0))
	pin, err := p.Pin(k.recs, []string{a.UUID, c.UUID, c.UUID}, "user constraint", k.at(0))
	require.NoError(t, err)
	assert.Equal(t, transcript.SubtypePin, pin.Subtype)
	assert.Equal(t, []string{c.UUID, a.UUID}, pin.Pin.UUIDs, "sorted, once each")
	again, err := p.Pin(k.recs, []string{c.UUID, a.UUID}, "user constraint", k.at(0))
	require.NoError(t, err)
	assert.Equal(t, pin.UUID, again.UUID, "the same pin gives the same record")

	_, err = p.Pin(k.recs, []string{"nope", tool.UUID}, "", k.at(0))
	assert.ErrorContains(t, err, `"nope" (no such record)`)
	assert.ErrorContains(t, err, "holds no text")
	_, err = p.Pin(k.recs, nil, "", k.at(0))
	assert.Error(t, err)

	// Over the budget: a clear error, nothing pinned.
	recs := append(append([]transcript.Record(nil), k.recs...), pin)
	big := &tk{recs: recs, t0: k.t0, n: k.n, last: k.last}
	long := big.user(strings.Repeat("a constraint that goes on and on ", 10))
	_, err = p.Pin(big.recs, []string{long.UUID}, "", k.at(0))
	assert.ErrorContains(t, err, "over the budget of 40")
}

func TestCompactHooksAndMemory(t *testing.T) {
	k := compactTK()
	calls := 0
	failing := summarize.Func(func(context.Context, summarize.Request) (summarize.Summary, error) {
		calls++
		return summarize.Summary{}, errors.New("the model is down")
	})
	hookErr := func(context.Context, CompactEvent) (PreCompactResult, error) {
		return PreCompactResult{}, errors.New("hook crashed")
	}
	adds := func(_ context.Context, e CompactEvent) (PreCompactResult, error) {
		return PreCompactResult{Instructions: "Keep the parser's API names."}, nil
	}
	var custom string
	recording := summarize.Func(func(_ context.Context, req summarize.Request) (summarize.Summary, error) {
		custom = req.Custom
		return summarize.Summary{Text: "<summary>the work so far</summary>"}, nil
	})
	t.Run("hook errors are ignored, instructions merge", func(t *testing.T) {
		p := newTestPipeline(t, Config{ContextWindow: 12_000, Compact: CompactConfig{Summarizer: recording,
			Hooks: CompactHooks{Pre: []func(context.Context, CompactEvent) (PreCompactResult, error){hookErr, adds}}}}, k.at(time.Second))
		res, err := p.Compact(t.Context(), Input{Records: k.recs}, CompactOptions{Instructions: "Focus on the lexer."})
		require.NoError(t, err)
		assert.Equal(t, "Focus on the lexer.\n\nKeep the parser's API names.", custom)
		assert.True(t, hasAction(&res.Report, ActionSkipped, "pre-compact hook 0 failed, ignored: hook crashed"))
		assert.Equal(t, transcript.TriggerManual, res.Report.Compaction.Trigger)
	})
	t.Run("a nil hook is skipped", func(t *testing.T) {
		p := newTestPipeline(t, Config{ContextWindow: 12_000, Compact: CompactConfig{Summarizer: recording,
			Hooks: CompactHooks{Pre: []func(context.Context, CompactEvent) (PreCompactResult, error){nil, adds},
				SessionStart: []func(context.Context, CompactEvent) ([]ContextSection, error){nil},
				Post:         []func(context.Context, PostCompactEvent) error{nil}}}}, k.at(time.Second))
		res, err := p.Compact(t.Context(), Input{Records: k.recs}, CompactOptions{})
		require.NoError(t, err)
		assert.Equal(t, CompactCompacted, res.Report.Compaction.Outcome)
		assert.Equal(t, "Keep the parser's API names.", custom)
		assert.True(t, hasAction(&res.Report, ActionInjected, "pre-compact hook 1 added summary instructions"))
	})
	t.Run("a failed summarizer falls back and is recorded", func(t *testing.T) {
		p := newTestPipeline(t, Config{ContextWindow: 12_000, Compact: CompactConfig{Summarizer: failing}}, k.at(time.Second))
		res, err := p.Prepare(t.Context(), Input{Records: k.recs})
		require.NoError(t, err)
		c := res.Report.Compaction
		assert.Equal(t, CompactCompacted, c.Outcome)
		assert.True(t, c.Fallback)
		assert.Equal(t, 1, c.ConsecutiveFailures)
		assert.Equal(t, transcript.SubtypeCompactFailure, res.Append[0].Subtype)
		assert.Equal(t, "the model is down", res.Append[0].CompactFailure.Reason)
	})
	t.Run("without a fallback the turn fails cleanly", func(t *testing.T) {
		p := newTestPipeline(t, Config{ContextWindow: 12_000, Compact: CompactConfig{Summarizer: failing, DisableFallback: true}}, k.at(time.Second))
		_, err := p.Compact(t.Context(), Input{Records: k.recs}, CompactOptions{})
		assert.ErrorContains(t, err, "compaction failed: summarizer: the model is down")
	})
	t.Run("a fresh session memory needs no model call", func(t *testing.T) {
		calls = 0
		through := k.recs[len(k.recs)-2].UUID
		mem := SessionMemoryFunc(func(context.Context, MemoryRequest) (Memory, error) {
			return Memory{Summary: "What the memory says.", Through: through}, nil
		})
		p := newTestPipeline(t, Config{ContextWindow: 12_000, Compact: CompactConfig{Summarizer: failing, Memory: mem}}, k.at(time.Second))
		res, err := p.Prepare(t.Context(), Input{Records: k.recs})
		require.NoError(t, err)
		assert.Zero(t, calls)
		assert.Equal(t, summarizerSessionMemory, res.Report.Compaction.Summarizer)
		assert.Contains(t, transcript.TextOf(res.Request.Messages[0].Content), "What the memory says.")
	})
	t.Run("a stale session memory is not used", func(t *testing.T) {
		mem := SessionMemoryFunc(func(context.Context, MemoryRequest) (Memory, error) {
			return Memory{Summary: "old", Through: "gone"}, nil
		})
		p := newTestPipeline(t, Config{ContextWindow: 12_000, Compact: CompactConfig{Summarizer: summarize.Extractive{}, Memory: mem}}, k.at(time.Second))
		res, err := p.Prepare(t.Context(), Input{Records: k.recs})
		require.NoError(t, err)
		assert.Equal(t, "extractive", res.Report.Compaction.Summarizer)
		assert.True(t, hasAction(&res.Report, ActionSkipped, "session memory is stale"))
	})
}

// hasAction reports whether any stage of r reports an action of kind whose detail holds detail.
func hasAction(r *Report, kind ActionKind, detail string) bool {
	for _, s := range r.Stages {
		for _, a := range s.Actions {
			if a.Kind == kind && strings.Contains(a.Detail, detail) {
				return true
			}
		}
	}
	return false
}
