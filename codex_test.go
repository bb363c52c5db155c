package agentctx

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentctx/agentctx/summarize"

	"github.com/agentctx/agentctx/provider"

	"github.com/agentctx/agentctx/transcript"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// codexFixture is the hand-made rollout with every item type (testdata/codex/README.md).
var codexFixture = filepath.Join("testdata", "codex", "all-items.jsonl")

// codexMeta is a session_meta line, for inputs that must read as Codex rollouts.
const codexMeta = `{"timestamp":"2026-11-20T10:00:00.000Z","type":"session_meta","payload":{"id":"s1","cwd":"/w","base_instructions":{"text":"be brief"}}}`

// codexLine builds a rollout line of type typ around payload.
func codexLine(typ, payload string) string {
	return `{"timestamp":"2026-11-20T10:00:01.000Z","type":"` + typ + `","payload":` + payload + `}`
}

// TestReadTranscriptDetects: the reader takes the format from the content, under any name,
// and reads a Claude Code session as before.
func TestReadTranscriptDetects(t *testing.T) {
	data, err := os.ReadFile(codexFixture)
	require.NoError(t, err)
	for _, name := range []string{"session.jsonl", "rollout-2026-11-20T10-00-00-x.jsonl", ""} {
		tr, err := transcript.Read(bytes.NewReader(data), name, transcript.ReadOptions{Strict: true})
		require.NoError(t, err)
		assert.Equal(t, transcript.FormatCodex, tr.Format, name)
	}
	tr, err := transcript.Read(strings.NewReader(userLine("a")+"\n"), "rollout-x.jsonl", transcript.ReadOptions{})
	require.NoError(t, err)
	assert.Equal(t, transcript.FormatClaudeCode, tr.Format)
	assert.Equal(t, transcript.TypeUser, tr.Records[0].Type)
}

// codexDescribe names what a record of a Codex rollout became, for the mapping table.
func codexDescribe(r *transcript.Record) string {
	var s string
	switch {
	case r.IsCompactBoundary():
		s = "boundary"
	case r.Message != nil:
		s = string(r.Type)
		if r.IsMeta {
			s += "(meta)"
		}
		if r.IsCompactSummary {
			s += "(summary)"
		}
		for _, b := range r.Message.Content {
			s += " " + string(b.Kind())
			if id := toolID(b); id != "" {
				s += ":" + id
			}
		}
	default:
		s = string(r.Type)
		if r.Subtype != "" {
			s += "/" + string(r.Subtype)
		}
	}
	return s
}

