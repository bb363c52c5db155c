package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/host"
	"github.com/agentctx/agentctx/provider"
	"github.com/agentctx/agentctx/session"
	"github.com/agentctx/agentctx/transcript"
)

// TestRun runs twelve turns: big outputs are replaced by previews naming files the runtime
// can open, the conversation is compacted, and the decisions live in their own store.
func TestRun(t *testing.T) {
	dir := t.TempDir()
	clock := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	rt, err := NewRuntime(dir, func() time.Time { return clock })
	require.NoError(t, err)
	var out bytes.Buffer
	for range 12 {
		require.NoError(t, rt.Turn(t.Context(), "conv-1", "Check the next shard.", &out))
		clock = clock.Add(time.Minute)
	}
	res, err := rt.Prepare(t.Context(), "conv-1")
	require.NoError(t, err)
	require.Empty(t, res.Dropped)
	require.NoError(t, provider.Validate(res.Request, provider.ValidateOptions{}))

	stored, err := rt.Decisions.Load(t.Context(), "conv-1")
	require.NoError(t, err)
	kinds := map[transcript.Subtype]int{}
	for _, r := range stored {
		kinds[r.Subtype]++
	}
	require.Positive(t, kinds[transcript.SubtypeToolResultBudget], out.String())
	require.Positive(t, kinds[transcript.SubtypeCompactBoundary], out.String())

	body, err := res.Request.MarshalJSON()
	require.NoError(t, err)
	m := regexp.MustCompile(`Full output saved to: ([^ \\]+\.txt)`).FindSubmatch(body)
	require.NotNil(t, m, "a preview names where the full output is")
	full, err := os.ReadFile(string(m[1]))
	require.NoError(t, err, "the runtime's tools can open the file the preview names")
	require.Contains(t, string(full), "request served in 12ms")
	require.True(t, strings.HasPrefix(string(m[1]), filepath.Join(dir, "tool-results")))
}

// TestSameBytesAsSession: the runtime's requests are, step by step, the bytes a
// session.Session sends for the same conversation.
func TestSameBytesAsSession(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	clock := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	now := func() time.Time { return clock }
	rt, err := NewRuntime(dir, now)
	require.NoError(t, err)
	peer, err := NewRuntime(dir, now) // the same configuration for the session path
	require.NoError(t, err)
	s := session.New(session.Options{ID: "conv-1", Now: now})
	given := 0
	// catchUp hands the session the messages the runtime's table holds that it has not seen.
	catchUp := func() {
		msgs := Messages(rt.DB.Conversation("conv-1"))
		for _, m := range msgs[given:] {
			var err error
			switch {
			case m.Message.Role == transcript.RoleAssistant:
				_, err = s.Assistant(m.Message)
			case m.Message.Content[0].Kind() == transcript.KindToolResult:
				var trs []*transcript.ToolResult
				for _, b := range m.Message.Content {
					trs = append(trs, b.(*transcript.ToolResult))
				}
				_, err = s.ToolResults(trs...)
			default:
				_, err = s.UserBlocks(m.Message.Content...)
			}
			require.NoError(t, err)
		}
		given = len(msgs)
	}
	steps, compactions := 0, 0
	for range 12 {
		rt.DB.Insert(Row{Conv: "conv-1", Role: "user", Text: "Check the next shard.", CreatedAt: clock})
		for {
			catchUp()
			res, err := rt.Prepare(ctx, "conv-1")
			require.NoError(t, err)
			want, err := s.Prepare(ctx, peer.Pipeline, peerInput(peer))
			require.NoError(t, err)
			a, err := res.Request.MarshalJSON()
			require.NoError(t, err)
			b, err := want.Request.MarshalJSON()
			require.NoError(t, err)
			require.Equal(t, string(b), string(a), "step %d", steps)
			steps++
			for _, r := range res.Append {
				if r.IsCompactBoundary() {
					compactions++
				}
			}
			row := standIn(res.Request)
			row.Conv, row.CreatedAt = "conv-1", clock
			id := rt.DB.Insert(row)
			rt.DB.SetUsage(id, res.Report.InputTokens, 20)
			if row.CallID == "" {
				break
			}
			rt.DB.Insert(Row{Conv: "conv-1", Role: "tool", CallID: row.CallID, Text: runTool(row.Args), CreatedAt: clock})
		}
		catchUp()
		clock = clock.Add(time.Minute)
	}
	require.Positive(t, compactions)
	t.Logf("%d steps, %d compactions, the same bytes", steps, compactions)
}

// TestGlueUnder100Lines: the runtime's glue — conversion plus calls — stays small.
func TestGlueUnder100Lines(t *testing.T) {
	src, err := os.ReadFile("glue.go")
	require.NoError(t, err)
	require.Less(t, bytes.Count(src, []byte("\n")), 100)
}

// peerInput is the Input the runtime's Prepare passes, for the session path.
func peerInput(rt *Runtime) agentctx.Input { return agentctx.Input{System: rt.System, Tools: rt.Tools} }

// BenchmarkStep measures one more step of the runtime after twelve turns (48 rows), rows
// read and converted included: with the conversation's Memo (the runtime's Prepare) and
// without one, side by side.
func BenchmarkStep(b *testing.B) {
	clock := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	rt, err := NewRuntime(b.TempDir(), func() time.Time { return clock })
	require.NoError(b, err)
	for range 12 {
		require.NoError(b, rt.Turn(b.Context(), "conv-1", "Check the next shard.", io.Discard))
		clock = clock.Add(time.Minute)
	}
	b.Run("memo", func(b *testing.B) {
		for b.Loop() {
			if _, err := rt.Prepare(b.Context(), "conv-1"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("no-memo", func(b *testing.B) {
		c := host.Conversation{ID: "conv-1", Store: rt.Decisions}
		for b.Loop() {
			if _, err := c.Prepare(b.Context(), rt.Pipeline, Messages(rt.DB.Conversation("conv-1")), peerInput(rt)); err != nil {
				b.Fatal(err)
			}
		}
	})
}
