package agentctx

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentctx/agentctx/provider"

	"github.com/agentctx/agentctx/transcript"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var normNow = time.Date(2026, 1, 3, 0, 0, 0, 0, time.UTC)

// normSig is shaped like a provider signature (base64, long enough to be one).
var normSig = "EqQBCkYIBxgCKkB" + strings.Repeat("x9+/", 20) + "=="

func normConfig() Config {
	return Config{ContextWindow: 200000, Tokens: EstimateCounter{}, Now: func() time.Time { return normNow }}
}

func normThinkingOn(c Config) Config {
	c.Thinking = &provider.Thinking{Type: "enabled", BudgetTokens: 2048}
	return c
}

// normPrepare runs Prepare and requires the request to pass Validate (with thinking off
// when the report says thinking is unavailable).
func normPrepare(t *testing.T, cfg Config, in Input) Result {
	t.Helper()
	p, err := New(cfg)
	require.NoError(t, err)
	res, err := p.Prepare(t.Context(), in)
	require.NoError(t, err)
	req := res.Request
	if res.Report.ThinkingUnavailable {
		require.Nil(t, req.Thinking, "thinking unavailable: the request is sent without it")
	}
	require.NoError(t, provider.Validate(req, provider.ValidateOptions{AllowPrefill: cfg.Normalize.AllowPrefill}), "request:\n%s", normSketch(req.Messages))
	again, err := p.Prepare(t.Context(), in)
	require.NoError(t, err)
	a, err := res.Request.MarshalJSON()
	require.NoError(t, err)
	b, err := again.Request.MarshalJSON()
	require.NoError(t, err)
	require.Equal(t, string(a), string(b), "Prepare twice must give identical bytes")
	require.Equal(t, res.Report.Stage("normalize"), again.Report.Stage("normalize"))
	return res
}

// normalizeItems runs the normalize stage alone over hand-made items.
func normalizeItems(t *testing.T, cfg Config, items []item, tools []provider.Tool) (provider.Request, *Report) {
	t.Helper()
	p, err := New(cfg)
	require.NoError(t, err)
	tn := p.newTurn(t.Context(), &Input{Tools: tools}, &transcript.Chain{})
	tn.items = items
	tn.report.stage("normalize")
	require.NoError(t, p.stages.normalize.run(tn))
	p.finish(tn)
	req := tn.req
	if tn.report.ThinkingUnavailable {
		require.Nil(t, req.Thinking, "thinking unavailable: the request is sent without it")
	}
	require.NoError(t, provider.Validate(req, provider.ValidateOptions{AllowPrefill: cfg.Normalize.AllowPrefill}), "request:\n%s", normSketch(req.Messages))
	return tn.req, tn.report
}

func normUser(uuid string, bs ...transcript.Block) item {
	return item{uuid: uuid, role: transcript.RoleUser, blocks: bs}
}

func normAsst(uuid, msgID string, bs ...transcript.Block) item {
	return item{uuid: uuid, role: transcript.RoleAssistant, msgID: msgID, blocks: bs}
}

// normSketch renders messages one line each: "role: block block …".
func normSketch(msgs []provider.Message) string {
	var b strings.Builder
	for _, m := range msgs {
		b.WriteString(string(m.Role) + ":")
		for _, bl := range m.Content {
			b.WriteString(" " + normSketchBlock(bl))
		}
		b.WriteByte('\n')
	}
	return b.String()
}

func normSketchBlock(b transcript.Block) string {
	switch b := b.(type) {
	case *transcript.Text:
		return fmt.Sprintf("text(%s)", b.Text)
	case *transcript.ToolUse:
		return "tool_use(" + b.ID + ")"
	case *transcript.ToolResult:
		var s strings.Builder
		s.WriteString("tool_result(" + b.ToolUseID)
		if b.IsError {
			s.WriteString("!")
		}
		for _, c := range b.Content {
			s.WriteString(" " + normSketchBlock(c))
		}
		return s.String() + ")"
	case *transcript.ServerToolUse:
		return "server_tool_use(" + b.ID + ")"
	case *transcript.ServerToolResult:
		return string(b.Type) + "(" + b.ToolUseID + ")"
	case *transcript.ToolReference:
		return "tool_reference(" + b.ToolName + ")"
	}
	return string(b.Kind())
}

func normLines(s ...string) string { return strings.Join(s, "\n") + "\n" }

// normDetails returns "kind: detail" for each normalize action.
func normDetails(r *Report) []string {
	var out []string
	for _, a := range r.Stage("normalize").Actions {
		out = append(out, string(a.Kind)+": "+a.Detail)
	}
	return out
}

func normHasAction(r *Report, kind ActionKind, detail string) bool {
	for _, a := range r.Stage("normalize").Actions {
		if a.Kind == kind && strings.Contains(a.Detail, detail) {
			return true
		}
	}
	return false
}