func TestReadCodexFixture(t *testing.T) {
	tr, err := transcript.ReadFile(codexFixture, transcript.ReadOptions{Strict: true})
	require.NoError(t, err)
	require.True(t, tr.Clean(), "%v", tr.Err())
	assert.Equal(t, transcript.FormatCodex, tr.Format)
	require.Len(t, tr.System, 1)
	assert.Equal(t, "You are a coding agent. Keep answers short.", tr.System[0].Text)
	assert.Equal(t, 272000, tr.ContextWindow)

	// Every line is at least one record, in file order.
	want := [][]string{
		1:  {"session_meta"},
		2:  {"event_msg/task_started"},
		3:  {"user(meta) text"},
		4:  {"turn_context"},
		5:  {"user text image"},
		6:  {"event_msg/user_message"}, // the item of line 5 said it already
		7:  {"assistant thinking"},
		8:  {"assistant tool_use:call_ls"},
		9:  {"event_msg/token_count"},
		10: {"user tool_result:call_ls"},
		11: {"assistant tool_use:call_patch"},
		12: {"event_msg/token_count"},
		13: {"user tool_result:call_patch"},
		14: {"assistant tool_use:call_test"},
		15: {"user tool_result:call_test"},
		16: {"assistant web_search_call"},
		17: {"assistant tool_use:call_img"},
		18: {"user tool_result:call_img"},
		19: {"assistant text"},
		20: {"event_msg/token_count"},
		21: {"event_msg/agent_message"},
		22: {"response_item/ghost_snapshot"},
		23: {"assistant tool_search_call"},
		24: {"event_msg/task_complete"},
		25: {"boundary", "user(summary) text"},
		26: {"turn_context"},
		27: {"user text"},
		28: {"event_msg/user_message"},
		29: {"assistant text"},
		30: {"event_msg/token_count"},
		31: {"boundary", "user text", "user(summary) text", "user compaction"},
		32: {"event_msg/token_count"},
		33: {"thread_rolled_back"},
		34: {"user text"},
		35: {"event_msg/user_message", "user text"}, // no item said it: the event is the message
		36: {"assistant tool_use:call_fmt"},
		37: {"user tool_result:call_fmt"},
		38: {"assistant text"},
		39: {"event_msg/token_count"},
	}
	got := make([][]string, len(want))
	require.Len(t, tr.Lines, len(tr.Records))
	for i := range tr.Records {
		r := &tr.Records[i]
		require.Equal(t, tr.Lines[i], r.Line)
		require.Less(t, r.Line, len(want))
		got[r.Line] = append(got[r.Line], codexDescribe(r))
		assert.NotEmpty(t, r.Timestamp, "line %d", r.Line)
		assert.Equal(t, "0193aaaa-1111-7222-8333-444455556666", r.SessionID, "line %d", r.Line)
		if r.Message != nil {
			assert.Equal(t, "/work/demo", r.Cwd, "line %d", r.Line)
		}
	}
	assert.Equal(t, want, got)
	byLine := func(line, k int) *transcript.Record {
		t.Helper()
		for i := range tr.Records {
			if tr.Records[i].Line == line {
				if k == 0 {
					return &tr.Records[i]
				}
				k--
			}
		}
		t.Fatalf("no record %d of line %d", k, line)
		return nil
	}

	// Usage: a token_count gives the response before it the usage of its last call, input
	// split into uncached and cached; repeats and the compaction's own call give none.
	usage := map[int][3]int{8: {1200, 0, 80}, 11: {300, 1100, 70}, 19: {500, 2500, 40}, 29: {900, 0, 20}, 38: {500, 1000, 30}}
	for i := range tr.Records {
		r := &tr.Records[i]
		if r.Type != transcript.TypeAssistant {
			continue
		}
		u, ok := usage[r.Line]
		if !ok {
			assert.Nil(t, r.Message.Usage, "line %d", r.Line)
			continue
		}
		require.NotNil(t, r.Message.Usage, "line %d", r.Line)
		assert.Equal(t, u, [3]int{r.Message.Usage.InputTokens, r.Message.Usage.CacheReadInputTokens, r.Message.Usage.OutputTokens}, "line %d", r.Line)
		assert.Equal(t, "gpt-5.1-codex", r.Message.Model)
	}
	// The items of one response share a message id; the next response has its own.
	assert.Equal(t, byLine(7, 0).Message.ID, byLine(8, 0).Message.ID)
	assert.NotEqual(t, byLine(8, 0).Message.ID, byLine(11, 0).Message.ID)
	assert.Equal(t, byLine(16, 0).Message.ID, byLine(17, 0).Message.ID)

	// Blocks.
	th := byLine(7, 0).Message.Content[0].(*transcript.Thinking)
	assert.Equal(t, "**Listing files**\n\nI will list the files first.", th.Thinking)
	assert.JSONEq(t, `"gAAAAABfixtureEncryptedReasoning"`, string(th.Extra["encrypted_content"]))
	img := byLine(5, 0).Message.Content[1].(*transcript.Image)
	assert.Equal(t, "base64", img.Source.Type)
	assert.Equal(t, "image/png", img.Source.MediaType)
	assert.JSONEq(t, `{"command":["ls"],"workdir":"/work/demo"}`, string(byLine(8, 0).Message.Content[0].(*transcript.ToolUse).Input))
	patch := byLine(11, 0).Message.Content[0].(*transcript.ToolUse)
	assert.Equal(t, "apply_patch", patch.Name)
	assert.JSONEq(t, `{"input":"*** Begin Patch\n*** Update File: main.go\n@@\n-return 1\n+return 2\n*** End Patch\n"}`, string(patch.Input))
	shell := byLine(14, 0).Message.Content[0].(*transcript.ToolUse)
	assert.Equal(t, "local_shell", shell.Name)
	assert.Contains(t, string(shell.Input), `"command":["go","test","./..."]`)
	failed := byLine(15, 0).Message.Content[0].(*transcript.ToolResult)
	assert.True(t, failed.IsError)
	assert.Equal(t, "--- FAIL: TestAnswer (0.00s)\n    main_test.go:9: got 2", failed.Content[0].(*transcript.Text).Text)
	items := byLine(18, 0).Message.Content[0].(*transcript.ToolResult)
	require.Len(t, items.Content, 2)
	assert.IsType(t, &transcript.Image{}, items.Content[0])
	assert.Equal(t, "plot.png", items.Content[1].(*transcript.Text).Text)
	assert.Equal(t, "And run gofmt afterwards.", byLine(35, 1).Message.Content[0].(*transcript.Text).Text)

	// Compactions: a boundary links logically to the chain before it, and is followed by the
	// view Codex resumes with.
	b1, b2 := byLine(25, 0), byLine(31, 0)
	assert.Equal(t, byLine(23, 0).UUID, b1.LogicalParentUUID)
	assert.Empty(t, b1.ParentUUID)
	assert.Equal(t, b1.UUID, byLine(25, 1).ParentUUID)
	assert.Equal(t, byLine(29, 0).UUID, b2.LogicalParentUUID)
	assert.Equal(t, 900, b2.CompactMetadata.PreTokens, "the last call's context before the compaction")
	assert.Equal(t, "codex", b2.CompactMetadata.Summarizer)
	chain, err := transcript.BuildChain(tr.Records, transcript.ChainOptions{})
	require.NoError(t, err)
	assert.Same(t, b2, chain.Boundary)
	var lines []int
	for _, r := range chain.Records {
		lines = append(lines, r.Line)
	}
	assert.Equal(t, []int{31, 31, 31, 31, 34, 35, 36, 37, 38}, lines)

	// What the view cannot hold is reported, line and field.
	var unmapped []string
	for _, u := range tr.Unmapped {
		unmapped = append(unmapped, fmt.Sprintf("%d %s", u.Line, u.Field))
		assert.Equal(t, codexFixture, u.File)
	}
	assert.Equal(t, []string{"16 payload", "23 payload", "31 payload.replacement_history[2]", "33 type"}, unmapped)

	// Reading is deterministic: the same uuids every time.
	again, err := transcript.ReadFile(codexFixture, transcript.ReadOptions{})
	require.NoError(t, err)
	for i := range tr.Records {
		assert.Equal(t, tr.Records[i].UUID, again.Records[i].UUID)
		assert.Equal(t, tr.Records[i].ParentUUID, again.Records[i].ParentUUID)
	}
}

