package agentctx

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"sync"
	"testing"

	"github.com/agentctx/agentctx/transcript"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// turnOutput is what a turn gives that the clean memo must not change: the request body and
// the report.
func turnOutput(t testing.TB, p *Pipeline, in Input) (string, string) {
	t.Helper()
	res, err := p.Prepare(t.Context(), in)
	require.NoError(t, err)
	return string(requestBytes(t, res.Request)), res.Report.String()
}

// requireSameTurn prepares in on the warm Pipeline and on a new one of cfg (with the test
// defaults, at normNow), and fails t unless both give the same request body and report.
func requireSameTurn(t testing.TB, warm *Pipeline, cfg Config, in Input, what ...any) {
	t.Helper()
	wantBody, wantReport := turnOutput(t, newTestPipeline(t, cfg, normNow), in)
	body, report := turnOutput(t, warm, in)
	require.Equal(t, wantBody, body, what...)
	require.Equal(t, wantReport, report, what...)
}

// TestNormalizeMemoWarmMatchesCold runs every one-turn golden case on a Pipeline that has
// already prepared the first half of the case's transcript, then the whole, and twice: each
// must give the body and report a new Pipeline gives.
func TestNormalizeMemoWarmMatchesCold(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join("testdata", "cases", "*"))
	require.NoError(t, err)
	require.NotEmpty(t, dirs)
	for _, dir := range dirs {
		var spec caseSpec
		if data, err := os.ReadFile(filepath.Join(dir, "case.json")); err == nil {
			require.NoError(t, json.Unmarshal(data, &spec), "case.json")
		}
		if len(spec.Turns) > 0 {
			continue
		}
		t.Run(filepath.Base(dir), func(t *testing.T) {
			src := filepath.Join(dir, "transcript.jsonl")
			if spec.Transcript != "" {
				src = filepath.Join(dir, spec.Transcript)
			}
			tr, err := transcript.ReadFile(src, transcript.ReadOptions{Strict: true})
			require.NoError(t, err)
			cold, err := New(spec.config())
			require.NoError(t, err)
			wantBody, wantReport := turnOutput(t, cold, spec.input(tr.Records))

			warm, err := New(spec.config())
			require.NoError(t, err)
			if half := tr.Records[:len(tr.Records)/2]; len(half) > 0 {
				if _, err := warm.Prepare(t.Context(), spec.input(half)); err != nil {
					t.Logf("half the transcript does not prepare (%v): warming on the whole", err)
				}
			}
			for range 2 {
				body, report := turnOutput(t, warm, spec.input(tr.Records))
				assert.Equal(t, wantBody, body)
				assert.Equal(t, wantReport, report)
			}
		})
	}
}

