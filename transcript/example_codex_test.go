package transcript_test

import (
	"fmt"
	"strings"

	"github.com/agentctx/agentctx/transcript"
)

// A Codex CLI rollout reads like any transcript: the reader tells the format from the
// content and maps each line to records.
func ExampleRead_codex() {
	rollout := strings.Join([]string{
		`{"timestamp":"2026-11-20T10:00:00Z","type":"session_meta","payload":{"id":"s1","cwd":"/w","base_instructions":{"text":"Be brief."}}}`,
		`{"timestamp":"2026-11-20T10:00:01Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"List the files."}]}}`,
		`{"timestamp":"2026-11-20T10:00:02Z","type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{\"command\":[\"ls\"]}","call_id":"call_1"}}`,
		`{"timestamp":"2026-11-20T10:00:03Z","type":"event_msg","payload":{"type":"token_count","info":{"last_token_usage":{"input_tokens":900,"cached_input_tokens":800,"output_tokens":20}}}}`,
		`{"timestamp":"2026-11-20T10:00:04Z","type":"response_item","payload":{"type":"function_call_output","call_id":"call_1","output":"go.mod\nmain.go"}}`,
	}, "\n")
	tr, err := transcript.Read(strings.NewReader(rollout), "session.jsonl", transcript.ReadOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(tr.Format, "system:", tr.System[0].Text)
	for _, r := range tr.Records {
		fmt.Print("line ", r.Line, ": ", r.Type)
		if r.Message != nil {
			for _, b := range r.Message.Content {
				fmt.Print(" ", b.Kind())
			}
			if u := r.Message.Usage; u != nil {
				fmt.Printf(" (input %d, cache read %d, output %d)", u.InputTokens, u.CacheReadInputTokens, u.OutputTokens)
			}
		}
		fmt.Println()
	}
	// Output:
	// codex system: Be brief.
	// line 1: session_meta
	// line 2: user text
	// line 3: assistant tool_use (input 100, cache read 800, output 20)
	// line 4: event_msg
	// line 5: user tool_result
}
