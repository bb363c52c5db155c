package main

import (
	"context"
	"encoding/json"
	"strconv"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/host"
	"github.com/agentctx/agentctx/transcript"
)

// This file is all the glue between the runtime and agentctx: its rows become messages, and
// one call a step builds the request from them and the stored decisions.

// Messages converts a conversation's rows: a user row is a prompt, an assistant row a text
// answer or a tool call (the calls of one step share the step's message), a tool row an
// output (consecutive outputs share one user message).
func Messages(rows []Row) []host.Message {
	var out []host.Message
	for _, r := range rows {
		var b transcript.Block
		role := transcript.RoleUser
		switch r.Role {
		case "user":
			b = &transcript.Text{Text: r.Text}
		case "assistant":
			role = transcript.RoleAssistant
			b = &transcript.Text{Text: r.Text}
			if r.CallID != "" {
				b = &transcript.ToolUse{ID: r.CallID, Name: r.Tool, Input: json.RawMessage(r.Args)}
			}
		case "tool":
			b = transcript.TextResult(r.CallID, r.Text)
		}
		if n := len(out); n > 0 && r.Role != "user" && sameTurn(out[n-1], role, r) {
			last := out[n-1].Message
			u := last.Usage
			if x := usage(r); x != nil {
				u = x
			}
			out[n-1].Message = &transcript.Message{Role: role, Content: append(last.Content[:len(last.Content):len(last.Content)], b), Usage: u}
			continue
		}
		out = append(out, host.Message{
			ID:      strconv.FormatInt(r.ID, 10),
			Message: &transcript.Message{Role: role, Content: []transcript.Block{b}, Usage: usage(r)},
			Time:    r.CreatedAt,
		})
	}
	return out
}

// sameTurn reports whether row r continues message m: another call of the same step, or
// another output answering it.
func sameTurn(m host.Message, role transcript.Role, r Row) bool {
	if m.Message.Role != role {
		return false
	}
	last := m.Message.Content[len(m.Message.Content)-1].Kind()
	if r.Role == "tool" {
		return last == transcript.KindToolResult
	}
	return r.CallID != "" && last == transcript.KindToolUse
}

// usage is an answer row's usage, once the step reported it.
func usage(r Row) *transcript.Usage {
	if r.InputTokens+r.OutputTokens == 0 {
		return nil
	}
	return &transcript.Usage{InputTokens: r.InputTokens, OutputTokens: r.OutputTokens}
}

// Prepare builds the request of conv's next step from its rows and the decisions agentctx
// stored, and stores the step's new decisions. The conversation's Memo keeps the last step's
// replay, so a step costs the rows added since (the messages, rebuilt from the rows, are
// compared with the last step's).
func (rt *Runtime) Prepare(ctx context.Context, conv string) (host.Result, error) {
	memo, _ := rt.memos.LoadOrStore(conv, &host.Memo{})
	c := host.Conversation{ID: conv, Store: rt.Decisions, Memo: memo.(*host.Memo)}
	return c.Prepare(ctx, rt.Pipeline, Messages(rt.DB.Conversation(conv)), agentctx.Input{System: rt.System, Tools: rt.Tools})
}
