package htmlreport

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/testkit"
	"github.com/agentctx/agentctx/provider"
	"github.com/agentctx/agentctx/simulate"
	"github.com/agentctx/agentctx/transcript"
)

// rebuild is the page script's messagesOf in Go: turn i's message indexes, from each turn's
// kept prefix and added messages.
func rebuild(turns []turnData, i int) []int {
	pieces := [][]int{turns[i].Add}
	need := turns[i].Keep
	for j := i - 1; j >= 0 && need > 0; j-- {
		if t := turns[j]; need > t.Keep {
			pieces = append(pieces, t.Add[:need-t.Keep])
			need = t.Keep
		}
	}
	var out []int
	for p := len(pieces) - 1; p >= 0; p-- {
		out = append(out, pieces[p]...)
	}
	return out
}

// Each turn's messages, rebuilt from the page's data as its script rebuilds them, are the
// request's messages, through compactions (a small window compacts often).
func TestPageMessages(t *testing.T) {
	records := testkit.Generate(400, testkit.Options{Seed: 7})
	var requests [][]provider.Message
	opts := Options{Simulate: simulate.Options{Observe: func(s *simulate.Step) {
		requests = append(requests, s.Result.Request.Messages)
	}}, MaxText: -1}
	p, err := Build(context.Background(), records, agentctx.Config{Model: "claude-sonnet-4-5", ContextWindow: 32_000}, opts)
	require.NoError(t, err)
	require.Len(t, p.data.Turns, len(requests))
	require.Greater(t, p.Result.Totals.Compactions, 2, "the window is small enough to compact")
	c := newCollector(-1)
	for i, req := range requests {
		ids := rebuild(p.data.Turns, i)
		require.Len(t, ids, len(req), "turn %d", i+1)
		for k, id := range ids {
			m := p.data.Msgs[id]
			require.Equal(t, string(req[k].Role), m.Role, "turn %d message %d", i+1, k)
			var texts []string
			for _, b := range req[k].Content {
				if b.Kind() != transcript.KindCacheEdits {
					texts = append(texts, c.block(b, nil).Text)
				}
			}
			var got []string
			for _, b := range m.Blocks {
				got = append(got, b.Text)
			}
			require.Equal(t, texts, got, "turn %d message %d", i+1, k)
		}
	}
	assert.Less(t, len(p.data.Msgs), len(records), "each distinct message is written once")
	var summaries int
	for _, m := range p.data.Msgs {
		for _, b := range m.Blocks {
			if b.Origin == originSummary {
				summaries++
			}
		}
	}
	assert.Equal(t, p.Result.Totals.Compactions, summaries, "each compaction's summary is tagged")
	for _, cp := range p.data.Comps {
		assert.NotEmpty(t, cp.Summary, "turn %d", cp.Turn)
		assert.NotEmpty(t, cp.Facts, "turn %d", cp.Turn)
	}
}

func TestVisible(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"plain", "a\tb\nc", "a\tb\nc"},
		{"C0", "nul\x00 esc\x1b bel\x07 cr\r", "nul\u2400 esc\u241b bel\u2407 cr\u240d"},
		{"DEL and C1", "del\x7f c1\u0085", "del\u2421 c1\ufffd"},
		{"invalid UTF-8", "bad\xff", "bad\ufffd"},
		{"markup stays as it is: the script escapes it", "</script><b>", "</script><b>"},
	} {
		t.Run(tc.name, func(t *testing.T) { assert.Equal(t, tc.want, visible(tc.in)) })
	}
}

func TestCut(t *testing.T) {
	long := strings.Repeat("a", 60) + strings.Repeat("é", 40)
	for _, tc := range []struct {
		name     string
		max      int
		in, want string
		full     int
	}{
		{"short", 100, "héllo", "héllo", 0},
		{"whole", -1, long, long, 0},
		{"head and tail", 40, long, strings.Repeat("a", 30) + "\n\n[… 60 characters not shown …]\n\n" + strings.Repeat("é", 10), 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, full := newCollector(tc.max).cut(tc.in)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.full, full)
		})
	}
}

