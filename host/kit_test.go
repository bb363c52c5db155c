package host_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/host"
	"github.com/agentctx/agentctx/provider"
	"github.com/agentctx/agentctx/session"
	"github.com/agentctx/agentctx/summarize"
	"github.com/agentctx/agentctx/transcript"
	"github.com/stretchr/testify/require"
)

var start = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)

var readLog = provider.Tool{Name: "read_log", Definition: json.RawMessage(`{"name":"read_log","description":"Read a shard's log.","input_schema":{"type":"object","properties":{"shard":{"type":"integer"}}}}`)}

// newPipeline returns a pipeline on a 24,000-token window that replaces big tool results
// (stored under root) and compacts with the extractive summarizer.
func newPipeline(t testing.TB, root string) *agentctx.Pipeline {
	t.Helper()
	p, err := agentctx.New(agentctx.Config{
		ContextWindow: 24_000, Tokens: agentctx.EstimateCounter{},
		Budget:  agentctx.BudgetConfig{Store: agentctx.FileStore{Root: root}},
		Compact: agentctx.CompactConfig{Summarizer: summarize.Extractive{}},
		// The clock reads an hour after the script starts: with the hour's TTL the cached
		// prefix is still warm then, so the cold-prefix rules (an early compaction, old
		// results cleared) do not move the script's decisions.
		Cache: agentctx.CacheConfig{TTL: "1h"},
		Now:   func() time.Time { return start.Add(time.Hour) },
	})
	require.NoError(t, err)
	return p
}

// conv is one side of a scripted conversation: the session path or the host path.
type conv interface {
	add(m *transcript.Message, at time.Time)
	prepare(ctx context.Context, p *agentctx.Pipeline) (agentctx.Result, error)
}

// sessionConv keeps the conversation in a session.Session.
type sessionConv struct {
	t   testing.TB
	s   *session.Session
	now time.Time
}

func (c *sessionConv) add(m *transcript.Message, at time.Time) {
	c.now = at
	var err error
	switch {
	case m.Role == transcript.RoleAssistant:
		_, err = c.s.Assistant(m)
	case len(m.Content) > 0 && m.Content[0].Kind() == transcript.KindToolResult:
		trs := make([]*transcript.ToolResult, len(m.Content))
		for i, b := range m.Content {
			trs[i] = b.(*transcript.ToolResult)
		}
		_, err = c.s.ToolResults(trs...)
	default:
		_, err = c.s.UserBlocks(m.Content...)
	}
	require.NoError(c.t, err)
}

func (c *sessionConv) prepare(ctx context.Context, p *agentctx.Pipeline) (agentctx.Result, error) {
	return c.s.Prepare(ctx, p, agentctx.Input{Tools: []provider.Tool{readLog}})
}

// hostConv keeps the messages in a slice, as a host's table, and the decisions in a store.
type hostConv struct {
	c    host.Conversation
	msgs []host.Message
	last host.Result
}

func (c *hostConv) add(m *transcript.Message, at time.Time) {
	c.msgs = append(c.msgs, host.Message{ID: fmt.Sprintf("row-%d", len(c.msgs)+1), Message: m, Time: at})
}

func (c *hostConv) prepare(ctx context.Context, p *agentctx.Pipeline) (agentctx.Result, error) {
	res, err := c.c.Prepare(ctx, p, c.msgs, agentctx.Input{Tools: []provider.Tool{readLog}})
	c.last = res
	return res.Result, err
}

