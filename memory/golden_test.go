package memory

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/summarize"
	"github.com/agentctx/agentctx/transcript"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/cases")

// goldenCase is testdata/cases/NAME/case.json: a conversation played turn by turn with an
// Extractor as the pipeline's session memory.
type goldenCase struct {
	Now       time.Time `json:"now"`
	Window    int       `json:"window"`
	MaxOutput int       `json:"maxOutput"`
	// Memory configures the Extractor (its clock and summarizer are the harness's).
	Memory Config       `json:"memory"`
	Turns  []goldenTurn `json:"turns"`
}

// goldenTurn is one turn: the results of the previous answer's calls and a prompt (with
// filler), then Prepare, the gate, an extraction when it is due, and the answer.
type goldenTurn struct {
	Results []int  `json:"results"` // characters of filler in each tool result
	User    string `json:"user"`
	Fill    int    `json:"fill"`
	// InFlight starts an extraction that does not finish before the turn is prepared: the
	// compaction, if any, waits for it until the fake clock's timer fires.
	InFlight bool `json:"inFlight"`
	Answer   struct {
		Text  string   `json:"text"`
		Fill  int      `json:"fill"`
		Tools []string `json:"tools"` // one Bash call each, with these commands
	} `json:"answer"`
}

// filler returns n characters of varied prose.
func filler(n int) string {
	words := strings.Fields("the parser keeps every token of the input while the lexer reports line and column for each error it meets in the grammar")
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s%d", words[i%len(words)], i%97)
	}
	return b.String()[:n]
}

// firingClock is the harness's clock: a fixed now, and timers that fire at once, each wait
// logged.
type firingClock struct {
	now time.Time
	log *[]string
}

func (c *firingClock) Now() time.Time { return c.now }

func (c *firingClock) After(d time.Duration) <-chan time.Time {
	*c.log = append(*c.log, fmt.Sprintf("compaction waited for the extraction in flight: the timer of %v fired", d))
	ch := make(chan time.Time, 1)
	ch <- c.now.Add(d)
	return ch
}

// TestGolden plays each case of testdata/cases and compares, for each turn, want/turn-N/
// report.txt (the Report), appended.jsonl (Result.Append, then the extraction record when
// one was written) and memory.txt (the gate's decision, the extraction, the waits and the
// compaction summarizer's calls). The compaction's Summarizer fails every call, so a
// compaction that does not use the session memory shows in the Report.
func TestGolden(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join("testdata", "cases", "*"))
	require.NoError(t, err)
	require.NotEmpty(t, dirs)
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) { runGolden(t, dir) })
	}
}

