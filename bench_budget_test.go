package agentctx_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/transcript"
)

// hostileTurn returns a transcript whose last turn brings n new tool results of size bytes
// each, from n parallel calls of tool in one response, as Claude Code writes them (one record
// per tool_use sharing message.id, each result parented on its own tool_use record).
func hostileTurn(n, size int, tool string) []transcript.Record {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var recs []transcript.Record
	add := func(typ transcript.RecordType, parent string, m *transcript.Message) string {
		u := fmt.Sprintf("00000000-0000-4000-8000-%012d", len(recs)+1)
		recs = append(recs, transcript.Record{Type: typ, UUID: u, ParentUUID: parent, SessionID: "s",
			Timestamp: t0.Add(time.Duration(len(recs)) * time.Second).Format(time.RFC3339), Message: m})
		return u
	}
	last := add(transcript.TypeUser, "", &transcript.Message{Role: transcript.RoleUser, StringContent: true,
		Content: []transcript.Block{&transcript.Text{Text: "run the tools"}}})
	uses := make([]string, n)
	for i := range n {
		last = add(transcript.TypeAssistant, last, &transcript.Message{ID: "msg_1", Type: "message", Role: transcript.RoleAssistant,
			Model: "claude-sonnet-4-5", Usage: &transcript.Usage{InputTokens: 100, OutputTokens: 10},
			Content: []transcript.Block{&transcript.ToolUse{ID: fmt.Sprintf("toolu_%05d", i), Name: tool, Input: []byte(`{"command":"cat big.log"}`)}}})
		uses[i] = last
	}
	for i := range n {
		// Every result differs: the counter memoizes by content.
		var out strings.Builder
		out.Grow(size + 100)
		for j := 0; out.Len() < size; j++ {
			fmt.Fprintf(&out, "%05d:%08d 2026-01-02T03:04:05Z worker-%d processed batch %d in %dms status=ok\n", i, j, j%16, j*7, (i+j)%997)
		}
		add(transcript.TypeUser, uses[i], &transcript.Message{Role: transcript.RoleUser, Content: []transcript.Block{
			&transcript.ToolResult{ToolUseID: fmt.Sprintf("toolu_%05d", i), StringContent: true,
				Content: []transcript.Block{&transcript.Text{Text: out.String()[:size]}}}}})
	}
	return recs
}

// BenchmarkHostileToolOutput prepares one turn that brings 100 MB of new tool output, in three
// shapes: 100 results of 1 MiB, one result of 100 MiB, 10,000 results of 10 KiB (each under
// the per-result cap; the per-message cap replaces most). Each iteration uses a new Pipeline
// (the default tiktoken counter, an empty memo), as a turn meets output it has never seen.
func BenchmarkHostileToolOutput(b *testing.B) {
	for _, shape := range []struct {
		name    string
		n, size int
	}{
		{"100x1MiB", 100, 1 << 20},
		{"1x100MiB", 1, 100 << 20},
		{"10000x10KiB", 10000, 10 << 10},
	} {
		recs := hostileTurn(shape.n, shape.size, "Bash")
		b.Run(shape.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				p, err := agentctx.New(agentctx.Config{Model: "claude-sonnet-4-5",
					Budget: agentctx.BudgetConfig{Store: &agentctx.MapStore{}}})
				if err != nil {
					b.Fatal(err)
				}
				res, err := p.Prepare(b.Context(), agentctx.Input{Records: recs})
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(res.Report.InputTokens), "tokens/op")
			}
		})
	}
}
