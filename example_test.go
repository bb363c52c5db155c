package agentctx_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/provider"
	"github.com/agentctx/agentctx/session"
	"github.com/agentctx/agentctx/transcript"
)

// sessionJSONL is a small Claude Code session: a prompt, a response with two parallel tool calls
// written one record per block, their results, and a closing answer.
const sessionJSONL = `{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"s","timestamp":"2026-01-02T10:00:00.000Z","message":{"role":"user","content":"What is in the repo?"}}
{"type":"assistant","uuid":"a1","parentUuid":"u1","sessionId":"s","timestamp":"2026-01-02T10:00:05.000Z","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"ls"}}],"usage":{"input_tokens":900,"output_tokens":40}}}
{"type":"assistant","uuid":"a2","parentUuid":"a1","sessionId":"s","timestamp":"2026-01-02T10:00:05.100Z","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"tool_use","id":"toolu_2","name":"Read","input":{"file_path":"go.mod"}}],"usage":{"input_tokens":900,"output_tokens":80}}}
{"type":"user","uuid":"r2","parentUuid":"a2","sessionId":"s","timestamp":"2026-01-02T10:00:06.000Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_2","content":"module example.com/x"}]}}
{"type":"user","uuid":"r1","parentUuid":"a1","sessionId":"s","timestamp":"2026-01-02T10:00:06.500Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"cmd\ngo.mod\ninternal"}]}}
{"type":"assistant","uuid":"a3","parentUuid":"r1","sessionId":"s","timestamp":"2026-01-02T10:00:09.000Z","message":{"id":"msg_2","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"A Go module, example.com/x, with cmd and internal."}],"usage":{"input_tokens":1000,"output_tokens":20}}}
{"type":"user","uuid":"u2","parentUuid":"a3","sessionId":"s","timestamp":"2026-01-02T10:01:00.000Z","message":{"role":"user","content":"Thanks. Now run the tests."}}
`

// Example prepares the next turn of a session: the two parallel tool calls, written as
// separate records, come back as one assistant message followed by one user message with
// both results, and one cache marker sits on the last message.
func Example() {
	tr, err := transcript.Read(strings.NewReader(sessionJSONL), "session.jsonl", transcript.ReadOptions{})
	if err != nil {
		panic(err)
	}
	p, err := agentctx.New(agentctx.Config{
		Model:  "claude-sonnet-4-5",
		Tokens: agentctx.EstimateCounter{},
		Now:    func() time.Time { return time.Date(2026, 1, 2, 10, 2, 0, 0, time.UTC) },
	})
	if err != nil {
		panic(err)
	}
	res, err := p.Prepare(context.Background(), agentctx.Input{Records: tr.Records})
	if err != nil {
		panic(err)
	}
	for _, m := range res.Request.Messages {
		var kinds []string
		for _, b := range m.Content {
			kinds = append(kinds, string(b.Kind()))
		}
		fmt.Println(m.Role, strings.Join(kinds, " "))
	}
	fmt.Println("valid:", provider.Validate(res.Request, provider.ValidateOptions{}) == nil)
	fmt.Println("records to append:", len(res.Append))
	// Output:
	// user text
	// assistant tool_use tool_use
	// user tool_result tool_result
	// assistant text
	// user text
	// valid: true
	// records to append: 0
}

// ExampleNewSnip removes an exchange from the model's view. The transcript keeps every
// record; the snip is itself a record the runtime appends.
func ExampleNewSnip() {
	tr, err := transcript.Read(strings.NewReader(sessionJSONL), "session.jsonl", transcript.ReadOptions{})
	if err != nil {
		panic(err)
	}
	now := time.Date(2026, 1, 2, 10, 2, 0, 0, time.UTC)
	snip, err := agentctx.NewSnip(tr.Records, []string{"a1"}, "the listing is stale", now)
	if err != nil {
		panic(err)
	}
	p, err := agentctx.New(agentctx.Config{Model: "claude-sonnet-4-5", Tokens: agentctx.EstimateCounter{}, Now: func() time.Time { return now }})
	if err != nil {
		panic(err)
	}
	res, err := p.Prepare(context.Background(), agentctx.Input{Records: append(tr.Records, snip)})
	if err != nil {
		panic(err)
	}
	for _, a := range res.Report.Stage("snip").Actions {
		if a.Kind == agentctx.ActionSnipped {
			fmt.Println("snipped", a.UUID)
		}
	}
	fmt.Println("messages:", len(res.Request.Messages))
	// Output:
	// snipped a1
	// snipped r1
	// messages: 5
}

