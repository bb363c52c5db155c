package agentctx

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentctx/agentctx/provider"

	"github.com/agentctx/agentctx/transcript"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// codexLegacyFixture is the hand-made rollout in the format from before the wrapper
// (testdata/codex/README.md).
var codexLegacyFixture = filepath.Join("testdata", "codex", "legacy.jsonl")

// codexLegacyMeta is the first line of a pre-wrapper rollout, for inputs that must read as one.
const codexLegacyMeta = `{"id":"5973b6c0-94b8-487b-a530-2aeb6098ae0e","timestamp":"2025-05-07T17:24:21.123Z","instructions":null}`

func TestReadCodexLegacyFixture(t *testing.T) {
	tr, err := transcript.ReadFile(codexLegacyFixture, transcript.ReadOptions{Strict: true})
	require.NoError(t, err)
	require.True(t, tr.Clean(), "%v", tr.Err())
	assert.Equal(t, transcript.FormatCodex, tr.Format)
	assert.Equal(t, transcript.CodexLegacy, tr.Variant)
	require.Len(t, tr.System, 1)
	assert.Equal(t, "You are a coding agent working in a terminal.", tr.System[0].Text)

	var got []string
	for i := range tr.Records {
		got = append(got, codexDescribe(&tr.Records[i]))
	}
	assert.Equal(t, []string{
		"session_meta",
		"state",
		"user text",
		"user text",
		"assistant thinking",
		"assistant tool_use:call_cat",
		"user tool_result:call_cat",
		"assistant tool_use:call_build",
		"user tool_result:call_build",
		"assistant text",
		"state",
		"user text",
		"assistant text",
		"state",
	}, got)
	assert.Equal(t, []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14}, tr.Lines)

	const session = "5973b6c0-94b8-487b-a530-2aeb6098ae0e"
	for i, r := range tr.Records {
		assert.Equal(t, "2025-05-07T17:24:21.123Z", r.Timestamp, "record %d takes the metadata's timestamp", i)
		assert.Equal(t, session, r.SessionID, "record %d", i)
	}
	meta := tr.Records[0]
	assert.Equal(t, transcript.TypeCodexSessionMeta, meta.Type)
	assert.Contains(t, string(meta.Data), `"git":{"commit_hash"`, "the metadata line is kept whole")
	assert.Equal(t, transcript.TypeCodexState, tr.Records[1].Type)
	assert.JSONEq(t, `{"record_type":"state"}`, string(tr.Records[1].Data))

	// The chain: every message record links to the one before it.
	var prev string
	for _, r := range tr.Records {
		if r.Message == nil {
			assert.Empty(t, r.UUID)
			continue
		}
		assert.Equal(t, prev, r.ParentUUID)
		prev = r.UUID
	}
	// The items of one response share a message id; the user's input ends a response.
	assert.Equal(t, tr.Records[4].Message.ID, tr.Records[5].Message.ID)
	assert.NotEqual(t, tr.Records[5].Message.ID, tr.Records[7].Message.ID)

	shell := tr.Records[7].Message.Content[0].(*transcript.ToolUse)
	assert.Equal(t, "local_shell", shell.Name)
	assert.JSONEq(t, `{"type":"exec","command":["go","build","./..."],"timeout_ms":null,"working_directory":"/work/demo","env":null,"user":null}`, string(shell.Input))
	res := tr.Records[8].Message.Content[0].(*transcript.ToolResult)
	assert.True(t, res.IsError, "success: false is an error")
	assert.False(t, tr.Records[3].IsMeta, "a user message item is the user's")

	// Each state line is reported, by line and field.
	var unmapped []string
	for _, u := range tr.Unmapped {
		unmapped = append(unmapped, u.Error())
	}
	require.Len(t, tr.Unmapped, 3)
	for i, line := range []int{2, 11, 14} {
		assert.Equal(t, line, tr.Unmapped[i].Line)
		assert.Equal(t, "record_type", tr.Unmapped[i].Field)
		assert.Equal(t, codexLegacyFixture, tr.Unmapped[i].File)
	}
	assert.Contains(t, unmapped[0], "session state line")
}