// TestCodexFixturePrepare prepares the fixture's next turn, and the turn before its first
// compaction (reasoning, images, every kind of tool call in the view): the request passes
// Validate and loses no block without a reason.
func TestCodexFixturePrepare(t *testing.T) {
	tr, err := transcript.ReadFile(codexFixture, transcript.ReadOptions{Strict: true})
	require.NoError(t, err)
	first := slices.IndexFunc(tr.Records, func(r transcript.Record) bool { return r.IsCompactBoundary() })
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for _, records := range [][]transcript.Record{tr.Records, tr.Records[:first]} {
		p := newTestPipeline(t, Config{Budget: BudgetConfig{Store: &MapStore{}}}, now)
		in := Input{Records: records, System: tr.System}
		res, err := p.Prepare(t.Context(), in)
		require.NoError(t, err)
		require.NoError(t, provider.Validate(res.Request, provider.ValidateOptions{ContextWindow: p.Window(), InputTokens: res.Report.InputTokens}))
		checkConservation(t, codexFixture, in, res)
		assert.Equal(t, "You are a coding agent. Keep answers short.", res.Request.System[0].Text)
		body := string(requestBytes(t, res.Request))
		assert.NotContains(t, body, "gAAAAAB", "encrypted content is never sent")
		if len(records) == first {
			assert.Contains(t, body, `"tool_use_id":"call_test","content":"--- FAIL`)
			assert.Contains(t, body, `"is_error":true`)
			assert.Contains(t, body, `{"type":"image","source":{"type":"base64","media_type":"image/png"`)
			var reasons []string
			for _, a := range res.Report.Stage("normalize").Actions {
				reasons = append(reasons, a.Detail)
			}
			assert.Contains(t, reasons, "reasoning from a Codex rollout: its content is encrypted for OpenAI, so it cannot be replayed as thinking")
			// The anchor is the last response with usage: line 19's, 500 + 2500 cached + 40.
			anchor := slices.IndexFunc(records, func(r transcript.Record) bool { return r.UUID == res.Report.Pressure.AnchorUUID })
			require.GreaterOrEqual(t, anchor, 0)
			assert.Equal(t, 19, records[anchor].Line)
			assert.Equal(t, 500+2500+40, res.Report.Pressure.Anchor)
		}
	}
}