// TestNormalizeMemoFieldReassigned reassigns a field of a block between two turns: the warm
// Pipeline must clean the block again and give what a new Pipeline gives.
func TestNormalizeMemoFieldReassigned(t *testing.T) {
	for _, tt := range []struct {
		name   string
		change func(recs []transcript.Record)
	}{
		{"text", func(recs []transcript.Record) { blockOf[*transcript.Text](recs, 0).Text = "another prompt" }},
		{"text made blank", func(recs []transcript.Record) { blockOf[*transcript.Text](recs, 0).Text = "  " }},
		{"text citations", func(recs []transcript.Record) { blockOf[*transcript.Text](recs, 0).Citations = json.RawMessage(`[]`) }},
		{"tool_use input", func(recs []transcript.Record) {
			blockOf[*transcript.ToolUse](recs, 0).Input = json.RawMessage(`{"path":"b"}`)
		}},
		{"tool_use input not an object", func(recs []transcript.Record) { blockOf[*transcript.ToolUse](recs, 0).Input = json.RawMessage(`[1]`) }},
		{"tool_use id", func(recs []transcript.Record) { blockOf[*transcript.ToolUse](recs, 0).ID = "bad id" }},
		{"tool_use name", func(recs []transcript.Record) { blockOf[*transcript.ToolUse](recs, 0).Name = "Edit" }},
		{"tool_result id", func(recs []transcript.Record) { blockOf[*transcript.ToolResult](recs, 0).ToolUseID = "t9" }},
		{"tool_result error", func(recs []transcript.Record) { blockOf[*transcript.ToolResult](recs, 0).IsError = true }},
		{"tool_result string content", func(recs []transcript.Record) { blockOf[*transcript.ToolResult](recs, 0).StringContent = false }},
		{"tool_result content element", func(recs []transcript.Record) {
			blockOf[*transcript.ToolResult](recs, 0).Content[0] = &transcript.Text{Text: "other output"}
		}},
		{"tool_result content text", func(recs []transcript.Record) {
			blockOf[*transcript.ToolResult](recs, 0).Content[0].(*transcript.Text).Text = "changed output"
		}},
		{"tool_result content invalid UTF-8", func(recs []transcript.Record) {
			blockOf[*transcript.ToolResult](recs, 0).Content[0].(*transcript.Text).Text = "bad \xff byte"
		}},
		{"thinking signature", func(recs []transcript.Record) { blockOf[*transcript.Thinking](recs, 0).Signature = "" }},
		{"thinking text", func(recs []transcript.Record) { blockOf[*transcript.Thinking](recs, 0).Thinking = "other thought" }},
		{"thinking extra", func(recs []transcript.Record) {
			blockOf[*transcript.Thinking](recs, 0).Extra = map[string]json.RawMessage{"encrypted_content": json.RawMessage(`"x"`)}
		}},
		{"redacted_thinking data", func(recs []transcript.Record) { blockOf[*transcript.RedactedThinking](recs, 0).Data = "" }},
		{"image data not base64", func(recs []transcript.Record) { blockOf[*transcript.Image](recs, 0).Source.Data = "not base64!" }},
		{"image media type", func(recs []transcript.Record) { blockOf[*transcript.Image](recs, 0).Source.MediaType = "image/gif" }},
		{"image source", func(recs []transcript.Record) {
			blockOf[*transcript.Image](recs, 0).Source = transcript.MediaSource{Type: "url", URL: "https://example.com/a.png"}
		}},
		{"image extra", func(recs []transcript.Record) {
			blockOf[*transcript.Image](recs, 0).Extra = map[string]json.RawMessage{"x": json.RawMessage(`1`)}
		}},
		{"document title", func(recs []transcript.Record) { blockOf[*transcript.Document](recs, 0).Title = "a title" }},
		{"document data not base64", func(recs []transcript.Record) { blockOf[*transcript.Document](recs, 0).Source.Data = "%%%" }},
		{"tool_result image element", func(recs []transcript.Record) { blockOf[*transcript.ToolResult](recs, 1).Content[1] = pngBlock(32) }},
		{"tool_result image data", func(recs []transcript.Record) {
			blockOf[*transcript.ToolResult](recs, 1).Content[1].(*transcript.Image).Source.Data = "not base64!"
		}},
		{"record uuid", func(recs []transcript.Record) {
			for i := range recs {
				if recs[i].UUID == recs[1].UUID {
					recs[i].UUID = "renamed"
				}
				if recs[i].ParentUUID == recs[1].UUID {
					recs[i].ParentUUID = "renamed"
				}
			}
		}},
		{"message role", func(recs []transcript.Record) {
			r := recordOf[*transcript.ToolUse](recs)
			r.Type, r.Message.Role = transcript.TypeUser, transcript.RoleUser
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			recs := memoTranscript()
			warm := newTestPipeline(t, Config{}, normNow)
			turnOutput(t, warm, Input{Records: recs})
			if tt.name == "record uuid" {
				// The records of a slice a turn passed are taken to keep their uuids (see
				// Input.Records): renamed, the transcript comes in a copy, which the memos
				// compare record by record.
				recs = slices.Clone(recs)
			}
			tt.change(recs)
			wantBody, wantReport := turnOutput(t, newTestPipeline(t, Config{}, normNow), Input{Records: recs})
			body, report := turnOutput(t, warm, Input{Records: recs})
			assert.Equal(t, wantBody, body)
			assert.Equal(t, wantReport, report)
		})
	}
}