// TestCodexLegacyFixturePrepare prepares the legacy fixture's next turn: the request passes
// Validate and loses no block without a reason.
func TestCodexLegacyFixturePrepare(t *testing.T) {
	tr, err := transcript.ReadFile(codexLegacyFixture, transcript.ReadOptions{Strict: true})
	require.NoError(t, err)
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	p := newTestPipeline(t, Config{Budget: BudgetConfig{Store: &MapStore{}}}, now)
	in := Input{Records: tr.Records, System: tr.System}
	res, err := p.Prepare(t.Context(), in)
	require.NoError(t, err)
	require.NoError(t, provider.Validate(res.Request, provider.ValidateOptions{ContextWindow: p.Window(), InputTokens: res.Report.InputTokens}))
	checkConservation(t, codexLegacyFixture, in, res)
	assert.Equal(t, "You are a coding agent working in a terminal.", res.Request.System[0].Text)
	body := string(requestBytes(t, res.Request))
	assert.NotContains(t, body, "gAAAAAB", "encrypted content is never sent")
	assert.Contains(t, body, `"tool_use_id":"call_build","content":"./main.go:3:16: undefined: undefined","is_error":true`)
	assert.Contains(t, body, `"name":"local_shell"`)
	assert.Contains(t, body, "Done: main is now empty")
	assert.NotContains(t, body, "record_type", "state lines are never sent")
}

// TestReadCodexLegacyTagged reads the short-lived variant whose lines carry a record_type
// and a timestamp of their own: the metadata, a response, an event and a state line.
func TestReadCodexLegacyTagged(t *testing.T) {
	data := strings.Join([]string{
		`{"timestamp":"2025-08-20T10:00:00.000Z","record_type":"session_meta","id":"s2","cwd":"/w","originator":"codex_cli_rs","cli_version":"0.24.0","instructions":"be brief"}`,
		`{"timestamp":"2025-08-20T10:00:01.000Z","record_type":"response","type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}`,
		`{"timestamp":"2025-08-20T10:00:02.000Z","record_type":"event","id":"sub1","msg":{"type":"task_started"}}`,
		`{"timestamp":"2025-08-20T10:00:03.000Z","record_type":"response","type":"message","role":"assistant","content":[{"type":"output_text","text":"hello"}]}`,
		`{"timestamp":"2025-08-20T10:00:04.000Z","record_type":"state"}`,
		`{"timestamp":"2025-08-20T10:00:05.000Z","record_type":"prev_session_meta","id":"s0"}`,
		`{"timestamp":"2025-08-20T10:00:06.000Z","record_type":"novel"}`,
	}, "\n") + "\n"
	tr, err := transcript.Read(strings.NewReader(data), "tagged.jsonl", transcript.ReadOptions{Strict: true})
	require.NoError(t, err)
	assert.Equal(t, transcript.CodexLegacy, tr.Variant)
	var got []string
	for i := range tr.Records {
		got = append(got, codexDescribe(&tr.Records[i]))
	}
	assert.Equal(t, []string{"session_meta", "user text", "event_msg/task_started", "assistant text", "state", "session_meta", "novel"}, got)
	assert.Equal(t, "2025-08-20T10:00:03.000Z", tr.Records[3].Timestamp, "a tagged line keeps its own timestamp")
	assert.Equal(t, "s2", tr.Records[3].SessionID, "the first metadata names the session")
	assert.Equal(t, "/w", tr.Records[3].Cwd)
	assert.Equal(t, "be brief", tr.System[0].Text)
	require.Len(t, tr.Unmapped, 2)
	assert.Equal(t, 5, tr.Unmapped[0].Line)
	assert.Equal(t, 7, tr.Unmapped[1].Line)
	assert.Contains(t, tr.Unmapped[1].Error(), `"novel"`)
}

