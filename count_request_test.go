package agentctx

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentctx/agentctx/summarize"

	"github.com/agentctx/agentctx/provider"

	"github.com/agentctx/agentctx/transcript"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBreakdown measures the request of every bundled session by part, at the model's window
// and at one the session outgrows (compacted in memory), with and without a system prompt,
// tools and base context: the parts always sum to Report.InputTokens, and with free space and
// the buffer to the window.
func TestBreakdown(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "sessions", "*", "*.jsonl"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	sections := func(s ...ContextSection) ContextProvider {
		return ContextProviderFunc(func(context.Context) ([]ContextSection, error) { return s, nil })
	}
	base := ContextConfig{
		System: sections(ContextSection{Name: "env", Text: "Working directory: /work"}),
		// Invalid UTF-8: normalize repairs the text, and the breakdown still finds it.
		User:        sections(ContextSection{Name: "claudeMd", Text: "Indent with tabs.\xff Run the tests first."}),
		CurrentDate: true,
	}
	system := []*transcript.Text{{Text: "You are a careful coding agent."}}
	tools := []provider.Tool{{Name: "Bash", Definition: []byte(`{"name":"Bash","description":"Run a command.","input_schema":{"type":"object"}}`)}}
	tests := []struct {
		name    string
		window  int
		context ContextConfig
		system  []*transcript.Text
		tools   []provider.Tool
		compact bool // some session must compact
	}{
		{name: "model window", window: 200_000},
		{name: "compacted in memory", window: 40_000, compact: true},
		{name: "system prompt and tools", window: 200_000, system: system, tools: tools},
		{name: "base context", window: 200_000, context: base, system: system},
		{name: "base context, compacted", window: 40_000, context: base, tools: tools, compact: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			compacted := 0
			for _, f := range files {
				tr, err := transcript.ReadFile(f, transcript.ReadOptions{})
				require.NoError(t, err)
				p := newTestPipeline(t, Config{ContextWindow: tc.window, Budget: BudgetConfig{Store: &MapStore{}},
					Compact: CompactConfig{Summarizer: summarize.Extractive{}}, Context: tc.context}, now)
				res, err := p.Prepare(t.Context(), Input{Records: tr.Records, System: tc.system, Tools: tc.tools})
				if err != nil && !errors.Is(err, provider.ErrPromptTooLong) {
					require.NoError(t, err, f)
				}
				if c := res.Report.Compaction; c != nil && c.Outcome == CompactCompacted {
					compacted++
				}
				bd := p.Breakdown(&res)
				rep := &res.Report
				assert.Equal(t, rep.InputTokens, bd.InputTokens(), "%s: the parts sum to the counted request", f)
				assert.Equal(t, rep.CacheDeletedTokens, bd.CacheDeleted, f)
				if rep.InputTokens <= rep.ContextWindow {
					assert.Equal(t, rep.ContextWindow, bd.InputTokens()+bd.Free+bd.Buffer, "%s: and with free space and buffer, the window", f)
				}
				assert.Equal(t, max(0, rep.AutoCompactThreshold-rep.InputTokens), bd.Free, f)
				assert.Zero(t, bd.Messages.System, f)
				assert.Equal(t, p.counter.Blocks(textBlocks(tc.system)), bd.System, "%s: the caller's system prompt", f)
				assert.Positive(t, bd.Tools, "%s: normalize declares the tools the history uses", f)
				assert.Positive(t, bd.Messages.Other, "%s: the messages' framing", f)
				// The context stage's own figures: the user context's framing is gone when
				// normalize merged it into the first user message.
				injected := 0
				for _, a := range rep.Stage("context").Actions {
					injected += a.Tokens
				}
				if tc.context.User == nil {
					assert.Equal(t, injected, bd.BaseContext, f)
					continue
				}
				assert.Positive(t, bd.BaseContext, f)
				assert.GreaterOrEqual(t, bd.BaseContext, injected-messageOverheadTokens, f)
				assert.LessOrEqual(t, bd.BaseContext, injected, f)
			}
			if tc.compact {
				assert.Positive(t, compacted, "a session outgrows the window and is compacted")
			}
		})
	}
}

// textBlocks converts a system prompt to blocks.
func textBlocks(ts []*transcript.Text) []transcript.Block {
	bs := make([]transcript.Block, len(ts))
	for i, t := range ts {
		bs[i] = t
	}
	return bs
}

// TestBreakdownZero: an empty Result measures zero everywhere.
func TestBreakdownZero(t *testing.T) {
	p := newTestPipeline(t, Config{}, time.Time{})
	assert.Equal(t, RequestBreakdown{}, p.Breakdown(&Result{}))
}