// memoSignature is a thinking signature normalize replays.
const memoSignature = "EqQBCkYIBxgCKkBzYW1wbGUgc2lnbmF0dXJlIGZvciBhIHRlc3QgY2FzZQ=="

// memoTranscript returns a small transcript holding each kind of block the clean memo keeps.
func memoTranscript() []transcript.Record {
	k := newTK()
	k.userBlocks(text("read the file"), pngBlock(64),
		&transcript.Document{Source: transcript.MediaSource{Type: "base64", MediaType: "application/pdf", Data: base64.StdEncoding.EncodeToString([]byte("%PDF-1.4 a page"))}})
	k.assistant(&transcript.Thinking{Thinking: "let me look", Signature: memoSignature}, &transcript.RedactedThinking{Data: "opaque"},
		&transcript.ToolUse{ID: "t1", Name: "Read", Input: json.RawMessage(`{"path":"a"}`)})
	k.results(&transcript.ToolResult{ToolUseID: "t1", Content: []transcript.Block{&transcript.Text{Text: "file body"}}, StringContent: true})
	k.assistant(text("done"))
	k.user("and the screen?")
	k.assistant(&transcript.ToolUse{ID: "t2", Name: "Screenshot", Input: json.RawMessage(`{}`)})
	k.results(&transcript.ToolResult{ToolUseID: "t2", Content: []transcript.Block{text("the screen"), pngBlock(64)}})
	k.assistant(text("seen"))
	return k.recs
}

// memoSession returns a session of the given number of turns, each a prompt, a response of
// thinking, text and a tool call, its result and an answer.
func memoSession(turns int) []transcript.Record {
	k := newTK()
	for i := range turns {
		k.user(fmt.Sprintf("question %d", i))
		id := fmt.Sprintf("t%d", i)
		k.assistant(&transcript.Thinking{Thinking: fmt.Sprintf("thought %d", i), Signature: memoSignature},
			text(fmt.Sprintf("reading %d", i)), toolUse(id, "Read"))
		k.results(result(id, fmt.Sprintf("contents %d", i)))
		k.assistant(text(fmt.Sprintf("answer %d", i)))
	}
	return k.recs
}

// blockOf returns the i-th block of type B in recs, in record order.
func blockOf[B transcript.Block](recs []transcript.Record, i int) B {
	for _, r := range recs {
		if r.Message == nil {
			continue
		}
		for _, b := range r.Message.Content {
			if b, ok := b.(B); ok {
				if i == 0 {
					return b
				}
				i--
			}
		}
	}
	panic("no such block")
}

// recordOf returns the first record that holds a block of type B.
func recordOf[B transcript.Block](recs []transcript.Record) *transcript.Record {
	for i := range recs {
		if recs[i].Message == nil {
			continue
		}
		for _, b := range recs[i].Message.Content {
			if _, ok := b.(B); ok {
				return &recs[i]
			}
		}
	}
	panic("no such record")
}