func TestReadCodexDamage(t *testing.T) {
	asst := codexLine("response_item", `{"type":"message","role":"assistant","content":[{"type":"output_text","text":"ok"}]}`)
	user := codexLine("response_item", `{"type":"message","role":"user","content":[{"type":"input_text","text":"q"}]}`)
	tests := []struct {
		name     string
		lines    []string
		problems []int    // lines skipped
		dropped  []string // "line field" of fields dropped
		torn     int      // the torn last line, 0 for none
		records  int      // records read
		check    func(t *testing.T, tr *transcript.File)
	}{
		{name: "torn last line", lines: []string{codexMeta, user, `{"timestamp":"2026-11-20T10:00:02.000Z","type":"response_item","payload":{"type":"mess`},
			torn: 3, records: 2},
		{name: "invalid line in the middle", lines: []string{codexMeta, user, `{"type": nope}`, asst}, problems: []int{3}, records: 3,
			check: func(t *testing.T, tr *transcript.File) {
				require.NotNil(t, tr.Records[2].Damage)
				assert.Equal(t, 3, tr.Records[2].Damage.Skipped[0].Line, "the next record names the skipped line")
			}},
		{name: "not an object", lines: []string{codexMeta, `[1,2]`, `null`, user}, problems: []int{2, 3}, records: 2},
		{name: "timestamp not a string", lines: []string{codexMeta, strings.Replace(user, `"2026-11-20T10:00:01.000Z"`, `12`, 1)},
			dropped: []string{"2 timestamp"}, records: 2,
			check: func(t *testing.T, tr *transcript.File) { assert.Empty(t, tr.Records[1].Timestamp) }},
		{name: "content not an array", lines: []string{codexMeta, codexLine("response_item", `{"type":"message","role":"user","content":5}`)},
			dropped: []string{"2 payload.content"}, records: 2},
		{name: "content item not an object", lines: []string{codexMeta, codexLine("response_item", `{"type":"message","role":"user","content":[7,{"type":"input_text","text":"q"}]}`)},
			dropped: []string{"2 payload.content[0]"}, records: 2,
			check: func(t *testing.T, tr *transcript.File) {
				c := tr.Records[1].Message.Content
				require.Len(t, c, 2)
				assert.Equal(t, `7`, string(c[0].(*transcript.UnknownBlock).JSON), "kept as an unknown block")
			}},
		{name: "arguments neither string nor object", lines: []string{codexMeta, codexLine("response_item", `{"type":"function_call","name":"f","arguments":7,"call_id":"c"}`)},
			dropped: []string{"2 payload.arguments"}, records: 2},
		{name: "token count not a number", lines: []string{codexMeta, asst, codexLine("event_msg", `{"type":"token_count","info":{"last_token_usage":{"input_tokens":"x","output_tokens":3}}}`)},
			dropped: []string{"3 payload.info.last_token_usage.input_tokens"}, records: 3,
			check: func(t *testing.T, tr *transcript.File) {
				assert.Equal(t, 3, tr.Records[1].Message.Usage.OutputTokens, "the readable figures count")
			}},
		{name: "payload not an object", lines: []string{codexMeta, codexLine("response_item", `"text"`), user},
			dropped: []string{"2 payload"}, records: 3},
		{name: "missing type", lines: []string{codexMeta, `{"timestamp":"2026-11-20T10:00:01.000Z","payload":{}}`},
			dropped: []string{"2 type"}, records: 2},
		{name: "over-long line", lines: []string{codexMeta, codexLine("response_item", `{"type":"message","role":"user","content":"`+strings.Repeat("y", 600)+`"}`), user},
			problems: []int{2}, records: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := strings.Join(tt.lines, "\n")
			if tt.torn == 0 {
				data += "\n"
			}
			opts := transcript.ReadOptions{MaxLineBytes: 512}
			tr, err := transcript.Read(strings.NewReader(data), "r.jsonl", opts)
			require.NoError(t, err)
			require.Equal(t, transcript.FormatCodex, tr.Format)
			assert.Len(t, tr.Records, tt.records)
			var problems []int
			for _, p := range tr.Problems {
				problems = append(problems, p.Line)
				assert.Equal(t, "r.jsonl", p.File)
			}
			assert.Equal(t, tt.problems, problems)
			var dropped []string
			for _, d := range tr.Dropped {
				dropped = append(dropped, fmt.Sprintf("%d %s", d.Line, d.Field))
				assert.Regexp(t, `^r\.jsonl:\d+: field \S+: .+`, d.Error())
			}
			assert.Equal(t, tt.dropped, dropped)
			if tt.torn > 0 {
				require.NotNil(t, tr.Torn)
				assert.Equal(t, tt.torn, tr.Torn.Line)
				assert.ErrorIs(t, tr.Torn, transcript.ErrTornLine)
			} else {
				assert.Nil(t, tr.Torn)
			}
			if tt.check != nil {
				tt.check(t, tr)
			}

			// Strict mode fails on the first bad line or field, naming file, line and field;
			// a torn last line is not an error.
			opts.Strict = true
			strict, err := transcript.Read(strings.NewReader(data), "r.jsonl", opts)
			if len(tt.problems) == 0 && len(tt.dropped) == 0 {
				require.NoError(t, err)
				assert.Len(t, strict.Records, tt.records)
				return
			}
			le, ok := errors.AsType[*transcript.LineError](err)
			require.True(t, ok, "%v", err)
			assert.Equal(t, "r.jsonl", le.File)
			firstBad := 1 << 30
			if len(tt.problems) > 0 {
				firstBad = tt.problems[0]
			}
			if len(tt.dropped) > 0 {
				var line int
				var field string
				_, _ = fmt.Sscanf(tt.dropped[0], "%d %s", &line, &field)
				if line < firstBad {
					firstBad = line
					assert.Equal(t, field, le.Field)
				}
			}
			assert.Equal(t, firstBad, le.Line)
		})
	}
}

