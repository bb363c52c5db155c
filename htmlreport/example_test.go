package htmlreport_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/htmlreport"
	"github.com/agentctx/agentctx/transcript"
)

// A recorded session of two requests drawn as a page: the page holds its own style, script
// and data, and the session's markup stays text.
func Example() {
	session := `{"type":"user","uuid":"u1","parentUuid":null,"timestamp":"2026-03-01T10:00:00Z","message":{"role":"user","content":"Explain <b>bold</b> in HTML."}}
{"type":"assistant","uuid":"a1","parentUuid":"u1","timestamp":"2026-03-01T10:00:04Z","message":{"id":"msg_1","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"It makes text bold."}],"usage":{"input_tokens":12,"output_tokens":6}}}
{"type":"user","uuid":"u2","parentUuid":"a1","timestamp":"2026-03-01T10:01:00Z","message":{"role":"user","content":"Thanks."}}
{"type":"assistant","uuid":"a2","parentUuid":"u2","timestamp":"2026-03-01T10:01:03Z","message":{"id":"msg_2","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"You're welcome."}],"usage":{"input_tokens":25,"output_tokens":4}}}
`
	tr, err := transcript.Read(strings.NewReader(session), "session.jsonl", transcript.ReadOptions{})
	if err != nil {
		panic(err)
	}
	page, err := htmlreport.Build(context.Background(), tr.Records, agentctx.Config{Model: "claude-sonnet-4-5"}, htmlreport.Options{Title: "session.jsonl"})
	if err != nil {
		panic(err)
	}
	var b strings.Builder
	if _, err := page.WriteTo(&b); err != nil {
		panic(err)
	}
	html := b.String()
	fmt.Println("turns:", len(page.Result.Turns))
	fmt.Println("loads nothing:", !strings.Contains(html, " src=") && !strings.Contains(html, " href="))
	fmt.Println("markup as data:", strings.Contains(html, `\u003cb\u003ebold\u003c/b\u003e`), !strings.Contains(html, "<b>bold"))
	// Output:
	// turns: 2
	// loads nothing: true
	// markup as data: true true
}