func runGolden(t *testing.T, dir string) {
	data, err := os.ReadFile(filepath.Join(dir, "case.json"))
	require.NoError(t, err)
	var gc goldenCase
	require.NoError(t, json.Unmarshal(data, &gc))
	ctx := t.Context()
	var log []string
	compactCalls := 0
	clock := &firingClock{now: gc.Now, log: &log}
	mcfg := gc.Memory
	mcfg.Clock = clock
	var hold, called chan struct{} // an extraction in flight: its summarizer waits for hold
	mcfg.Summarizer = summarize.Func(func(_ context.Context, req summarize.Request) (summarize.Summary, error) {
		if h, c := hold, called; h != nil {
			close(c)
			<-h
			return summarize.Summary{}, errors.New("held until the turn was prepared")
		}
		var prompts []string
		for _, m := range req.View {
			if m.Role == transcript.RoleUser && !m.Meta {
				if s := transcript.TextOf(m.Content); s != "" && !strings.HasPrefix(s, "<summary>") {
					prompts = append(prompts, strings.Fields(s)[0])
				}
			}
		}
		return summarize.Summary{By: "notes", Text: fmt.Sprintf("<summary>Notes over %d messages; the user asked: %s.</summary>", len(req.View), strings.Join(prompts, ", "))}, nil
	})
	ex, err := New(mcfg)
	require.NoError(t, err)
	cfg := agentctx.Config{ContextWindow: gc.Window, MaxOutputTokens: gc.MaxOutput, Now: func() time.Time { return clock.now }}
	cfg.Compact.Memory = ex
	cfg.Compact.Summarizer = summarize.Func(func(context.Context, summarize.Request) (summarize.Summary, error) {
		compactCalls++
		return summarize.Summary{}, errors.New("the compaction's summarizer was called")
	})
	cfg.Compact.DisableFallback = true
	p, err := agentctx.New(cfg)
	require.NoError(t, err)

	c := &convo{}
	var pending []string
	for i, turn := range gc.Turns {
		name := fmt.Sprintf("turn-%d", i+1)
		log, compactCalls = nil, 0
		for k, n := range turn.Results {
			require.Less(t, k, len(pending), name)
			c.add(transcript.Record{Type: transcript.TypeUser, Message: &transcript.Message{Role: transcript.RoleUser, Content: []transcript.Block{
				&transcript.ToolResult{ToolUseID: pending[k], StringContent: true, Content: []transcript.Block{&transcript.Text{Text: filler(n)}}}}}})
		}
		c.add(transcript.Record{Type: transcript.TypeUser, Message: &transcript.Message{Role: transcript.RoleUser, StringContent: true,
			Content: []transcript.Block{&transcript.Text{Text: turn.User + filler(turn.Fill)}}}})

		var inflight chan error
		if turn.InFlight {
			// An extraction held in its summarizer until the turn is prepared.
			hold, called = make(chan struct{}), make(chan struct{})
			inflight = make(chan error, 1)
			records := c.records
			go func() {
				_, err := ex.Extract(ctx, p, agentctx.Input{Records: records}, 0)
				inflight <- err
			}()
			<-called
		}
		res, err := p.Prepare(ctx, agentctx.Input{Records: c.records})
		require.NoError(t, err, name)
		if inflight != nil {
			close(hold)
			hold = nil
			log = append(log, fmt.Sprintf("the extraction in flight ended: %v", <-inflight))
		}
		// Appending Result.Append gives the same request, nothing new, no summarizer call.
		calls := compactCalls
		again, err := p.Prepare(ctx, agentctx.Input{Records: append(append([]transcript.Record(nil), c.records...), res.Append...)})
		require.NoError(t, err, name)
		assert.Equal(t, string(must(json.Marshal(res.Request))), string(must(json.Marshal(again.Request))), "%s: after appending", name)
		assert.Empty(t, again.Append, "%s: nothing new after appending", name)
		compactCalls = calls
		c.records = append(c.records, res.Append...)
		if res.Leaf != "" {
			c.leaf = res.Leaf
		}

		d := ex.Due(c.records, res.Report.InputTokens)
		log = append(log, fmt.Sprintf("due=%v tokens=%d growth=%d toolCalls=%d: %s", d.Due, d.Tokens, d.Growth, d.ToolCalls, d.Reason))
		appended := res.Append
		if d.Due {
			rec, err := ex.Extract(ctx, p, agentctx.Input{Records: c.records}, d.Tokens)
			require.NoError(t, err, name)
			m := rec.SessionMemory
			log = append(log, fmt.Sprintf("extracted through record %d of the transcript: %s", position(c.records, m.Through), m.Summary))
			c.records = append(c.records, rec)
			appended = append(appended, rec)
		}
		log = append(log, fmt.Sprintf("compaction summarizer calls: %d", compactCalls))

		want := filepath.Join(dir, "want", name)
		golden(t, filepath.Join(want, "report.txt"), res.Report.String())
		golden(t, filepath.Join(want, "appended.jsonl"), lines(t, appended))
		golden(t, filepath.Join(want, "memory.txt"), strings.Join(log, "\n")+"\n")

		pending = nil
		blocks := []transcript.Block{&transcript.Text{Text: turn.Answer.Text + filler(turn.Answer.Fill)}}
		for k, cmd := range turn.Answer.Tools {
			id := fmt.Sprintf("toolu_%02d_%d", i, k)
			blocks = append(blocks, &transcript.ToolUse{ID: id, Name: "Bash", Input: must(json.Marshal(map[string]string{"command": cmd}))})
			pending = append(pending, id)
		}
		c.add(transcript.Record{Type: transcript.TypeAssistant, Message: &transcript.Message{ID: fmt.Sprintf("msg_%02d", i), Role: transcript.RoleAssistant,
			Content: blocks, Usage: &transcript.Usage{InputTokens: res.Report.InputTokens, OutputTokens: 100}}})
		clock.now = clock.now.Add(time.Minute)
	}
}

// position returns the 1-based position in records of the record of that uuid, or 0.
func position(records []transcript.Record, uuid string) int {
	for i := range records {
		if records[i].UUID == uuid {
			return i + 1
		}
	}
	return 0
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// lines encodes records one a line.
func lines(t *testing.T, records []transcript.Record) string {
	var b strings.Builder
	for _, r := range records {
		line, err := json.Marshal(r)
		require.NoError(t, err)
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.String()
}

// golden compares got with the file at path, or rewrites it under -update.
func golden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
		t.Logf("updated %s", path)
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, string(want), got, path)
}
