package agentctx

import (
	"strings"
	"testing"

	"github.com/agentctx/agentctx/transcript"

	"github.com/stretchr/testify/require"
)

// TestRegressCodexUserEventDedupe: two user message items since the last assistant record (two prompts queued while a turn
// ran), then their two user_message events: docs/codex.md says an event whose text is in a
// user message item since the last assistant record is no new message.
func TestRegressCodexUserEventDedupe(t *testing.T) {
	rollout := strings.Join([]string{
		`{"timestamp":"2026-11-20T10:00:01.000Z","type":"session_meta","payload":{"id":"s1","cwd":"/w"}}`,
		`{"timestamp":"2026-11-20T10:00:02.000Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"first prompt"}]}}`,
		`{"timestamp":"2026-11-20T10:00:03.000Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"second prompt"}]}}`,
		`{"timestamp":"2026-11-20T10:00:04.000Z","type":"event_msg","payload":{"type":"user_message","message":"first prompt"}}`,
		`{"timestamp":"2026-11-20T10:00:05.000Z","type":"event_msg","payload":{"type":"user_message","message":"second prompt"}}`,
	}, "\n") + "\n"
	tr, err := transcript.Read(strings.NewReader(rollout), "r.jsonl", transcript.ReadOptions{})
	require.NoError(t, err)
	var users []string
	for _, r := range tr.Records {
		if r.Type == transcript.TypeUser && r.Message != nil {
			users = append(users, transcript.TextOf(r.Message.Content))
		}
	}
	require.Equal(t, []string{"first prompt", "second prompt"}, users)
}

// TestRegressCodexWriteBack: the mapped records, written as a Claude Code transcript, are
// read back strictly as one, record for record.
func TestRegressCodexWriteBack(t *testing.T) {
	tr, err := transcript.ReadFile("testdata/codex/all-items.jsonl", transcript.ReadOptions{})
	require.NoError(t, err)
	var b strings.Builder
	for _, r := range tr.Records {
		j, err := r.MarshalJSON()
		require.NoError(t, err)
		b.Write(j)
		b.WriteByte('\n')
	}
	require.Equal(t, transcript.FormatClaudeCode, transcript.DetectFormat([]byte(b.String())))
	back, err := transcript.Read(strings.NewReader(b.String()), "back.jsonl", transcript.ReadOptions{Strict: true})
	require.NoError(t, err)
	require.Len(t, back.Records, len(tr.Records))
}

// TestRegressCodexExtraNotSent: fields of Codex items the view does not use stay out of the
// request.
func TestRegressCodexExtraNotSent(t *testing.T) {
	rollout := strings.Join([]string{
		`{"timestamp":"2026-11-20T10:00:01.000Z","type":"session_meta","payload":{"id":"s1","cwd":"/w"}}`,
		`{"timestamp":"2026-11-20T10:00:02.000Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"look"},{"type":"input_image","image_url":"data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=","detail":"auto"}]}}`,
		`{"timestamp":"2026-11-20T10:00:03.000Z","type":"response_item","payload":{"type":"function_call","id":"fc_1","status":"completed","name":"shell","arguments":"{\"command\":[\"ls\"]}","call_id":"call_1"}}`,
		`{"timestamp":"2026-11-20T10:00:04.000Z","type":"response_item","payload":{"type":"function_call_output","call_id":"call_1","output":"a.go"}}`,
		`{"timestamp":"2026-11-20T10:00:05.000Z","type":"response_item","payload":{"type":"message","role":"assistant","id":"msg_1","content":[{"type":"output_text","text":"done","annotations":[]}]}}`,
		`{"timestamp":"2026-11-20T10:00:06.000Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"next"}]}}`,
	}, "\n") + "\n"
	tr, err := transcript.Read(strings.NewReader(rollout), "r.jsonl", transcript.ReadOptions{})
	require.NoError(t, err)
	p, err := New(Config{Model: "claude-sonnet-4-5", ContextWindow: 200000, MaxOutputTokens: 8000, Tokens: EstimateCounter{}})
	require.NoError(t, err)
	res, err := p.Prepare(t.Context(), Input{Records: tr.Records, System: tr.System})
	require.NoError(t, err)
	body, err := res.Request.MarshalJSON()
	require.NoError(t, err)
	require.NotContains(t, string(body), "fc_1")
	require.NotContains(t, string(body), "detail")
	require.NotContains(t, string(body), "annotations")
	require.Contains(t, string(body), "call_1")
}

// TestRegressCodexWriteBackIDs: a message item's own id (kept as codex_id) does not replace
// the response id when the records are written back and read again.
func TestRegressCodexWriteBackIDs(t *testing.T) {
	rollout := strings.Join([]string{
		`{"timestamp":"2026-11-20T10:00:01.000Z","type":"session_meta","payload":{"id":"s1","cwd":"/w"}}`,
		`{"timestamp":"2026-11-20T10:00:02.000Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}}`,
		`{"timestamp":"2026-11-20T10:00:05.000Z","type":"response_item","payload":{"type":"message","role":"assistant","id":"msg_1","model":"x","type2":1,"content":[{"type":"output_text","text":"done"}]}}`,
	}, "\n") + "\n"
	tr, err := transcript.Read(strings.NewReader(rollout), "r.jsonl", transcript.ReadOptions{})
	require.NoError(t, err)
	var b strings.Builder
	for _, r := range tr.Records {
		j, err := r.MarshalJSON()
		require.NoError(t, err)
		b.Write(j)
		b.WriteByte('\n')
	}
	t.Log(b.String())
	back, err := transcript.Read(strings.NewReader(b.String()), "back.jsonl", transcript.ReadOptions{Strict: true})
	require.NoError(t, err)
	for i := range tr.Records {
		if tr.Records[i].Message != nil {
			require.Equal(t, tr.Records[i].Message.ID, back.Records[i].Message.ID)
			require.Equal(t, tr.Records[i].Message.Model, back.Records[i].Message.Model)
		}
	}
}