// TestReadCodexLegacyDamage: bad lines and fields of a legacy rollout are reported by line and
// field, as for any rollout; a damaged metadata line leaves the session without an id.
func TestReadCodexLegacyDamage(t *testing.T) {
	user := `{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}`
	tests := []struct {
		name  string
		data  string
		field string // the field reported in Dropped, "" for none
		line  int
	}{
		{"content not an array", codexLegacyMeta + "\n" + `{"type":"message","role":"user","content":5}`, "content", 2},
		{"arguments neither string nor object", codexLegacyMeta + "\n" + `{"type":"function_call","name":"f","arguments":5,"call_id":"c"}`, "arguments", 2},
		{"timestamp not a string", `{"id":"s","timestamp":"t","instructions":null}` + "\n" + `{"type":"message","role":"user","timestamp":5,"content":[]}`, "timestamp", 2},
		{"instructions not a string", `{"id":"s","timestamp":"t","instructions":7}` + "\n" + user, "instructions", 1},
		{"record_type not a string", codexLegacyMeta + "\n" + `{"record_type":1}` + "\n" + user, "record_type", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr, err := transcript.Read(strings.NewReader(tt.data+"\n"), "legacy.jsonl", transcript.ReadOptions{})
			require.NoError(t, err)
			require.Equal(t, transcript.CodexLegacy, tr.Variant)
			require.Len(t, tr.Dropped, 1, "%v", tr.Err())
			assert.Equal(t, tt.field, tr.Dropped[0].Field)
			assert.Equal(t, tt.line, tr.Dropped[0].Line)
			_, err = transcript.Read(strings.NewReader(tt.data+"\n"), "legacy.jsonl", transcript.ReadOptions{Strict: true})
			var le *transcript.LineError
			require.ErrorAs(t, err, &le)
			assert.Equal(t, tt.field, le.Field)
		})
	}

	// A torn metadata line: the items after it still read, without a session id.
	tr, err := transcript.Read(strings.NewReader(`{"id":"s","timesta`+"\n"+user+"\n"), "legacy.jsonl", transcript.ReadOptions{})
	require.NoError(t, err)
	assert.Equal(t, transcript.CodexLegacy, tr.Variant)
	require.Len(t, tr.Problems, 1)
	assert.Equal(t, 1, tr.Problems[0].Line)
	require.Len(t, tr.Records, 1)
	assert.Equal(t, transcript.TypeUser, tr.Records[0].Type)
	assert.Empty(t, tr.Records[0].SessionID)
}

// TestCodexLegacyAppendRefused: the library never writes to a legacy rollout either.
func TestCodexLegacyAppendRefused(t *testing.T) {
	data, err := os.ReadFile(codexLegacyFixture)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "rollout-2025-05-07T17-24-21-5973b6c0.jsonl")
	require.NoError(t, os.WriteFile(path, data, 0o644))
	rec := transcript.Record{Type: transcript.TypeUser, UUID: "u", Message: &transcript.Message{Role: transcript.RoleUser, Content: []transcript.Block{&transcript.Text{Text: "x"}}}}
	err = transcript.AppendFile(path, transcript.AppendOptions{}, rec)
	require.ErrorIs(t, err, transcript.ErrCodexAppend)
	_, err = transcript.OpenAppender(path, transcript.AppendOptions{})
	require.ErrorIs(t, err, transcript.ErrCodexAppend)
	after, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, data, after, "the rollout is left as it was")
}

// FuzzReadCodexLegacy decodes arbitrary lines after a legacy metadata line, with the checks
// of FuzzReadCodex.
func FuzzReadCodexLegacy(f *testing.F) {
	data, err := os.ReadFile(codexLegacyFixture)
	require.NoError(f, err)
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	f.Add([]byte(""))
	for i := 1; i < len(lines); i += 5 {
		f.Add([]byte(strings.Join(lines[i:min(i+5, len(lines))], "\n")))
	}
	f.Add([]byte(`{"timestamp":"t","record_type":"event","msg":5}` + "\n" + `{"record_type":"response","type":7}` + "\n" + `{"id":3}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		fuzzCodexBody(t, append([]byte(codexLegacyMeta+"\n"), in...), transcript.CodexLegacy)
	})
}

// TestReadCodexLegacyIdempotent reads the fixture twice through transcript.Read from bytes:
// the mapping is deterministic.
func TestReadCodexLegacyIdempotent(t *testing.T) {
	data, err := os.ReadFile(codexLegacyFixture)
	require.NoError(t, err)
	a, err := transcript.Read(bytes.NewReader(data), "a", transcript.ReadOptions{})
	require.NoError(t, err)
	b, err := transcript.Read(bytes.NewReader(data), "a", transcript.ReadOptions{})
	require.NoError(t, err)
	assert.Equal(t, a.Records, b.Records)
}