// TestNormalizeMemoConcurrent prepares two conversations at once on one Pipeline, turn after
// turn: the memo they share must give each the body and report a new Pipeline gives.
func TestNormalizeMemoConcurrent(t *testing.T) {
	p := newTestPipeline(t, Config{ContextWindow: 10_000_000}, normNow)
	var wg sync.WaitGroup
	for c := range 2 {
		recs := memoSession(12 + c)
		wg.Go(func() {
			for end := len(recs) / 2; end <= len(recs); end += 7 {
				in := Input{Records: recs[:end]}
				wantBody, wantReport := turnOutput(t, newTestPipeline(t, Config{ContextWindow: 10_000_000}, normNow), in)
				body, report := turnOutput(t, p, in)
				if !assert.Equal(t, wantBody, body) || !assert.Equal(t, wantReport, report) {
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestNormalizeSteadyAllocs requires a steady normalize (the memo warm, one new exchange) to
// allocate as often on a long session as on a short one: its allocations follow the new
// exchange, not the history. The collector is off while it counts, since a collection
// empties the scratch pool; so is the test under the race detector, whose pools drop items
// on purpose.
func TestNormalizeSteadyAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's sync.Pool drops items at random")
	}
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	allocs := func(turns int) float64 {
		recs := memoSession(turns)
		p := newTestPipeline(t, Config{ContextWindow: 40_000_000}, normNow)
		chain, err := transcript.BuildChain(recs, transcript.ChainOptions{})
		require.NoError(t, err)
		const runs = 5
		turnsIn := make([]*turn, runs+2)
		for i := range turnsIn {
			turnsIn[i] = p.newTurn(t.Context(), &Input{Records: recs}, chain)
			turnsIn[i].report.stage("normalize")
		}
		require.NoError(t, p.stages.normalize.run(turnsIn[runs+1])) // warms the memo
		i := 0
		return testing.AllocsPerRun(runs, func() {
			if err := p.stages.normalize.run(turnsIn[i]); err != nil {
				t.Fatal(err)
			}
			i++
		})
	}
	short, long := allocs(50), allocs(1000)
	t.Logf("allocations of a steady normalize: %.0f at 50 turns, %.0f at 1,000", short, long)
	assert.LessOrEqual(t, long, short+8, "a steady normalize allocates with the history")
}

// TestNormalizeMemoBounded checks that the memo's bound follows the largest view and that it
// keeps at most two generations of it.
func TestNormalizeMemoBounded(t *testing.T) {
	p := newTestPipeline(t, Config{ContextWindow: 40_000_000}, normNow)
	recs := memoSession(1500)
	for _, end := range []int{len(recs) / 3, len(recs) / 2, len(recs)} {
		_, err := p.Prepare(t.Context(), Input{Records: recs[:end]})
		require.NoError(t, err)
	}
	m := p.stages.normalize.clean
	m.mu.Lock()
	defer m.mu.Unlock()
	looked := len(m.lastKeys)
	assert.Greater(t, looked, minCleanMemo, "the session is larger than the least bound")
	assert.Equal(t, 2*looked, m.gen.Bound(), "the bound is twice the largest view")
	assert.LessOrEqual(t, m.gen.Len(), 2*m.gen.Bound(), "two generations of at most the bound each")
	assert.True(t, bytes.Contains([]byte(m.lastKeys[0].b.Kind()), []byte("text")), "the view starts with the first prompt")
}

// TestNormalizeMemoRewriteFirstMet checks that a tool name rewritten where the turn first
// meets it is reported there, whichever block that is: a block cleaned on a turn whose view
// met the name earlier reported nothing, and is not taken from the memo on a turn whose view
// starts at it.
func TestNormalizeMemoRewriteFirstMet(t *testing.T) {
	k := newTK()
	k.user("q0")
	k.assistant(text("one"), &transcript.ToolUse{ID: "x1", Name: "bad name!", Input: json.RawMessage(`{}`)})
	k.results(result("x1", "r1"))
	start := len(k.recs)
	k.user("q1")
	k.assistant(text("two"), &transcript.ToolUse{ID: "x2", Name: "bad name!", Input: json.RawMessage(`{}`)})
	k.results(result("x2", "r2"))
	k.assistant(text("done"))
	k.user("q2")
	warm := newTestPipeline(t, Config{}, normNow)
	for i, in := range []Input{{Records: k.recs}, {Records: k.recs[start:]}} {
		requireSameTurn(t, warm, Config{}, in, "turn %d", i)
	}
}
