package agentctx

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentctx/agentctx/summarize"

	"github.com/agentctx/agentctx/provider"

	"github.com/agentctx/agentctx/transcript"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCorpusCompact compacts every corpus session with the extractive summarizer, at the
// model's window and at a window it overflows (a quarter of its pressure figure, at least
// 12,000 tokens), and checks at each: Prepare succeeds with a request that passes Validate and
// sits under the auto-compact threshold; Prepare twice gives the same bytes and records; the
// records appended to a copy of the file, read back, give the same bytes again with nothing new
// to append; the original file is an unchanged prefix of the copy; and every message the user
// typed is findable in the compacted request (see assertPromptsFindable).
func TestCorpusCompact(t *testing.T) {
	files := corpusFiles(t)
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	compacted := map[string]int{}
	for _, f := range files {
		orig, err := os.ReadFile(f)
		require.NoError(t, err)
		tr, err := transcript.ReadFile(f, transcript.ReadOptions{})
		require.NoError(t, err)
		cfg := func(window int) Config {
			return Config{Model: sessionModel(tr.Records), ContextWindow: window, Tokens: corpusCounter,
				Budget: BudgetConfig{Store: &MapStore{}}, Compact: CompactConfig{Summarizer: summarize.Extractive{}},
				Now: func() time.Time { return now }}
		}
		p0, err := New(cfg(0))
		require.NoError(t, err)
		res0, err := p0.Prepare(t.Context(), Input{Records: tr.Records})
		if errors.Is(err, ErrNoMessages) {
			continue
		}
		require.NoError(t, err, f)
		size := res0.Report.Pressure.Tokens
		for _, window := range []int{0, max(size/4, 12_000)} {
			name := fmt.Sprintf("%s@%d", filepath.Base(f), window)
			p, err := New(cfg(window))
			require.NoError(t, err)
			in := Input{Records: tr.Records}
			res, err := p.Prepare(t.Context(), in)
			require.NoError(t, err, "%s\n%s", name, res.Report.String())
			assert.NoError(t, provider.Validate(res.Request, provider.ValidateOptions{ContextWindow: p.Window(), InputTokens: res.Report.InputTokens}), name)
			assert.Less(t, res.Report.Pressure.Tokens, p.Levels().Threshold, "%s: under the threshold\n%s", name, res.Report.String())
			checkConservation(t, name, in, res)
			body := string(requestBytes(t, res.Request))

			again, err := p.Prepare(t.Context(), in)
			require.NoError(t, err, name)
			assert.Equal(t, body, string(requestBytes(t, again.Request)), "%s: Prepare twice", name)
			assert.Equal(t, encodeRecords(t, res.Append), encodeRecords(t, again.Append), "%s: Prepare twice: records", name)

			// Append to a copy of the file; read it back.
			cp := filepath.Join(t.TempDir(), "session.jsonl")
			require.NoError(t, os.WriteFile(cp, orig, 0o644))
			require.NoError(t, transcript.AppendFile(cp, transcript.AppendOptions{}, res.Append...))
			written, err := os.ReadFile(cp)
			require.NoError(t, err)
			assert.True(t, bytes.HasPrefix(written, orig), "%s: the original bytes are an unchanged prefix", name)
			back, err := transcript.ReadFile(cp, transcript.ReadOptions{})
			require.NoError(t, err)
			next, err := p.Prepare(t.Context(), Input{Records: back.Records})
			require.NoError(t, err, name)
			assert.Equal(t, body, string(requestBytes(t, next.Request)), "%s: after resume", name)
			assert.Empty(t, next.Append, "%s: nothing new after resume", name)

			if c := res.Report.Compaction; c != nil && c.Outcome == CompactCompacted {
				compacted[fmt.Sprint(window > 0)]++
				assertPromptsFindable(t, name, p, tr.Records, res.Request)
			}
		}
	}
	t.Logf("sessions compacted: at the model's window %d, at a quarter of their size %d", compacted["false"], compacted["true"])
	assert.Positive(t, compacted["true"])
}

var leftOutCount = regexp.MustCompile(`\((\d+) earlier user messages left out`)

// assertPromptsFindable checks that every message the user typed on the chain of records is in
// the compacted request: verbatim (in the kept tail), or in the summary — whole, or its start
// when the summary's budget cut it — unless it is among the oldest ones the summary says it
// left out to fit. Whitespace runs compare as one space.
func assertPromptsFindable(t *testing.T, name string, p *Pipeline, records []transcript.Record, req provider.Request) {
	t.Helper()
	tt, err := p.build(t.Context(), &Input{Records: records})
	require.NoError(t, err)
	var prompts []string
	for i := range tt.items {
		if typedPrompt(&tt.items[i]) {
			prompts = append(prompts, squash(transcript.TextOf(tt.items[i].blocks)))
		}
		if r := tt.items[i].rec; r != nil && r.IsCompactSummary {
			// An earlier compaction's summary: its user messages are carried, not checked here.
			prompts = nil
		}
	}
	var all strings.Builder
	for _, m := range req.Messages {
		for _, b := range m.Content {
			all.WriteString(transcript.TextOf([]transcript.Block{b}) + " ")
		}
	}
	text := squash(all.String())
	left := 0
	for _, m := range leftOutCount.FindAllStringSubmatch(text, -1) {
		n, _ := strconv.Atoi(m[1])
		left += n
	}
	missing := 0
	for i, pr := range prompts {
		head := []rune(pr)
		if len(head) > 60 {
			head = head[:60]
		}
		if strings.Contains(text, pr) || strings.Contains(text, string(head)) {
			continue
		}
		missing++
		assert.Less(t, i, left, "%s: user message %d of %d is neither in the request nor among the %d the summary left out: %.120q", name, i+1, len(prompts), left, pr)
	}
}

// squash collapses whitespace runs to one space.
func squash(s string) string { return strings.Join(strings.Fields(s), " ") }