func TestFacts(t *testing.T) {
	user := func(text string) provider.Message {
		return provider.Message{Role: transcript.RoleUser, Content: []transcript.Block{&transcript.Text{Text: text}}}
	}
	before := []provider.Message{
		user("Rename the config loader and keep the old name as an alias"),
		user("Yes, go with the alias approach. Never touch the public API of the package."),
		{Role: transcript.RoleAssistant, Content: []transcript.Block{
			&transcript.ToolUse{ID: "t1", Name: "Read", Input: []byte(`{"file_path":"/repo/config/loader.go"}`)},
			&transcript.ToolUse{ID: "t2", Name: "Bash", Input: []byte(`{"command":"go test ./config"}`)},
			&transcript.ToolUse{ID: "t3", Name: "Read", Input: []byte(`{"file_path":"/repo/internal/gone.go"}`)},
		}},
		{Role: transcript.RoleUser, Content: []transcript.Block{
			&transcript.ToolResult{ToolUseID: "t1", Content: []transcript.Block{&transcript.Text{Text: "package config"}}},
			&transcript.ToolResult{ToolUseID: "t2", IsError: true, Content: []transcript.Block{&transcript.Text{Text: "\nFAIL config.TestLoad: missing alias\nmore"}}},
			&transcript.ToolResult{ToolUseID: "t3", Content: []transcript.Block{&transcript.Text{Text: "x"}}},
		}},
		user("<system-reminder>not a prompt</system-reminder>"),
	}
	summary := "The user asked to rename the config   loader and keep the old name as an ALIAS. Never touch the public API of the package. Files: loader.go. Ran go test ./config."
	after := []provider.Message{user(summary), user("FAIL config.TestLoad: missing alias")}
	got := checkFacts(before, summary, after)
	assert.Equal(t, []fact{
		{Kind: factPrompt, Text: "Rename the config loader and keep the old name as an alias", Where: "summary"},
		{Kind: factPrompt, Text: "Yes, go with the alias approach. Never touch the public API"},
		{Kind: factDecision, Text: "Rename the config loader and keep the old name as an alias", Where: "summary"}, // a rule: keep …
		{Kind: factDecision, Text: "Yes, go with the alias approach.", Where: ""},
		{Kind: factDecision, Text: "Never touch the public API of the package.", Where: "summary"},
		{Kind: factFile, Text: "/repo/config/loader.go", Where: "summary"},
		{Kind: factFile, Text: "/repo/internal/gone.go"},
		{Kind: factError, Text: "FAIL config.TestLoad: missing alias", Where: "kept"},
		{Kind: factCommand, Text: "go test ./config", Where: "summary"},
	}, got)
}

// A page with no turns is still a page.
func TestPageEmpty(t *testing.T) {
	p, err := Build(context.Background(), nil, agentctx.Config{Model: "claude-sonnet-4-5"}, Options{Title: "empty"})
	require.NoError(t, err)
	var b bytes.Buffer
	n, err := p.WriteTo(&b)
	require.NoError(t, err)
	assert.Equal(t, int64(b.Len()), n)
	assert.Contains(t, b.String(), `"turns":[]`)
}

// A recovery record the live session wrote (a rung it climbed after a provider's error) marks
// the turn whose request first sees it.
func TestPageRecoveryMark(t *testing.T) {
	records := testkit.Generate(6, testkit.Options{Seed: 2})
	at := -1
	responses := 0
	for i, r := range records {
		if r.Type == transcript.TypeAssistant && (i == 0 || records[i-1].Type != transcript.TypeAssistant) {
			responses++
			if responses == 3 {
				at = i
				break
			}
		}
	}
	require.Positive(t, at)
	rec := transcript.Record{Type: transcript.TypeSystem, Subtype: transcript.SubtypeRecovery, UUID: "recovery-1",
		Recovery: &transcript.RecoveryDecision{Rung: transcript.RungPromptTooLong, Tokens: 300_000, Limit: 200_000, LeafUUID: records[at-1].UUID}}
	records = append(records[:at:at], append([]transcript.Record{rec}, records[at:]...)...)
	p, err := Build(context.Background(), records, agentctx.Config{Model: "claude-sonnet-4-5"}, Options{})
	require.NoError(t, err)
	var marked []int
	for _, td := range p.data.Turns {
		if slices.Contains(td.Marks, markRecovery) {
			marked = append(marked, td.N)
		}
	}
	assert.Equal(t, []int{3}, marked)
}