// script plays turns from..to-1 of the scripted conversation on each side at once: a
// prompt, a request, a tool call, its output (a big one every third turn), a request, an
// answer. It returns each request's bytes, side by side.
func script(t testing.TB, ctx context.Context, from, to int, sides []conv, pipes []*agentctx.Pipeline) [][][]byte {
	t.Helper()
	var out [][][]byte
	at := start
	step := func(m func() *transcript.Message) {
		at = at.Add(10 * time.Second)
		for _, s := range sides {
			s.add(m(), at)
		}
	}
	send := func() []agentctx.Result {
		var row [][]byte
		var ress []agentctx.Result
		for i, s := range sides {
			res, err := s.prepare(ctx, pipes[i])
			require.NoError(t, err)
			b, err := res.Request.MarshalJSON()
			require.NoError(t, err)
			row, ress = append(row, b), append(ress, res)
		}
		out = append(out, row)
		return ress
	}
	for k := range to {
		prompt := func() *transcript.Message {
			return &transcript.Message{Role: transcript.RoleUser, Content: []transcript.Block{&transcript.Text{Text: fmt.Sprintf("Step %d: inspect the log of shard %d.", k, k)}}}
		}
		id := fmt.Sprintf("toolu_%02d", k)
		call := func() *transcript.Message {
			return &transcript.Message{Role: transcript.RoleAssistant, ID: fmt.Sprintf("msg_%d_a", k), Model: "claude-sonnet-4-5", StopReason: "tool_use",
				Content: []transcript.Block{&transcript.ToolUse{ID: id, Name: "read_log", Input: json.RawMessage(fmt.Sprintf(`{"shard":%d}`, k))}}}
		}
		size := 100
		if k%3 == 2 {
			size = 2_000
		}
		output := func() *transcript.Message {
			return &transcript.Message{Role: transcript.RoleUser, Content: []transcript.Block{transcript.TextResult(id, strings.Repeat(fmt.Sprintf("shard %d: line ok, latency 12ms, bytes 4096\n", k), size))}}
		}
		answer := func() *transcript.Message {
			return &transcript.Message{Role: transcript.RoleAssistant, ID: fmt.Sprintf("msg_%d_b", k), Model: "claude-sonnet-4-5", StopReason: "end_turn",
				Content: []transcript.Block{&transcript.Text{Text: fmt.Sprintf("Shard %d looks healthy; its latency is steady.", k)}}}
		}
		if k < from {
			for _, m := range []func() *transcript.Message{prompt, call, output, answer} {
				step(m)
			}
			continue
		}
		step(prompt)
		send()
		step(call)
		step(output)
		send()
		step(answer)
	}
	return out
}

// rebuilt returns msgs as a host that reads them from its database each turn has them: new
// messages, new blocks and new strings, the same content (the script's kinds of blocks).
func rebuilt(t testing.TB, msgs []host.Message) []host.Message {
	out := make([]host.Message, len(msgs))
	for i, m := range msgs {
		out[i] = m
		out[i].ID = strings.Clone(m.ID)
		out[i].Message = rebuiltMessage(t, m.Message)
	}
	return out
}

// rebuiltMessage returns a copy of m in new memory throughout.
func rebuiltMessage(t testing.TB, m *transcript.Message) *transcript.Message {
	c := *m
	c.ID, c.Model, c.StopReason = strings.Clone(m.ID), strings.Clone(m.Model), strings.Clone(m.StopReason)
	if m.Usage != nil {
		u := *m.Usage
		c.Usage = &u
	}
	c.Content = rebuiltBlocks(t, m.Content)
	return &c
}

// rebuiltBlocks returns copies of blocks in new memory.
func rebuiltBlocks(t testing.TB, blocks []transcript.Block) []transcript.Block {
	out := make([]transcript.Block, len(blocks))
	for i, b := range blocks {
		switch b := b.(type) {
		case *transcript.Text:
			c := *b
			c.Text = strings.Clone(b.Text)
			out[i] = &c
		case *transcript.ToolUse:
			c := *b
			c.ID, c.Name, c.Input = strings.Clone(b.ID), strings.Clone(b.Name), bytes.Clone(b.Input)
			out[i] = &c
		case *transcript.ToolResult:
			c := *b
			c.ToolUseID, c.Content = strings.Clone(b.ToolUseID), rebuiltBlocks(t, b.Content)
			out[i] = &c
		default:
			t.Fatalf("rebuilt: a %s block", b.Kind())
		}
	}
	return out
}
