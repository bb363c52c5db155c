package host_test

import (
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
	"github.com/agentctx/agentctx/transcript"
	"github.com/stretchr/testify/require"
)

// TestSkillReinjected: a skill a Skill call loaded, written by the host as an injected user
// message naming the call (Message.SourceToolUseID), is re-injected after a compaction
// through the host path as through the session path, in the same bytes; without the call's
// id the host path cannot tell the message is a skill's, and does not.
func TestSkillReinjected(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	now := start
	sess := session.New(session.Options{ID: "conv-k", Now: func() time.Time { return now }})
	named := &hostConv{c: host.Conversation{ID: "conv-k", Store: &host.MemoryStore{}, Memo: &host.Memo{}}}
	bare := &hostConv{c: host.Conversation{ID: "conv-k", Store: &host.MemoryStore{}}}
	add := func(m func() *transcript.Message, skill string) {
		now = now.Add(10 * time.Second)
		for _, h := range []*hostConv{named, bare} {
			hm := host.Message{ID: fmt.Sprintf("row-%d", len(h.msgs)+1), Message: m(), Time: now}
			if skill != "" {
				hm.Injected = true
				if h == named {
					hm.SourceToolUseID = skill
				}
			}
			h.msgs = append(h.msgs, hm)
		}
		r := sess.Record(transcript.RecordType(m().Role), m())
		r.IsMeta, r.SourceToolUseID = skill != "", skill
		require.NoError(t, sess.Append(r))
	}
	user := func(s string) func() *transcript.Message {
		return func() *transcript.Message {
			return &transcript.Message{Role: transcript.RoleUser, Content: []transcript.Block{&transcript.Text{Text: s}}}
		}
	}
	answer := func(blocks ...func() transcript.Block) func() *transcript.Message {
		return func() *transcript.Message {
			m := &transcript.Message{Role: transcript.RoleAssistant, Model: "claude-sonnet-4-5", StopReason: "end_turn"}
			for _, b := range blocks {
				m.Content = append(m.Content, b())
			}
			return m
		}
	}
	textBlock := func(s string) func() transcript.Block {
		return func() transcript.Block { return &transcript.Text{Text: s} }
	}
	add(user("Write the parser in our house style."), "")
	add(answer(func() transcript.Block {
		return &transcript.ToolUse{ID: "toolu_skill", Name: "Skill", Input: json.RawMessage(`{"skill":"go-style"}`)}
	}), "")
	add(func() *transcript.Message {
		return &transcript.Message{Role: transcript.RoleUser, Content: []transcript.Block{transcript.TextResult("toolu_skill", "Launching skill: go-style")}}
	}, "")
	add(user("Go style: short names, no stutter, errors wrapped with the call that failed."), "toolu_skill")
	for k := range 12 {
		add(user(fmt.Sprintf("Part %d of the grammar: %s", k, strings.Repeat("a rule with its cases and examples. ", 250))), "")
		add(answer(textBlock(fmt.Sprintf("Part %d parsed: %s", k, strings.Repeat("the node types and their tests. ", 120)))), "")
	}
	add(user("Now the error recovery."), "")

	var bodies []string
	var rehydrated [][]string
	for _, prepare := range []func(p *agentctx.Pipeline) (agentctx.Result, error){
		func(p *agentctx.Pipeline) (agentctx.Result, error) {
			return sess.Prepare(ctx, p, agentctx.Input{Tools: []provider.Tool{readLog}})
		},
		func(p *agentctx.Pipeline) (agentctx.Result, error) { return named.prepare(ctx, p) },
		func(p *agentctx.Pipeline) (agentctx.Result, error) { return bare.prepare(ctx, p) },
	} {
		res, err := prepare(newPipeline(t, root))
		require.NoError(t, err)
		c := res.Report.Compaction
		require.NotNil(t, c, "the conversation compacts")
		require.Equal(t, agentctx.CompactCompacted, c.Outcome, c.Reason)
		body, err := res.Request.MarshalJSON()
		require.NoError(t, err)
		bodies, rehydrated = append(bodies, string(body)), append(rehydrated, c.Rehydrated)
	}
	require.Contains(t, rehydrated[0], "skill go-style", "the session path re-injects the skill")
	require.Equal(t, rehydrated[0], rehydrated[1])
	require.Equal(t, bodies[0], bodies[1], "the host path sends the session path's bytes")
	require.NotContains(t, rehydrated[2], "skill go-style", "without the call's id, no skill is known")
}