// more appends an assistant record to the response of the previous assistant record (same
// message id), the way Claude Code writes a block that arrives after a tool result.
func normMore(k *tk, b transcript.Block) {
	var id string
	for i := len(k.recs) - 1; i >= 0; i-- {
		if k.recs[i].Type == transcript.TypeAssistant {
			id = k.recs[i].Message.ID
			break
		}
	}
	r := k.next(transcript.TypeAssistant)
	r.Message = &transcript.Message{ID: id, Type: "message", Role: transcript.RoleAssistant, Model: "claude-sonnet-4-5", Content: []transcript.Block{b}}
	k.add(r)
}

func TestNormalizeTranscripts(t *testing.T) {
	thinking := func(s string) *transcript.Thinking { return &transcript.Thinking{Thinking: s, Signature: normSig} }
	tests := []struct {
		name    string
		build   func(k *tk)
		cfg     func(Config) Config
		want    string   // normSketch of the request messages
		actions []string // substrings of "kind: detail" that must be reported
		check   func(t *testing.T, res Result)
	}{
		{
			name:    "trailing assistant gets a continuation",
			build:   func(k *tk) { k.user("hi"); k.assistant(text("hello")) },
			want:    normLines("user: text(hi)", "assistant: text(hello)", "user: text(Continue.)"),
			actions: []string{"repaired: ended on an assistant message"},
		},
		{
			name: "custom continuation",
			build: func(k *tk) {
				k.user("hi")
				k.assistant(text("hello"))
			},
			cfg:  func(c Config) Config { c.Normalize.Continuation = "Go on."; return c },
			want: normLines("user: text(hi)", "assistant: text(hello)", "user: text(Go on.)"),
		},
		{
			name: "prefill allowed keeps the trailing assistant, trimmed",
			build: func(k *tk) {
				k.user("hi")
				k.assistant(text("The answer is "))
			},
			cfg:     func(c Config) Config { c.Normalize.AllowPrefill = true; return c },
			want:    normLines("user: text(hi)", "assistant: text(The answer is)"),
			actions: []string{"repaired: trailing whitespace trimmed"},
		},
		{
			name: "parallel tool calls split over records",
			build: func(k *tk) {
				k.user("look")
				k.assistant(text("reading"), toolUse("t1", "Read"), toolUse("t2", "Read"), toolUse("t3", "Grep"))
				k.results(result("t3", "r3"), result("t1", "r1"), result("t2", "r2"))
				k.assistant(text("done"))
				k.user("thanks")
			},
			want: normLines(
				"user: text(look)",
				"assistant: text(reading) tool_use(t1) tool_use(t2) tool_use(t3)",
				"user: tool_result(t1 text(r1)) tool_result(t2 text(r2)) tool_result(t3 text(r3))",
				"assistant: text(done)",
				"user: text(thanks)"),
		},
		{
			name: "results written while the response streamed",
			build: func(k *tk) {
				k.user("look")
				k.assistant(text("reading"), toolUse("t1", "Read"))
				k.results(result("t1", "r1"))
				normMore(k, toolUse("t2", "Read"))
				k.results(result("t2", "r2"))
				k.assistant(text("done"))
				k.user("ok")
			},
			want: normLines(
				"user: text(look)",
				"assistant: text(reading) tool_use(t1) tool_use(t2)",
				"user: tool_result(t1 text(r1)) tool_result(t2 text(r2))",
				"assistant: text(done)",
				"user: text(ok)"),
			actions: []string{"repaired: 1 user records written inside split response msg_0001 moved after it"},
		},
		{
			name: "interrupted call at the end gets a synthesized result",
			build: func(k *tk) {
				k.user("run it")
				k.assistant(text("running"), toolUse("t1", "Bash"), toolUse("t2", "Bash"))
				k.results(result("t1", "ok"))
			},
			want: normLines(
				"user: text(run it)",
				"assistant: text(running) tool_use(t1) tool_use(t2)",
				"user: tool_result(t1 text(ok)) tool_result(t2! text([Tool call interrupted: no result was recorded]))"),
			actions: []string{"repaired: tool_use without a tool_result: synthesized"},
		},
		{
			name: "tool_use with no result and no next message",
			build: func(k *tk) {
				k.user("run it")
				k.assistant(toolUse("t1", "Bash"))
			},
			want: normLines(
				"user: text(run it)",
				"assistant: tool_use(t1)",
				"user: tool_result(t1! text([Tool call interrupted: no result was recorded]))"),
			actions: []string{"repaired: inserted a user message for the tool results"},
		},
		{
			name: "rejected tool with interrupt notice",
			build: func(k *tk) {
				k.user("edit it")
				k.assistant(toolUse("t1", "Edit"))
				rej := result("t1", "The user doesn't want to proceed with this tool use.")
				rej.IsError = true
				last := k.results(rej)
				k.user("[Request interrupted by user for tool use]").ParentUUID = last.UUID
			},
			want: normLines(
				"user: text(edit it)",
				"assistant: tool_use(t1)",
				"user: tool_result(t1! text(The user doesn't want to proceed with this tool use.)) text([Request interrupted by user for tool use])"),
		},
		{
			name: "real thinking kept byte for byte in the tool loop",
			build: func(k *tk) {
				k.user("think")
				k.assistant(thinking("hmm"), toolUse("t1", "Read"))
				k.results(result("t1", "r1"))
			},
			cfg: normThinkingOn,
			want: normLines(
				"user: text(think)",
				"assistant: thinking tool_use(t1)",
				"user: tool_result(t1 text(r1))"),
			check: func(t *testing.T, res Result) {
				assert.False(t, res.Report.ThinkingUnavailable)
				th, ok := res.Request.Messages[1].Content[0].(*transcript.Thinking)
				require.True(t, ok)
				assert.Equal(t, normSig, th.Signature)
				enc, err := transcript.MarshalBlock(th)
				require.NoError(t, err)
				assert.Equal(t, `{"type":"thinking","thinking":"hmm","signature":"`+normSig+`"}`, string(enc))
			},
		},
		{
			name: "redacted signature cannot be replayed: thinking unavailable",
			build: func(k *tk) {
				k.user("think")
				k.assistant(&transcript.Thinking{Thinking: "hmm", Signature: "[REDACTED_SIGNATURE]"}, toolUse("t1", "Read"))
				k.results(result("t1", "r1"))
			},
			cfg: normThinkingOn,
			want: normLines(
				"user: text(think)",
				"assistant: tool_use(t1)",
				"user: tool_result(t1 text(r1))"),
			actions: []string{"dropped: thinking block without a replayable signature", "repaired: this request is sent with thinking disabled"},
			check: func(t *testing.T, res Result) {
				assert.True(t, res.Report.ThinkingUnavailable)
				assert.Nil(t, res.Request.Thinking, "sent with thinking disabled")
				withThinking := res.Request
				withThinking.Thinking = &provider.Thinking{Type: "enabled", BudgetTokens: 2048}
				assert.Error(t, provider.Validate(withThinking, provider.ValidateOptions{}), "with thinking on the request would break 4.2")
			},
		},
		{
			name: "thinking unavailable strips the turn's other thinking",
			build: func(k *tk) {
				k.user("think")
				k.assistant(toolUse("t1", "Read"))
				k.results(result("t1", "r1"))
				k.assistant(thinking("later"), toolUse("t2", "Read"))
				k.results(result("t2", "r2"))
			},
			cfg: normThinkingOn,
			want: normLines(
				"user: text(think)",
				"assistant: tool_use(t1)",
				"user: tool_result(t1 text(r1))",
				"assistant: tool_use(t2)",
				"user: tool_result(t2 text(r2))"),
			actions: []string{"dropped: thinking unavailable for the assistant turn in flight"},
			check:   func(t *testing.T, res Result) { assert.True(t, res.Report.ThinkingUnavailable) },
		},
		{
			// Sent without thinking, the request holds none, in any turn: the turn's next
			// request goes without thinking too and sends this one's messages again.
			name: "thinking unavailable strips the earlier turns' thinking too",
			build: func(k *tk) {
				k.user("one")
				k.assistant(thinking("first"), text("answer one"))
				k.user("two")
				k.assistant(toolUse("t1", "Read"))
				k.results(result("t1", "r1"))
			},
			cfg: normThinkingOn,
			want: normLines(
				"user: text(one)",
				"assistant: text(answer one)",
				"user: text(two)",
				"assistant: tool_use(t1)",
				"user: tool_result(t1 text(r1))"),
			actions: []string{"dropped: thinking unavailable for the assistant turn in flight: no thinking block is sent, in any message"},
			check:   func(t *testing.T, res Result) { assert.True(t, res.Report.ThinkingUnavailable) },
		},
		{
			// The final turn must not hold thinking with thinking disabled (4.5); the earlier
			// turns lose theirs too, so that a message is sent the same way once it is no
			// longer final and the cached prefix holds.
			name: "thinking disabled: no turn keeps thinking",
			build: func(k *tk) {
				k.user("one")
				k.assistant(thinking("first"), text("answer one"))
				k.user("two")
				k.assistant(&transcript.RedactedThinking{Data: "opaque=="}, thinking("second"), toolUse("t1", "Read"))
				k.results(result("t1", "r1"))
			},
			want: normLines(
				"user: text(one)",
				"assistant: text(answer one)",
				"user: text(two)",
				"assistant: tool_use(t1)",
				"user: tool_result(t1 text(r1))"),
			actions: []string{"dropped: " + thinkingOff},
		},
		{
			name: "thinking-only response is dropped",
			build: func(k *tk) {
				k.user("one")
				k.assistant(text("answer"))
				k.user("two")
				k.assistant(thinking("cut off"))
				k.user("three")
			},
			cfg:     normThinkingOn,
			want:    normLines("user: text(one)", "assistant: text(answer)", "user: text(two) text(three)"),
			actions: []string{"dropped: assistant message cannot end with thinking", "dropped: empty assistant message"},
		},
		{
			name: "redacted_thinking passes through unchanged",
			cfg:  normThinkingOn,
			build: func(k *tk) {
				k.user("q")
				k.assistant(&transcript.RedactedThinking{Data: "opaque=="}, text("a"))
				k.user("q2")
			},
			want: normLines("user: text(q)", "assistant: redacted_thinking text(a)", "user: text(q2)"),
			check: func(t *testing.T, res Result) {
				enc, err := transcript.MarshalBlock(res.Request.Messages[1].Content[0])
				require.NoError(t, err)
				assert.Equal(t, `{"type":"redacted_thinking","data":"opaque=="}`, string(enc))
			},
		},
		{
			name: "API error, synthetic, virtual and display-only records are not sent",
			build: func(k *tk) {
				k.user("q")
				k.assistant(text("API Error: 529 overloaded")).IsAPIErrorMessage = true
				k.assistant(text("No response requested.")).Message.Model = "<synthetic>"
				k.user("virtual").IsVirtual = true
				k.user("shown only").IsVisibleInTranscriptOnly = true
				k.assistant(text("real"))
				k.user("next")
			},
			want: normLines("user: text(q)", "assistant: text(real)", "user: text(next)"),
			actions: []string{
				"dropped: synthetic assistant message", "dropped: virtual message", "dropped: display-only message",
			},
		},
		{
			name: "compact summary is sent",
			build: func(k *tk) {
				s := k.user("This session is being continued from a previous conversation.")
				s.IsCompactSummary, s.IsVisibleInTranscriptOnly = true, true
				k.assistant(text("ok"))
				k.user("go")
			},
			want: normLines("user: text(This session is being continued from a previous conversation.)", "assistant: text(ok)", "user: text(go)"),
		},
		{
			name: "whitespace text dropped and transcript fields stripped",
			build: func(k *tk) {
				k.user("q")
				tu := toolUse("t1", "Read")
				tu.Extra = map[string]json.RawMessage{"caller": []byte(`{"type":"direct"}`)}
				tu.CacheControl = transcript.Ephemeral()
				k.assistant(text("\n\n"), tu)
				k.results(result("t1", "r"))
			},
			want:    normLines("user: text(q)", "assistant: tool_use(t1)", "user: tool_result(t1 text(r))"),
			actions: []string{"dropped: empty or whitespace-only text block"},
			check: func(t *testing.T, res Result) {
				enc, err := transcript.MarshalBlock(res.Request.Messages[1].Content[0])
				require.NoError(t, err)
				assert.Equal(t, `{"type":"tool_use","id":"t1","name":"Read","input":{"path":"x"}}`, string(enc))
			},
		},
		{
			name: "empty tool input becomes an object",
			build: func(k *tk) {
				k.user("q")
				k.assistant(&transcript.ToolUse{ID: "t1", Name: "Read"}, &transcript.ToolUse{ID: "t2", Name: "Read", Input: json.RawMessage(`"x"`)})
				k.results(result("t1", "r"), result("t2", "r"))
				k.user("more")
			},
			want: normLines("user: text(q)", "assistant: tool_use(t1) tool_use(t2)", "user: tool_result(t1 text(r)) tool_result(t2 text(r)) text(more)"),
			check: func(t *testing.T, res Result) {
				for _, b := range res.Request.Messages[1].Content {
					assert.JSONEq(t, `{}`, string(b.(*transcript.ToolUse).Input))
				}
			},
			actions: []string{"repaired: tool input missing or null", "repaired: tool input is not a JSON object"},
		},
		{
			name: "images stay; image in an assistant message becomes a placeholder",
			build: func(k *tk) {
				img := &transcript.Image{Source: transcript.MediaSource{Type: "base64", MediaType: "image/png", Data: "iVBORw0KGgo="}}
				r := k.user("see")
				r.Message.StringContent = false
				r.Message.Content = append(r.Message.Content, img)
				k.assistant(img)
				k.user("again")
			},
			want:    normLines("user: text(see) image", "assistant: text([unsupported block: image])", "user: text(again)"),
			actions: []string{"repaired: image block not accepted in a assistant message: replaced by a text placeholder"},
		},
		{
			name: "unknown blocks dropped",
			build: func(k *tk) {
				r := k.user("q")
				r.Message.StringContent = false
				r.Message.Content = append(r.Message.Content, &transcript.UnknownBlock{Type: "fancy", JSON: []byte(`{"type":"fancy"}`)})
				k.assistant(text("a"))
				r = k.user("")
				r.Message.StringContent = false
				r.Message.Content = []transcript.Block{&transcript.UnknownBlock{Type: "fancy", JSON: []byte(`{"type":"fancy"}`)}}
			},
			want:    normLines("user: text(q)", "assistant: text(a)", "user: text([unsupported block: fancy])"),
			actions: []string{"dropped: fancy block not accepted in a user message", "repaired: fancy block not accepted in a user message: replaced by a text placeholder"},
		},
		{
			name: "ids the provider rejects are rewritten consistently",
			build: func(k *tk) {
				k.user("q")
				k.assistant(toolUse("call.1:abc", "Read"))
				k.results(result("call.1:abc", "r"))
			},
			want:    normLines("user: text(q)", "assistant: tool_use(toolu_fix_ada329ff60da463faac7c2a1)", "user: tool_result(toolu_fix_ada329ff60da463faac7c2a1 text(r))"),
			actions: []string{"repaired: tool id does not match ^[a-zA-Z0-9_-]+$: rewritten to toolu_fix_"},
		},
		{
			name: "empty tool result content gets a placeholder",
			build: func(k *tk) {
				k.user("q")
				k.assistant(toolUse("t1", "Bash"), toolUse("t2", "Bash"))
				k.results(&transcript.ToolResult{ToolUseID: "t1", StringContent: true}, &transcript.ToolResult{ToolUseID: "t2", IsError: true, Content: []transcript.Block{text("  ")}})
			},
			want:    normLines("user: text(q)", "assistant: tool_use(t1) tool_use(t2)", "user: tool_result(t1 text((no content))) tool_result(t2! text((no content)))"),
			actions: []string{"repaired: empty tool_result content replaced by (no content)"},
		},
		{
			name: "tools: caller's first, then stubs for history names, sorted",
			build: func(k *tk) {
				k.user("q")
				k.assistant(toolUse("t1", "Read"), toolUse("t2", "Bash"), toolUse("t3", "Agent"))
				k.results(result("t1", "r"), result("t2", "r"), result("t3", "r"))
			},
			want:    normLines("user: text(q)", "assistant: tool_use(t1) tool_use(t2) tool_use(t3)", "user: tool_result(t1 text(r)) tool_result(t2 text(r)) tool_result(t3 text(r))"),
			actions: []string{"repaired: tool Agent is used in the history but not in Input.Tools", "repaired: tool Bash is used"},
			check: func(t *testing.T, res Result) {
				var names []string
				for _, tl := range res.Request.Tools {
					names = append(names, tl.Name)
				}
				assert.Equal(t, []string{"Read", "Agent", "Bash"}, names)
				assert.JSONEq(t, `{"name":"Agent","description":"Not available in this session: declared only because earlier messages of the conversation call it. Do not call it.","input_schema":{"type":"object"}}`, string(res.Request.Tools[1].Definition))
			},
		},
		{
			name: "tool_reference kept when declared, text otherwise",
			build: func(k *tk) {
				k.user("find tools")
				k.assistant(toolUse("t1", "ToolSearch"))
				k.results(&transcript.ToolResult{ToolUseID: "t1", Content: []transcript.Block{&transcript.ToolReference{ToolName: "Read"}, &transcript.ToolReference{ToolName: "WebSearch"}}})
			},
			want: normLines("user: text(find tools)", "assistant: tool_use(t1)",
				"user: tool_result(t1 tool_reference(Read) text([tool_reference: WebSearch]))"),
			actions: []string{`repaired: tool_reference to "WebSearch", which Input.Tools does not declare, sent as text`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := newTK()
			tt.build(k)
			cfg := normConfig()
			if tt.cfg != nil {
				cfg = tt.cfg(cfg)
			}
			tools := []provider.Tool{{Name: "Read", Definition: json.RawMessage(`{"name":"Read","input_schema":{"type":"object"}}`)}}
			res := normPrepare(t, cfg, Input{Records: k.recs, Tools: tools})
			assert.Equal(t, tt.want, normSketch(res.Request.Messages))
			for _, want := range tt.actions {
				kind, detail, _ := strings.Cut(want, ": ")
				assert.True(t, normHasAction(&res.Report, ActionKind(kind), detail), "missing action %q in %q", want, normDetails(&res.Report))
			}
			if tt.check != nil {
				tt.check(t, res)
			}
		})
	}
}