// ExamplePipeline_HandleSnip carries out the model's call of the snip tool: the listing's
// result goes, with the call that made it, and the model's latest prompt stays.
func ExamplePipeline_HandleSnip() {
	tr, err := transcript.Read(strings.NewReader(sessionJSONL), "session.jsonl", transcript.ReadOptions{})
	if err != nil {
		panic(err)
	}
	now := time.Date(2026, 1, 2, 10, 2, 0, 0, time.UTC)
	p, err := agentctx.New(agentctx.Config{Model: "claude-sonnet-4-5", Tokens: agentctx.EstimateCounter{}, Now: func() time.Time { return now }})
	if err != nil {
		panic(err)
	}
	// The model's response to a request whose Input.Tools held agentctx.SnipTool().
	call := &transcript.ToolUse{ID: "toolu_9", Name: agentctx.SnipToolName, Input: []byte(`{"ids":["r1","u2"],"reason":"the listing is read"}`)}
	records := append(tr.Records, transcript.Record{Type: transcript.TypeAssistant, UUID: "a4", ParentUUID: "u2", SessionID: "s",
		Message: &transcript.Message{ID: "msg_3", Role: transcript.RoleAssistant, Content: []transcript.Block{call}}})

	out := p.HandleSnip(records, call.Input, now)
	fmt.Println(out.Text)
	fmt.Println("removed:", out.Removed)
	records = append(records, *out.Record) // the snip record, then the call's result
	records = append(records, transcript.Record{Type: transcript.TypeUser, UUID: "r9", ParentUUID: "a4", SessionID: "s",
		Message: &transcript.Message{Role: transcript.RoleUser, Content: []transcript.Block{out.Result(call.ID)}}})
	res, err := p.Prepare(context.Background(), agentctx.Input{Records: records, Tools: []provider.Tool{agentctx.SnipTool()}})
	if err != nil {
		panic(err)
	}
	fmt.Println("messages:", len(res.Request.Messages))
	// Output:
	// Snipped 1 message (r1) and 1 more message tied to it by tool calls: about 21 tokens left your context. They stay in the session's transcript, but you will not see them again.
	// Not snipped:
	// - u2: the message is the user's latest prompt, which you are answering
	// removed: [a1 r1]
	// messages: 7
}

// ExampleTokenCounterFunc plugs in a counter of one's own, here a crude four bytes a token.
func ExampleTokenCounterFunc() {
	quarter := agentctx.TokenCounterFunc(func(s string) int { return (len(s) + 3) / 4 })
	c := agentctx.NewCounter(quarter)
	fmt.Println(c.Text("sixteen bytes!!!"))
	// Output:
	// 4
}

// ExampleMemoize computes the user context once per conversation and again after a
// compaction invalidates it.
func ExampleMemoize() {
	calls := 0
	memo := agentctx.Memoize(agentctx.ContextProviderFunc(func(context.Context) ([]agentctx.ContextSection, error) {
		calls++
		return []agentctx.ContextSection{{Name: "claudeMd", Text: "Run go test before committing."}}, nil
	}))
	ctx := context.Background()
	memo.Context(ctx)
	memo.Context(ctx)
	memo.Invalidate()
	memo.Context(ctx)
	fmt.Println("computed", calls, "times")
	// Output:
	// computed 2 times
}

