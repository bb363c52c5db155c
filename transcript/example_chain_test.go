package transcript_test

import (
	"fmt"
	"strings"

	"github.com/agentctx/agentctx/transcript"
)

// ExampleBuildChain rebuilds the conversation a plain parentUuid walk would break: walking up
// from a3 passes r1 and a1 only, missing the second tool call and its result.
func ExampleBuildChain() {
	tr, err := transcript.Read(strings.NewReader(sessionJSONL), "session.jsonl", transcript.ReadOptions{})
	if err != nil {
		panic(err)
	}
	c, err := transcript.BuildChain(tr.Records, transcript.ChainOptions{})
	if err != nil {
		panic(err)
	}
	for _, r := range c.Records {
		fmt.Print(r.UUID, " ")
	}
	fmt.Println()
	// Output:
	// u1 a1 a2 r2 r1 a3 u2
}

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