func TestNormalizeItems(t *testing.T) {
	tests := []struct {
		name    string
		items   []item
		cfg     func(Config) Config
		want    string
		actions []string
	}{
		{
			name: "leading assistant message gets a user message before it",
			items: []item{
				normAsst("a1", "m1", text("hello")),
				normUser("u1", text("hi")),
			},
			want:    normLines("user: text([conversation continues])", "assistant: text(hello)", "user: text(hi)"),
			actions: []string{"repaired: first message was an assistant message"},
		},
		{
			name: "orphan result dropped, emptied message dropped, neighbours merged",
			items: []item{
				normUser("u1", text("q")),
				normAsst("a1", "m1", text("one")),
				normUser("u2", result("ghost", "boo")),
				normAsst("a2", "m2", text("two")),
				normUser("u3", text("next")),
			},
			want:    normLines("user: text(q)", "assistant: text(one) text(two)", "user: text(next)"),
			actions: []string{"dropped: tool_result without a tool_use", "dropped: empty user message"},
		},
		{
			name: "misplaced result moved after its tool_use",
			items: []item{
				normUser("u1", text("q")),
				normAsst("a1", "m1", toolUse("t1", "Read")),
				normUser("u2", text("by the way")),
				normAsst("a2", "m2", text("ok")),
				normUser("u3", result("t1", "r1")),
				normUser("u4", text("go")),
			},
			want: normLines("user: text(q)", "assistant: tool_use(t1)", "user: tool_result(t1 text(r1)) text(by the way)",
				"assistant: text(ok)", "user: text(go)"),
			actions: []string{"repaired: tool_result moved to the message after its tool_use"},
		},
		{
			name: "ambiguous misplaced results dropped",
			items: []item{
				normUser("u1", text("q")),
				normAsst("a1", "m1", toolUse("t1", "Read")),
				normUser("u2", text("hm")),
				normAsst("a2", "m2", text("ok")),
				normUser("u3", result("t1", "x"), text("go")),
				normAsst("a3", "m3", text("ok2")),
				normUser("u4", result("t1", "y"), text("go2")),
			},
			want: normLines("user: text(q)", "assistant: tool_use(t1)",
				"user: tool_result(t1! text([Tool call interrupted: no result was recorded])) text(hm)",
				"assistant: text(ok)", "user: text(go)", "assistant: text(ok2)", "user: text(go2)"),
			actions: []string{"dropped: tool_result away from its tool_use, and not the only one: ambiguous"},
		},
		{
			name: "duplicate tool_use ids: later one and its result dropped",
			items: []item{
				normUser("u1", text("q")),
				normAsst("a1", "m1", toolUse("t1", "Read")),
				normUser("u2", result("t1", "first")),
				normAsst("a2", "m2", text("again"), toolUse("t1", "Read")),
				normUser("u3", result("t1", "second")),
			},
			want: normLines("user: text(q)", "assistant: tool_use(t1)", "user: tool_result(t1 text(first))",
				"assistant: text(again)", "user: text(Continue.)"),
			actions: []string{"dropped: duplicate tool_use id", "dropped: tool_result away from its tool_use, which already has a result"},
		},
		{
			name: "duplicate tool_result in one message: first kept",
			items: []item{
				normUser("u1", text("q")),
				normAsst("a1", "m1", toolUse("t1", "Read")),
				normUser("u2", result("t1", "first")),
				normUser("u3", result("t1", "second")),
			},
			want:    normLines("user: text(q)", "assistant: tool_use(t1)", "user: tool_result(t1 text(first))"),
			actions: []string{"dropped: duplicate tool_result"},
		},
		{
			name: "text before results is moved after them; results in tool_use order",
			items: []item{
				normUser("u1", text("q")),
				normAsst("a1", "m1", toolUse("t1", "Read"), toolUse("t2", "Read")),
				normUser("u2", text("<system-reminder>note</system-reminder>")),
				normUser("u3", result("t2", "r2")),
				normUser("u4", result("t1", "r1")),
			},
			want: normLines("user: text(q)", "assistant: tool_use(t1) tool_use(t2)",
				"user: tool_result(t1 text(r1)) tool_result(t2 text(r2)) text(<system-reminder>note</system-reminder>)"),
			actions: []string{"repaired: tool_result blocks moved before the other content"},
		},
		{
			name: "merged responses: thinking moved to the front",
			items: []item{
				normUser("u1", text("q")),
				normAsst("a1", "m1", text("first")),
				normAsst("a2", "m2", &transcript.Thinking{Thinking: "t", Signature: normSig}, toolUse("t1", "Read")),
				normUser("u2", result("t1", "r")),
			},
			cfg:     normThinkingOn,
			want:    normLines("user: text(q)", "assistant: thinking text(first) tool_use(t1)", "user: tool_result(t1 text(r))"),
			actions: []string{"repaired: 1 thinking blocks moved to the front of a merged assistant message"},
		},
		{
			name: "server tools: pairs kept, unpaired dropped",
			items: []item{
				normUser("u1", text("search")),
				normAsst("a1", "m1",
					&transcript.ServerToolUse{ID: "srvtoolu_1", Name: "web_search", Input: json.RawMessage(`{"query":"go"}`)},
					&transcript.ServerToolResult{Type: "web_search_tool_result", ToolUseID: "srvtoolu_1", Content: json.RawMessage(`[]`)},
					&transcript.ServerToolResult{Type: "web_search_tool_result", ToolUseID: "srvtoolu_9", Content: json.RawMessage(`[]`)},
					&transcript.ServerToolUse{ID: "srvtoolu_2", Name: "web_search", Input: json.RawMessage(`{"query":"rust"}`)},
					text("found")),
				normUser("u2", text("thanks")),
			},
			want: normLines("user: text(search)", "assistant: server_tool_use(srvtoolu_1) web_search_tool_result(srvtoolu_1) text(found)", "user: text(thanks)"),
			actions: []string{
				"dropped: web_search_tool_result without a server_tool_use before it",
				"dropped: server_tool_use without its result in the same message",
			},
		},
		{
			name: "server_tool_use id repeated in a later message: later pair dropped",
			items: []item{
				normUser("u1", text("search")),
				normAsst("a1", "m1",
					&transcript.ServerToolUse{ID: "srvtoolu_1", Name: "web_search", Input: json.RawMessage(`{"query":"go"}`)},
					&transcript.ServerToolResult{Type: "web_search_tool_result", ToolUseID: "srvtoolu_1", Content: json.RawMessage(`[]`)},
					text("found")),
				normUser("u2", text("again")),
				normAsst("a2", "m2",
					&transcript.ServerToolUse{ID: "srvtoolu_1", Name: "web_search", Input: json.RawMessage(`{"query":"go"}`)},
					&transcript.ServerToolResult{Type: "web_search_tool_result", ToolUseID: "srvtoolu_1", Content: json.RawMessage(`[]`)},
					text("found again")),
				normUser("u3", text("thanks")),
			},
			want: normLines("user: text(search)", "assistant: server_tool_use(srvtoolu_1) web_search_tool_result(srvtoolu_1) text(found)",
				"user: text(again)", "assistant: text(found again)", "user: text(thanks)"),
			actions: []string{
				"dropped: duplicate server_tool_use id",
				"dropped: web_search_tool_result without a server_tool_use before it",
			},
		},
		{
			name: "nil block in tool_result content is dropped and reported",
			items: []item{
				normUser("u1", text("q")),
				normAsst("a1", "m1", toolUse("t1", "Read")),
				normUser("u2", &transcript.ToolResult{ToolUseID: "t1", Content: []transcript.Block{(*transcript.Text)(nil), text("r")}}),
			},
			want:    normLines("user: text(q)", "assistant: tool_use(t1)", "user: tool_result(t1 text(r))"),
			actions: []string{"dropped: nil block in tool_result t1"},
		},
		{
			name: "cache_edits stays last in its user message",
			items: []item{
				normUser("u1", text("q")),
				normAsst("a1", "m1", toolUse("t1", "Read")),
				normUser("u2", &transcript.CacheEdits{Edits: []transcript.CacheEdit{{Type: "delete", CacheReference: "toolu_old"}}}, text("note")),
				normUser("u3", result("t1", "r")),
			},
			want: normLines("user: text(q)", "assistant: tool_use(t1)", "user: tool_result(t1 text(r)) text(note) cache_edits"),
		},
		{
			name: "cache_edits alone is carried by the previous user message",
			items: []item{
				normUser("u1", text("q")),
				normAsst("a1", "m1", text("a")),
				normUser("u2", &transcript.CacheEdits{Edits: []transcript.CacheEdit{{Type: "delete", CacheReference: "toolu_old"}}}),
			},
			want:    normLines("user: text(q) cache_edits", "assistant: text(a)", "user: text(Continue.)"),
			actions: []string{"dropped: empty user message"},
		},
		{
			name: "tool_reference outside a tool result is not sent",
			items: []item{
				normUser("u1", text("q"), &transcript.ToolReference{ToolName: "Read"}),
				normAsst("a1", "m1", text("a")),
				normUser("u2", text("b")),
			},
			want:    normLines("user: text(q)", "assistant: text(a)", "user: text(b)"),
			actions: []string{"dropped: tool_reference block not accepted in a user message"},
		},
		{
			name: "thinking and tool_use in a user message are not sent",
			items: []item{
				normUser("u1", text("q"), &transcript.Thinking{Thinking: "x", Signature: normSig}, toolUse("t1", "Read")),
				normAsst("a1", "m1", text("a")),
				normUser("u2", text("b")),
			},
			want:    normLines("user: text(q)", "assistant: text(a)", "user: text(b)"),
			actions: []string{"dropped: thinking block not accepted in a user message", "dropped: tool_use block not accepted in a user message"},
		},
		{
			name: "tool names the provider rejects are rewritten",
			items: []item{
				normUser("u1", text("q")),
				normAsst("a1", "m1", toolUse("t1", "my.tool")),
				normUser("u2", result("t1", "r")),
			},
			want:    normLines("user: text(q)", "assistant: tool_use(t1)", "user: tool_result(t1 text(r))"),
			actions: []string{`repaired: tool name "my.tool" is not a valid tool name: rewritten to my_tool_`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := normConfig()
			if tt.cfg != nil {
				cfg = tt.cfg(cfg)
			}
			tools := []provider.Tool{{Name: "Read", Definition: json.RawMessage(`{"name":"Read","input_schema":{"type":"object"}}`)}}
			req, rep := normalizeItems(t, cfg, tt.items, tools)
			assert.Equal(t, tt.want, normSketch(req.Messages))
			for _, want := range tt.actions {
				kind, detail, _ := strings.Cut(want, ": ")
				assert.True(t, normHasAction(rep, ActionKind(kind), detail), "missing action %q in %q", want, normDetails(rep))
			}
		})
	}
}

