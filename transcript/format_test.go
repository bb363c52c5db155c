package transcript

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestDetectFormat(t *testing.T) {
	long := strings.Repeat("x", 100<<10)
	tests := []struct {
		name string
		head string
		want Format
	}{
		{"empty", "", FormatClaudeCode},
		{"blank lines", "\n \n\t\n", FormatClaudeCode},
		{"claude user", userLine("hi") + "\n", FormatClaudeCode},
		{"claude summary first", `{"type":"summary","summary":"t","leafUuid":"u"}` + "\n" + codexMeta, FormatClaudeCode},
		{"codex session_meta", codexMeta + "\n", FormatCodex},
		{"codex response_item first", codexLine("response_item", `{"type":"message","role":"user","content":[]}`), FormatCodex},
		{"codex event first", codexLine("event_msg", `{"type":"task_started"}`), FormatCodex},
		{"codex turn_context", codexLine("turn_context", `{"model":"m"}`), FormatCodex},
		{"codex compacted", codexLine("compacted", `{"message":"s"}`), FormatCodex},
		{"byte order mark and CRLF", "\xef\xbb\xbf" + codexMeta + "\r\n", FormatCodex},
		{"blank lines first", "\n\n" + codexMeta, FormatCodex},
		{"payload key before type", `{"payload":{"id":"s"},"type":"session_meta","timestamp":"t"}`, FormatCodex},
		{"torn first line", `{"timest` + "\n" + codexMeta, FormatCodex},
		{"non-object lines first", "[1]\nnull\n\"s\"\n" + codexMeta, FormatCodex},
		{"cut after the payload key", `{"timestamp":"t","type":"response_item","payload":{"type":"mess`, FormatCodex},
		{"cut inside a long value", `{"timestamp":"t","type":"session_meta","payload":{"base_instructions":"` + long[:sniffBytes], FormatCodex},
		{"codex type without payload", `{"type":"event_msg","x":1}`, FormatClaudeCode},
		{"payload with a claude type", `{"type":"user","payload":{}}`, FormatClaudeCode},
		{"type is not a string", `{"type":5,"payload":{}}`, FormatClaudeCode},
		{"type as an object", `{"type":{"a":[1]},"payload":{}}` + "\n" + codexMeta, FormatCodex},
		{"claude type after a long message", `{"message":{"content":"` + long + `"},"type":"user"}`, FormatClaudeCode},
		{"legacy bare codex items", `{"id":"s","timestamp":"t","instructions":null}` + "\n" + `{"type":"message","role":"user","content":[]}`, FormatCodex},
		{"nine lines that decide nothing", strings.Repeat("[]\n", sniffLines) + codexMeta, FormatClaudeCode},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, DetectFormat([]byte(tt.head)))
		})
	}
}

func TestDetectFormatCodexLegacy(t *testing.T) {
	user := `{"type":"message","id":null,"role":"user","content":[{"type":"input_text","text":"hi"}]}`
	tests := []struct {
		name    string
		head    string
		want    Format
		variant string
	}{
		{"legacy file", codexLegacyMeta + "\n{\"record_type\":\"state\"}\n" + user + "\n", FormatCodex, CodexLegacy},
		{"metadata with git, cwd and version", `{"id":"s","timestamp":"t","cwd":"/w","originator":"codex_cli_rs","cli_version":"0.30.0","instructions":"x","git":{"branch":"main"}}`, FormatCodex, CodexLegacy},
		{"first line damaged, a state line next", `{"id":"5973b6c0","timesta` + "\n{\"record_type\":\"state\"}\n" + user, FormatCodex, CodexLegacy},
		{"first line damaged, an item next", "not json\n" + user, FormatCodex, CodexLegacy},
		{"bare function_call", `{"type":"function_call","name":"shell","arguments":"{}","call_id":"c"}`, FormatCodex, CodexLegacy},
		{"bare function_call_output", `{"type":"function_call_output","call_id":"c","output":"x"}`, FormatCodex, CodexLegacy},
		{"bare reasoning", `{"type":"reasoning","id":"r","summary":[]}`, FormatCodex, CodexLegacy},
		{"bare local_shell_call", `{"type":"local_shell_call","call_id":"c","status":"completed","action":{"type":"exec","command":["ls"]}}`, FormatCodex, CodexLegacy},
		{"tagged lines", `{"timestamp":"t","record_type":"session_meta","id":"s","cwd":"/w"}`, FormatCodex, CodexLegacy},
		{"tagged response", `{"timestamp":"t","record_type":"response","type":"message","role":"user","content":[]}`, FormatCodex, CodexLegacy},
		{"current rollout is not legacy", codexMeta, FormatCodex, ""},
		{"claude code user", userLine("u") + "\n" + user, FormatClaudeCode, ""},
		{"claude code summary then bare items", `{"type":"summary","summary":"t","leafUuid":"u"}` + "\n" + codexLegacyMeta, FormatClaudeCode, ""},
		{"claude line cut before its type", `{"id":"x","timestamp":"t","message":{"role":"user"` + "\n" + userLine("u"), FormatClaudeCode, ""},
		{"message type without a role", `{"type":"message","content":[]}`, FormatClaudeCode, ""},
		{"id without a timestamp", `{"id":"x","instructions":null}` + "\n" + userLine("u"), FormatClaudeCode, ""},
		{"an unknown record_type", `{"record_type":"other"}` + "\n" + userLine("u"), FormatClaudeCode, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, variant := detect([]byte(tt.head))
			assert.Equal(t, tt.want, f)
			assert.Equal(t, tt.variant, variant)
			assert.Equal(t, tt.want, DetectFormat([]byte(tt.head)))
		})
	}
}

// codexMeta is a session_meta line, for inputs that must read as Codex rollouts.
const codexMeta = `{"timestamp":"2026-11-20T10:00:00.000Z","type":"session_meta","payload":{"id":"s1","cwd":"/w","base_instructions":{"text":"be brief"}}}`

// codexLegacyMeta is the first line of a pre-wrapper rollout, for inputs that must read as one.
const codexLegacyMeta = `{"id":"5973b6c0-94b8-487b-a530-2aeb6098ae0e","timestamp":"2025-05-07T17:24:21.123Z","instructions":null}`