// TestCodexAppendRefused: the library never writes to a Codex rollout.
func TestCodexAppendRefused(t *testing.T) {
	data, err := os.ReadFile(codexFixture)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "rollout.jsonl")
	require.NoError(t, os.WriteFile(path, data, 0o644))
	rec := transcript.Record{Type: transcript.TypeUser, UUID: "u", Message: &transcript.Message{Role: transcript.RoleUser, Content: []transcript.Block{&transcript.Text{Text: "x"}}}}

	err = transcript.AppendFile(path, transcript.AppendOptions{}, rec)
	require.ErrorIs(t, err, transcript.ErrCodexAppend)
	assert.Contains(t, err.Error(), path)
	_, err = transcript.OpenAppender(path, transcript.AppendOptions{})
	require.ErrorIs(t, err, transcript.ErrCodexAppend)
	after, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, data, after, "the rollout is left as it was")

	// A Claude Code session and a new file take appends as before.
	claude := filepath.Join(t.TempDir(), "s.jsonl")
	require.NoError(t, transcript.AppendFile(claude, transcript.AppendOptions{}, rec))
	require.NoError(t, transcript.AppendFile(claude, transcript.AppendOptions{}, rec))
}

// codexCorpusFiles returns the Codex rollouts under ../shared/corpus/codex, or skips. It skips
// under the race detector too: reading a rollout and preparing its turn run on one goroutine,
// the hand-made fixture covers them there, and the plain run reads the corpus (see
// corpusPaths for the time the race detector costs).
func codexCorpusFiles(t testing.TB) []string {
	t.Helper()
	if raceEnabled {
		t.Skip("Codex corpus tests run without the race detector only")
	}
	root := filepath.Join(corpusDir(t), "codex")
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".jsonl") {
			files = append(files, path)
		}
		return err
	})
	require.NoError(t, err)
	if len(files) == 0 {
		t.Skip("no .jsonl files under ../shared/corpus/codex; Codex corpus tests skipped")
	}
	slices.Sort(files)
	return files
}