// TestNormalizeDoesNotModifyTranscript checks that normalize leaves records and their
// blocks as they were.
func TestNormalizeDoesNotModifyTranscript(t *testing.T) {
	k := newTK()
	k.user("q")
	tu := toolUse("bad id", "Read")
	tu.Extra = map[string]json.RawMessage{"caller": []byte(`{}`)}
	k.assistant(&transcript.Thinking{Thinking: "x", Signature: "[REDACTED_SIGNATURE]"}, text(" "), tu)
	k.results(&transcript.ToolResult{ToolUseID: "bad id", StringContent: true})
	before := k.jsonl(t)
	normPrepare(t, normConfig(), Input{Records: k.recs})
	assert.Equal(t, before, k.jsonl(t))
}

// TestNormalizeAfterAppend checks that normalize makes no decision records and that the same
// records give the same request.
func TestNormalizeNoDecisions(t *testing.T) {
	k := newTK()
	k.user("q")
	k.assistant(toolUse("t1", "Read"))
	res := normPrepare(t, normConfig(), Input{Records: k.recs})
	assert.Empty(t, res.Append)
}

func TestNormalizeConfigValidate(t *testing.T) {
	assert.NoError(t, NormalizeConfig{}.validate())
	assert.NoError(t, NormalizeConfig{Continuation: "Go on."}.validate())
	assert.Error(t, NormalizeConfig{Continuation: " \n"}.validate())
	_, err := New(Config{ContextWindow: 1000, Normalize: NormalizeConfig{Continuation: "\t"}})
	assert.ErrorContains(t, err, "Continuation")
}