// ExamplePipeline_Recover answers a provider's prompt-too-long refusal: the provider's count
// is recorded and the conversation compacted once; refused again with no response between,
// Recover gives up with the provider's figures.
func ExamplePipeline_Recover() {
	n := 0
	clock := func() time.Time { return time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC) }
	s := session.New(session.Options{ID: "sess", Now: clock,
		NewUUID: func() string { n++; return fmt.Sprintf("00000000-0000-4000-8000-%012d", n) }})
	p, err := agentctx.New(agentctx.Config{Model: "claude-sonnet-4-5", ContextWindow: 20_000, Tokens: agentctx.EstimateCounter{}, Now: clock})
	if err != nil {
		panic(err)
	}
	for i := range 3 {
		s.User(fmt.Sprintf("Step %d: %s", i, strings.Repeat("check the build output. ", 200)))
		s.Assistant(&transcript.Message{ID: fmt.Sprintf("msg_%d", i), Type: "message", Role: transcript.RoleAssistant, Model: "claude-sonnet-4-5",
			Content: []transcript.Block{&transcript.Text{Text: "Checked."}}, Usage: &transcript.Usage{InputTokens: 1000 * (i + 1), OutputTokens: 5}})
	}
	s.User("And now?")
	ctx := context.Background()
	// The provider answered 400 "prompt is too long: 21000 tokens > 20000 maximum"; the
	// adapters' errors carry these figures.
	refused := &provider.PromptTooLongError{Tokens: 21_000, Limit: 20_000}
	res, err := s.Recover(ctx, p, agentctx.Input{}, refused)
	fmt.Println(err, "|", res.Report.Recovery.Rung, res.Report.Recovery.Outcome)
	for _, r := range res.Append {
		kind := string(r.Type)
		if r.Subtype != "" {
			kind += " " + string(r.Subtype)
		}
		if r.IsCompactSummary {
			kind += " (the summary)"
		}
		fmt.Println(" ", kind)
	}
	_, err = s.Recover(ctx, p, agentctx.Input{}, refused)
	fmt.Println(err)
	// Output:
	// <nil> | prompt_too_long recovered
	//   system agentctx_recovery
	//   system compact_boundary
	//   user (the summary)
	// agentctx: prompt too long: 21000 tokens > 20000 maximum: the provider refused the prompt again after a reactive compaction (record 04bba045-d748-53d2-8e38-f190bc0c2917)
}

// ExampleCollapseConfig turns the collapse producer on with a producer of the runtime's own:
// it folds every round before the kept tail into a summary it writes itself (with no
// Summary, the compaction's Summarizer would write it). The fold runs when
// the pressure reaches the commit level (here set very low, for a small session), and its
// commit is the first record to append; the next request shows the summary in place of the
// span.
func ExampleCollapseConfig() {
	tr, err := transcript.Read(strings.NewReader(sessionJSONL), "session.jsonl", transcript.ReadOptions{})
	if err != nil {
		panic(err)
	}
	beforeTail := agentctx.CollapseProducerFunc(func(_ context.Context, req agentctx.FoldRequest) (agentctx.FoldSpan, error) {
		if len(req.Rounds) < 2 {
			return agentctx.FoldSpan{}, nil
		}
		return agentctx.FoldSpan{From: req.Rounds[0], To: req.Rounds[len(req.Rounds)-1],
			Summary: "The user asked what the repository holds; ls and go.mod were read."}, nil
	})
	p, err := agentctx.New(agentctx.Config{
		Model:    "claude-sonnet-4-5",
		Tokens:   agentctx.EstimateCounter{},
		Now:      func() time.Time { return time.Date(2026, 1, 2, 10, 2, 0, 0, time.UTC) },
		Collapse: agentctx.CollapseConfig{Producer: beforeTail, CommitFraction: 0.001, TargetFraction: 0.0005},
	})
	if err != nil {
		panic(err)
	}
	res, err := p.Prepare(context.Background(), agentctx.Input{Records: tr.Records})
	if err != nil {
		panic(err)
	}
	c := res.Append[0]
	fmt.Println(c.Subtype, c.Collapse.FirstUUID, c.Collapse.LastUUID)
	fmt.Println(transcript.TextOf(res.Request.Messages[0].Content))
	// Output:
	// agentctx_collapse_commit u1 r1
	// <collapsed id="38bffa820a60502c">
	// The user asked what the repository holds; ls and go.mod were read.
	// </collapsed>
}