// TestCodexCorpus reads every Codex rollout of the corpus strictly and prepares its next
// turn at the model's window and at a 40,000-token window that compacts it: the request
// passes Validate, no block of the chain is lost without a reason, every tool call meets its
// output by call id, and Prepare twice gives the same bytes.
func TestCodexCorpus(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for _, f := range codexCorpusFiles(t) {
		name := filepath.Base(f)
		tr, err := transcript.ReadFile(f, transcript.ReadOptions{Strict: true})
		require.NoError(t, err, name)
		require.Equal(t, transcript.FormatCodex, tr.Format, name)
		require.NotEmpty(t, tr.System, name)
		for _, u := range tr.Unmapped {
			assert.Contains(t, u.Error(), "web_search_call", "%s: only web searches have no counterpart", name)
		}
		uses, results := map[string]bool{}, map[string]bool{}
		for i := range tr.Records {
			if m := tr.Records[i].Message; m != nil {
				for _, b := range m.Content {
					switch b := b.(type) {
					case *transcript.ToolUse:
						uses[b.ID] = true
					case *transcript.ToolResult:
						results[b.ToolUseID] = true
					}
				}
			}
		}
		assert.NotEmpty(t, uses, name)
		assert.Equal(t, uses, results, "%s: every call has its output", name)

		for _, window := range []int{0, 40000} {
			p, err := New(Config{
				Model: "claude-sonnet-4-5", ContextWindow: window, Tokens: corpusCounter,
				Budget: BudgetConfig{Store: &MapStore{}}, Now: func() time.Time { return now },
				Compact: CompactConfig{Summarizer: summarize.Extractive{}},
			})
			require.NoError(t, err)
			in := Input{Records: tr.Records, System: tr.System}
			res, err := p.Prepare(t.Context(), in)
			require.NoError(t, err, "%s at window %d", name, window)
			assert.NoError(t, provider.Validate(res.Request, provider.ValidateOptions{ContextWindow: p.Window(), InputTokens: res.Report.InputTokens}), name)
			checkConservation(t, name, in, res)
			if window > 0 {
				require.NotNil(t, res.Report.Compaction, "%s: a 40,000-token window compacts", name)
				assert.Equal(t, CompactCompacted, res.Report.Compaction.Outcome, name)
			}
			again, err := p.Prepare(t.Context(), in)
			require.NoError(t, err)
			assert.Equal(t, string(requestBytes(t, res.Request)), string(requestBytes(t, again.Request)), "%s: Prepare twice", name)
			t.Logf("%s window %d: %d records, %d input tokens, anchored %d", name, window, len(tr.Records), res.Report.InputTokens, res.Report.AnchoredTokens)
		}
	}
}