// TestCorpusNormalizeValid prepares a request from every session of the corpus and requires
// it to pass Validate, to be identical when prepared twice, and (with thinking enabled) to be
// valid once thinking is disabled where the report says it is unavailable.
func TestCorpusNormalizeValid(t *testing.T) {
	files := corpusFiles(t)
	for _, cfg := range []Config{normConfig(), normThinkingOn(normConfig())} {
		p, err := New(cfg)
		require.NoError(t, err)
		checked := 0
		for _, f := range files {
			tr, err := transcript.ReadFile(f, transcript.ReadOptions{})
			require.NoError(t, err, f)
			chain, err := transcript.BuildChain(tr.Records, transcript.ChainOptions{})
			require.NoError(t, err, f)
			res, err := p.Prepare(t.Context(), Input{Records: tr.Records})
			if len(chain.Messages()) == 0 {
				require.ErrorIs(t, err, ErrNoMessages, f)
				assert.Empty(t, res.Request.Messages, f)
				continue // nothing to send
			}
			require.NoError(t, err, f)
			req := res.Request
			if res.Report.ThinkingUnavailable {
				require.True(t, cfg.Thinking.Enabled(), f)
				require.Nil(t, req.Thinking, "%s: thinking unavailable, so the request is sent without it", f)
			}
			if err := provider.Validate(req, provider.ValidateOptions{ContextWindow: p.Window(), InputTokens: res.Report.InputTokens}); err != nil {
				t.Errorf("%s: %v", filepath.Base(f), err)
			}
			again, err := p.Prepare(t.Context(), Input{Records: tr.Records})
			require.NoError(t, err, f)
			a, _ := res.Request.MarshalJSON()
			b, _ := again.Request.MarshalJSON()
			require.Equal(t, a, b, "%s: Prepare twice differs", f)
			checked++
		}
		assert.Positive(t, checked)
	}
}