// FuzzReadCodex decodes arbitrary lines after a session_meta line, so that every input reads
// as a Codex rollout: no panic, nothing dropped silently (every non-blank line is a record, a
// reported problem or the torn last line), strict mode agrees, reading is deterministic, and
// whatever decodes goes through Prepare without losing a block.
func FuzzReadCodex(f *testing.F) {
	data, err := os.ReadFile(codexFixture)
	require.NoError(f, err)
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	f.Add([]byte(""))
	for i := 0; i < len(lines); i += 6 {
		f.Add([]byte(strings.Join(lines[i:min(i+6, len(lines))], "\n")))
	}
	f.Add([]byte(codexLine("response_item", `{"type":"function_call_output","call_id":"c","output":{"content":[{"type":"input_text","text":"x"}],"success":false}}`)))
	f.Add([]byte(codexLine("compacted", `{"message":"m","replacement_history":[{"type":"message","role":"user","content":"m"},7]}`)))
	f.Add([]byte(codexLine("event_msg", `{"type":"user_message","message":"hi","images":["data:image/png;base64,AAAA","ftp://x"]}`) + "\n" + `{"timesta`))
	f.Fuzz(func(t *testing.T, in []byte) {
		fuzzCodexBody(t, append([]byte(codexMeta+"\n"), in...), "")
	})
}

// fuzzCodexBody is the body of the Codex fuzz targets: data reads as a rollout of the variant,
// without a panic, nothing dropped silently (every non-blank line is a record, a reported
// problem or the torn last line), strict mode agrees, reading is deterministic, and whatever
// decodes goes through Prepare without losing a block.
func fuzzCodexBody(t *testing.T, data []byte, variant string) {
	const maxLine = 8 << 10
	tr, err := transcript.Read(bytes.NewReader(data), "fuzz.jsonl", transcript.ReadOptions{MaxLineBytes: maxLine})
	require.NoError(t, err)
	require.Equal(t, transcript.FormatCodex, tr.Format)
	require.Equal(t, variant, tr.Variant)

	nonBlank, _ := splitLines(data)
	read := map[int]bool{}
	for _, l := range tr.Lines {
		read[l] = true
	}
	torn := 0
	if tr.Torn != nil {
		torn = 1
	}
	require.Equal(t, len(nonBlank), len(read)+len(tr.Problems)+torn, "every line is a record or a problem")
	require.Len(t, tr.Lines, len(tr.Records))

	strict, strictErr := transcript.Read(bytes.NewReader(data), "fuzz.jsonl", transcript.ReadOptions{MaxLineBytes: maxLine, Strict: true})
	fatal := len(tr.Dropped) > 0
	for _, p := range tr.Problems {
		fatal = fatal || !errors.Is(p, transcript.ErrTornLine)
	}
	if fatal {
		_, ok := errors.AsType[*transcript.LineError](strictErr)
		require.True(t, ok, "%v", strictErr)
	} else {
		require.NoError(t, strictErr)
		require.Equal(t, len(tr.Records), len(strict.Records))
	}

	again, err := transcript.Read(bytes.NewReader(data), "fuzz.jsonl", transcript.ReadOptions{MaxLineBytes: maxLine})
	require.NoError(t, err)
	for i := range tr.Records {
		a, _ := json.Marshal(tr.Records[i])
		b, _ := json.Marshal(again.Records[i])
		require.Equal(t, string(a), string(b))
	}

	p := newTestPipeline(t, Config{Budget: BudgetConfig{Store: &MapStore{}}}, fuzzNow)
	pin := Input{Records: tr.Records, System: tr.System}
	res, err := p.Prepare(t.Context(), pin)
	if !errors.Is(err, ErrNoMessages) {
		require.NoError(t, err)
	}
	checkConservation(t, "fuzz.jsonl", pin, res)
}

// TestCodexRecordsWriteAsTranscript: the records mapped from a rollout encode in the
// library's own format, and that transcript gives the same request (docs/codex.md, "Read
// only").
func TestCodexRecordsWriteAsTranscript(t *testing.T) {
	tr, err := transcript.ReadFile(codexFixture, transcript.ReadOptions{Strict: true})
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "converted.jsonl")
	require.NoError(t, transcript.AppendFile(path, transcript.AppendOptions{}, tr.Records...))
	back, err := transcript.ReadFile(path, transcript.ReadOptions{Strict: true})
	require.NoError(t, err)
	assert.Equal(t, transcript.FormatClaudeCode, back.Format)
	require.Len(t, back.Records, len(tr.Records))

	p := newTestPipeline(t, Config{Budget: BudgetConfig{Store: &MapStore{}}}, fuzzNow)
	want, err := p.Prepare(t.Context(), Input{Records: tr.Records, System: tr.System})
	require.NoError(t, err)
	got, err := p.Prepare(t.Context(), Input{Records: back.Records, System: tr.System})
	require.NoError(t, err)
	assert.Equal(t, string(requestBytes(t, want.Request)), string(requestBytes(t, got.Request)))
}

// BenchmarkReadCodex reads the largest Codex rollout of the corpus ("read") beside its floor,
// every line decoded once into generic JSON values ("floor").
func BenchmarkReadCodex(b *testing.B) {
	var data []byte
	for _, f := range codexCorpusFiles(b) {
		d, err := os.ReadFile(f)
		require.NoError(b, err)
		if len(d) > len(data) {
			data = d
		}
	}
	lines := bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
	b.Run("read", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			tr, err := transcript.Read(bytes.NewReader(data), "rollout.jsonl", transcript.ReadOptions{})
			if err != nil || tr.Format != transcript.FormatCodex {
				b.Fatal(err)
			}
		}
	})
	b.Run("floor", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			for _, l := range lines {
				var v any
				if err := json.Unmarshal(l, &v); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}

// A Responses API item keeps its own "id" beside the call_id the tool_use takes: written back
// as a Claude Code transcript, the tool_use keeps the call id (the item's id kept under
// "codex_id"), so the call still pairs with its output.
func TestCodexItemIDWritesBack(t *testing.T) {
	rollout := strings.Join([]string{codexMeta,
		codexLine("response_item", `{"type":"message","role":"user","content":[{"type":"input_text","text":"list the files"}]}`),
		codexLine("response_item", `{"type":"function_call","id":"fc_1","call_id":"call_1","name":"shell","arguments":"{\"cmd\":\"ls\"}"}`),
		codexLine("response_item", `{"type":"custom_tool_call","id":"ctc_2","call_id":"call_2","name":"apply_patch","input":"*** Begin Patch"}`),
		codexLine("response_item", `{"type":"local_shell_call","id":"lsc_3","call_id":"call_3","action":{"type":"exec","command":["ls"]}}`),
		codexLine("response_item", `{"type":"function_call_output","call_id":"call_1","output":"a.go"}`),
		codexLine("response_item", `{"type":"custom_tool_call_output","call_id":"call_2","output":"done"}`),
		codexLine("response_item", `{"type":"function_call_output","call_id":"call_3","output":"a.go"}`),
	}, "\n") + "\n"
	tr, err := transcript.Read(strings.NewReader(rollout), "rollout.jsonl", transcript.ReadOptions{Strict: true})
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "converted.jsonl")
	require.NoError(t, transcript.AppendFile(path, transcript.AppendOptions{}, tr.Records...))
	back, err := transcript.ReadFile(path, transcript.ReadOptions{Strict: true})
	require.NoError(t, err)
	var ids []string
	for _, r := range back.Records {
		if r.Message == nil {
			continue
		}
		for _, b := range r.Message.Content {
			if tu, ok := b.(*transcript.ToolUse); ok {
				ids = append(ids, tu.ID)
				assert.Contains(t, string(tu.Extra["codex_id"]), `"`, "the item's own id is kept")
			}
		}
	}
	assert.Equal(t, []string{"call_1", "call_2", "call_3"}, ids)
	p := newTestPipeline(t, Config{}, fuzzNow)
	res, err := p.Prepare(t.Context(), Input{Records: back.Records})
	require.NoError(t, err)
	for _, act := range res.Report.Stages {
		for _, a := range act.Actions {
			assert.NotEqual(t, ActionDropped, a.Kind, "no call or output is dropped as unpaired: %s", a.Detail)
		}
	}
}
