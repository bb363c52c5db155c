package session_test

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/provider"
	"github.com/agentctx/agentctx/summarize"

	"github.com/agentctx/agentctx/session"

	"github.com/agentctx/agentctx/transcript"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// seqUUIDs returns a uuid source yielding u1, u2, ….
func seqUUIDs() func() string {
	n := 0
	return func() string { n++; return fmt.Sprintf("u%d", n) }
}

// stepClock returns a clock starting at start that advances a second per reading.
func stepClock(start time.Time) func() time.Time {
	t := start.Add(-time.Second)
	return func() time.Time { t = t.Add(time.Second); return t }
}

func response(id string, blocks ...string) []byte {
	return []byte(`{"id":"` + id + `","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[` +
		strings.Join(blocks, ",") + `],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":12,"output_tokens":7,"service_tier":"standard"}}`)
}

// TestSessionWritesClaudeCodeRecords drives one turn with tool calls through a Session and
// requires the lines Claude Code's format has: the uuid chain, the session id, timestamps
// from the clock, the cwd, the response kept field for field, and the results' source.
func TestSessionWritesClaudeCodeRecords(t *testing.T) {
	var written []transcript.Record
	s := session.New(session.Options{
		ID: "sess", Cwd: "/repo", NewUUID: seqUUIDs(), Now: stepClock(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)),
		Writer: session.RecordWriterFunc(func(rs ...transcript.Record) error { written = append(written, rs...); return nil }),
	})
	_, err := s.User("list the files")
	require.NoError(t, err)
	_, err = s.Response(response("msg_1", `{"type":"text","text":"Looking."}`,
		`{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"ls"}}`,
		`{"type":"tool_use","id":"toolu_2","name":"Read","input":{"file_path":"go.mod"}}`))
	require.NoError(t, err)
	_, err = s.ToolResults(transcript.TextResult("toolu_2", "module x"), transcript.ErrorResult("toolu_1", "permission denied"))
	require.NoError(t, err)

	want := []string{
		`{"type":"user","uuid":"u1","sessionId":"sess","timestamp":"2026-12-01T09:00:00.000Z","message":{"role":"user","content":"list the files"},"cwd":"/repo"}`,
		`{"type":"assistant","uuid":"u2","parentUuid":"u1","sessionId":"sess","timestamp":"2026-12-01T09:00:01.000Z","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"Looking."},{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"ls"}},{"type":"tool_use","id":"toolu_2","name":"Read","input":{"file_path":"go.mod"}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":12,"output_tokens":7,"service_tier":"standard"}},"cwd":"/repo"}`,
		`{"type":"user","uuid":"u3","parentUuid":"u2","sessionId":"sess","timestamp":"2026-12-01T09:00:02.000Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_2","content":"module x"},{"type":"tool_result","tool_use_id":"toolu_1","content":"permission denied","is_error":true}]},"sourceToolAssistantUUID":"u2","cwd":"/repo"}`,
	}
	require.Len(t, written, len(want))
	for i, r := range written {
		b, err := r.MarshalJSON()
		require.NoError(t, err)
		assert.JSONEq(t, want[i], string(b), "record %d", i)
	}
	assert.Equal(t, written, s.Records(), "the session holds what it wrote")
	assert.Equal(t, "u3", s.Leaf())

	chain, err := transcript.BuildChain(s.Records(), transcript.ChainOptions{})
	require.NoError(t, err)
	assert.Len(t, chain.Messages(), 3, "the records form one chain")
}

// TestSessionRefuses lists what a Session will not write, and requires that a refused record
// is neither written nor counted.
func TestSessionRefuses(t *testing.T) {
	turn := func(t *testing.T) *session.Session {
		s := session.New(session.Options{NewUUID: seqUUIDs()})
		_, err := s.User("go")
		require.NoError(t, err)
		// One response written as two split records, Claude Code style: both calls are open.
		m1, err := transcript.DecodeResponse(response("msg_1", `{"type":"tool_use","id":"t1","name":"Bash","input":{}}`))
		require.NoError(t, err)
		m2, err := transcript.DecodeResponse(response("msg_1", `{"type":"tool_use","id":"t2","name":"Bash","input":{}}`))
		require.NoError(t, err)
		_, err = s.Assistant(m1)
		require.NoError(t, err)
		_, err = s.Assistant(m2)
		require.NoError(t, err)
		return s
	}
	tests := []struct {
		name string
		do   func(s *session.Session) error
		want string
	}{
		{"empty prompt", func(s *session.Session) error { _, err := s.User(""); return err }, "empty prompt"},
		{"no blocks", func(s *session.Session) error { _, err := s.UserBlocks(); return err }, "no content blocks"},
		{"tool result as a user block", func(s *session.Session) error { _, err := s.UserBlocks(transcript.TextResult("t1", "x")); return err }, "use ToolResults"},
		{"nil block", func(s *session.Session) error { _, err := s.UserBlocks(nil); return err }, "block 0 is nil"},
		{"user message as assistant", func(s *session.Session) error {
			_, err := s.Assistant(&transcript.Message{Role: transcript.RoleUser})
			return err
		}, "role is not assistant"},
		{"no results", func(s *session.Session) error { _, err := s.ToolResults(); return err }, "no results"},
		{"unknown call", func(s *session.Session) error { _, err := s.ToolResults(transcript.TextResult("t9", "x")); return err }, `tool_use_id "t9"`},
		{"one call answered twice", func(s *session.Session) error {
			_, err := s.ToolResults(transcript.TextResult("t1", "x"), transcript.TextResult("t1", "y"))
			return err
		}, `result 1: tool_use_id "t1"`},
		{"a call already answered", func(s *session.Session) error {
			if _, err := s.ToolResults(transcript.TextResult("t1", "x")); err != nil {
				return err
			}
			_, err := s.ToolResults(transcript.TextResult("t1", "again"))
			return err
		}, `tool_use_id "t1"`},
		{"a call of an earlier turn", func(s *session.Session) error {
			if _, err := s.ToolResults(transcript.TextResult("t1", "x"), transcript.TextResult("t2", "y")); err != nil {
				return err
			}
			if _, err := s.Response(response("msg_2", `{"type":"tool_use","id":"t3","name":"Bash","input":{}}`)); err != nil {
				return err
			}
			_, err := s.ToolResults(transcript.TextResult("t1", "late"))
			return err
		}, `tool_use_id "t1"`},
		{"duplicate uuid", func(s *session.Session) error { return s.Append(s.Records()[0]) }, "already in the transcript"},
		{"unknown parent", func(s *session.Session) error {
			r := s.Record(transcript.TypeUser, &transcript.Message{Role: transcript.RoleUser, Content: []transcript.Block{&transcript.Text{Text: "x"}}})
			r.ParentUUID = "nowhere"
			return s.Append(r)
		}, "parentUuid nowhere is not in the transcript"},
		{"error response", func(s *session.Session) error {
			_, err := s.Response([]byte(`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`))
			return err
		}, "overloaded_error: Overloaded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := turn(t)
			before := len(s.Records())
			leaf := s.Leaf()
			err := tt.do(s)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
			// The failing call adds nothing; calls before it in do may have.
			if !strings.Contains(tt.name, "already answered") && !strings.Contains(tt.name, "earlier turn") {
				assert.Len(t, s.Records(), before)
				assert.Equal(t, leaf, s.Leaf())
			}
		})
	}

	t.Run("writer failure", func(t *testing.T) {
		fail := errors.New("disk full")
		s := session.New(session.Options{NewUUID: seqUUIDs(), Writer: session.RecordWriterFunc(func(...transcript.Record) error { return fail })})
		_, err := s.User("go")
		require.ErrorIs(t, err, fail)
		assert.Empty(t, s.Records(), "a record the writer refused is not counted")
		assert.Empty(t, s.Leaf())
	})
}

// TestDecodeResponse decodes Messages API bodies: a message keeps every field (known or
// not) byte for byte; anything else is an error naming the field.
func TestDecodeResponse(t *testing.T) {
	tests := []struct {
		name, body, err string
	}{
		{"message", string(response("msg_1", `{"type":"text","text":"hi","citations":null}`, `{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{"query":"go"}}`)), ""},
		{"empty content", `{"id":"msg_1","type":"message","role":"assistant","content":[],"stop_reason":"max_tokens"}`, ""},
		{"error", `{"type":"error","error":{"type":"invalid_request_error","message":"bad"}}`, "invalid_request_error: bad"},
		{"not json", `{"id":`, "decode response"},
		{"not a message", `{"id":"x","type":"completion","role":"assistant","content":[]}`, `field type: "completion"`},
		{"user role", `{"id":"x","type":"message","role":"user","content":[]}`, `field role: "user"`},
		{"no id", `{"type":"message","role":"assistant","content":[]}`, "field id: missing"},
		{"string content", `{"id":"x","type":"message","role":"assistant","content":"hi"}`, "field content: a string"},
		{"null block", `{"id":"x","type":"message","role":"assistant","content":[null]}`, "content[0]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := transcript.DecodeResponse([]byte(tt.body))
			if tt.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.err)
				return
			}
			require.NoError(t, err)
			b, err := m.MarshalJSON()
			require.NoError(t, err)
			assert.JSONEq(t, tt.body, string(b), "round trip")
		})
	}
	_, err := transcript.DecodeResponse([]byte(`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`))
	apiErr, ok := errors.AsType[*transcript.APIError](err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, transcript.APIError{Type: "overloaded_error", Message: "Overloaded"}, *apiErr)
}

// TestSessionLoop runs a long conversation through a Session on a small window: it compacts
// on the way, every request validates, the next record follows the compaction's records, and
// the file the Appender wrote reads back as the session's records and prepares the same bytes.
func TestSessionLoop(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	app, err := transcript.OpenAppender(path, transcript.AppendOptions{})
	require.NoError(t, err)
	defer app.Close()
	clock := stepClock(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	s := session.New(session.Options{ID: "sess", Writer: app, Now: clock, NewUUID: seqUUIDs()})
	cfg := normConfig()
	cfg.ContextWindow = 20000
	cfg.Compact.Summarizer = summarize.Extractive{}
	cfg.Validate = true
	p := newTestPipeline(t, cfg, normNow)
	tools := []provider.Tool{valReadTool}

	compactions := 0
	var last agentctx.Result
	prepare := func(i int) agentctx.Result {
		res, err := s.Prepare(t.Context(), p, agentctx.Input{Tools: tools})
		require.NoError(t, err, "turn %d", i)
		if res.Report.Compaction != nil {
			compactions++
			assert.Equal(t, res.Leaf, s.Leaf())
			chain, err := transcript.BuildChain(s.Records(), transcript.ChainOptions{Leaf: s.Leaf()})
			require.NoError(t, err)
			require.NotNil(t, chain.Boundary)
			i := slices.IndexFunc(res.Append, func(r transcript.Record) bool { return r.IsCompactBoundary() })
			require.GreaterOrEqual(t, i, 0)
			assert.Equal(t, res.Append[i].UUID, chain.Boundary.UUID, "the next record continues after the new boundary")
		}
		return res
	}
	for i := range 60 {
		_, err := s.User(fmt.Sprintf("turn %d: read part %d of the file", i, i))
		require.NoError(t, err)
		prepare(i)
		id := fmt.Sprintf("toolu_%d", i)
		_, err = s.Response(response(fmt.Sprintf("msg_%d", i), `{"type":"tool_use","id":"`+id+`","name":"Read","input":{"file_path":"f.txt"}}`))
		require.NoError(t, err)
		_, err = s.ToolResults(transcript.TextResult(id, strings.Repeat(fmt.Sprintf("line %d of part %d\n", i, i), 120)))
		require.NoError(t, err)
		last = prepare(i)
		_, err = s.Response(response(fmt.Sprintf("msg_%db", i), `{"type":"text","text":"Part `+fmt.Sprint(i)+` read."}`))
		require.NoError(t, err)
	}
	assert.Positive(t, compactions, "a 60-turn session on a 20k window compacts")

	tr, err := transcript.ReadFile(path, transcript.ReadOptions{})
	require.NoError(t, err)
	require.Len(t, tr.Records, len(s.Records()))
	for i := range tr.Records {
		a, _ := tr.Records[i].MarshalJSON()
		b, _ := s.Records()[i].MarshalJSON()
		require.Equal(t, string(b), string(a), "record %d reads back as written", i)
	}
	// The last turn again, from the file: the records before its answer give the same bytes.
	again, err := p.Prepare(t.Context(), agentctx.Input{Records: tr.Records[:len(tr.Records)-1], Tools: tools})
	require.NoError(t, err)
	assert.True(t, bytes.Equal(requestBytes(t, last.Request), requestBytes(t, again.Request)), "a resume prepares the same request")

	r, err := session.Resume(tr.Records, session.Options{NewUUID: seqUUIDs()})
	require.NoError(t, err)
	assert.Equal(t, "sess", r.ID())
	assert.Equal(t, s.Leaf(), r.Leaf())
}

// TestSessionPending reads what a conversation waits for at each point of a loop, and after a
// resume from its records.
func TestSessionPending(t *testing.T) {
	s := session.New(session.Options{ID: "sess", NewUUID: seqUUIDs(), Now: stepClock(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))})
	type step struct {
		name string
		do   func() error
		want session.Pending
	}
	var uses []*transcript.ToolUse
	do := func(_ transcript.Record, err error) error { return err }
	steps := []step{
		{"a new session", func() error { return nil }, session.Pending{Waiting: session.WaitingUser}},
		{"a prompt", func() error { return do(s.User("list the files")) }, session.Pending{Waiting: session.WaitingModel}},
		{"two tool calls", func() error {
			r, err := s.Response(response("msg_1", `{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"ls"}}`,
				`{"type":"tool_use","id":"toolu_2","name":"Read","input":{"file_path":"go.mod"}}`))
			for _, b := range r.Message.Content {
				uses = append(uses, b.(*transcript.ToolUse))
			}
			return err
		}, session.Pending{Waiting: session.WaitingTools}},
		{"one result of two", func() error { return do(s.ToolResults(transcript.TextResult("toolu_2", "module x"))) }, session.Pending{Waiting: session.WaitingTools}},
		{"both results", func() error { return do(s.ToolResults(transcript.TextResult("toolu_1", "go.mod"))) }, session.Pending{Waiting: session.WaitingModel}},
		{"an answer cut at max_tokens", func() error {
			return do(s.Response([]byte(`{"id":"msg_2","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"The files a"}],"stop_reason":"max_tokens","usage":{"input_tokens":30,"output_tokens":4}}`)))
		}, session.Pending{Waiting: session.WaitingUser, Truncated: true}},
		{"a finished answer", func() error {
			return do(s.Response([]byte(`{"id":"msg_3","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"Two files."}],"stop_reason":"end_turn","usage":{"input_tokens":30,"output_tokens":4}}`)))
		}, session.Pending{Waiting: session.WaitingUser}},
	}
	for i, st := range steps {
		require.NoError(t, st.do(), st.name)
		want := st.want
		switch i {
		case 2:
			want.ToolUses = uses
		case 3:
			want.ToolUses = uses[:1] // toolu_1 still open
		}
		assert.Equal(t, want, s.Pending(), st.name)
		resumed, err := session.Resume(s.Records(), session.Options{})
		require.NoError(t, err)
		assert.Equal(t, want, resumed.Pending(), "%s, after a resume", st.name)
	}
}

// TestSessionCompact compacts through the session: the records are appended and the leaf
// follows the compaction, so the next record is parented on it and the next Prepare builds
// on the summary; a compaction that cannot help returns a typed error and appends nothing.
func TestSessionCompact(t *testing.T) {
	p := newTestPipeline(t, agentctx.Config{ContextWindow: 32_000, Tokens: agentctx.EstimateCounter{}}, time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	s := session.New(session.Options{ID: "sess", NewUUID: seqUUIDs(), Now: stepClock(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))})
	for i := range 6 {
		_, err := s.User(fmt.Sprintf("step %d: %s", i, strings.Repeat("the parser keeps every token ", 100)))
		require.NoError(t, err)
		_, err = s.Response(fmt.Appendf(nil, `{"id":"msg_%d","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"done %d"}],"stop_reason":"end_turn","usage":{"input_tokens":%d,"output_tokens":4}}`, i, i, 1000*(i+1)))
		require.NoError(t, err)
	}
	before := len(s.Records())
	res, err := s.Compact(t.Context(), p, agentctx.Input{}, agentctx.CompactOptions{Instructions: "keep the step numbers"})
	require.NoError(t, err)
	require.NotNil(t, res.Report.Compaction)
	assert.Equal(t, agentctx.CompactCompacted, res.Report.Compaction.Outcome)
	assert.Equal(t, before+len(res.Append), len(s.Records()), "the compaction's records are in the session")
	assert.Equal(t, res.Leaf, s.Leaf(), "the leaf follows the compaction")
	rec, err := s.User("and now?")
	require.NoError(t, err)
	assert.Equal(t, res.Leaf, rec.ParentUUID)
	next, err := s.Prepare(t.Context(), p, agentctx.Input{})
	require.NoError(t, err)
	assert.Nil(t, next.Report.Compaction, "nothing left to compact")
	assert.Contains(t, transcript.TextOf(next.Request.Messages[0].Content), "<summary>", "the next request starts with the summary")
	assert.Equal(t, session.Pending{Waiting: session.WaitingModel}, s.Pending())

	// A system prompt over the window: no rung can help, and the error says so in its type.
	huge := []*transcript.Text{{Text: strings.Repeat("rule ", 40_000)}}
	n := len(s.Records())
	_, err = s.Compact(t.Context(), p, agentctx.Input{System: huge}, agentctx.CompactOptions{})
	var ptl *provider.PromptTooLongError
	require.ErrorAs(t, err, &ptl)
	assert.Contains(t, ptl.Reason, "manual compaction skipped")
	assert.Equal(t, n, len(s.Records()), "a skipped compaction appends nothing")
}

// Session.Usage attaches a usage learnt after the answer was written: a record of its own,
// through the Writer, and the next Prepare anchors its pressure figure on it; a second usage
// for the same answer is refused.
func TestSessionUsage(t *testing.T) {
	var written []transcript.Record
	s := session.New(session.Options{ID: "sess", NewUUID: seqUUIDs(), Now: stepClock(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)),
		Writer: session.RecordWriterFunc(func(rs ...transcript.Record) error { written = append(written, rs...); return nil })})
	_, err := s.User("What does main.go do?")
	require.NoError(t, err)
	answer, err := s.Assistant(&transcript.Message{ID: "msg_1", Type: "message", Role: transcript.RoleAssistant, Model: "claude-sonnet-4-5",
		Content: []transcript.Block{&transcript.Text{Text: "It starts the server."}}, StopReason: "end_turn"})
	require.NoError(t, err)
	_, err = s.User("And then?")
	require.NoError(t, err)
	p, err := agentctx.New(agentctx.Config{Model: "claude-sonnet-4-5", Tokens: agentctx.EstimateCounter{}})
	require.NoError(t, err)

	before, err := s.Prepare(t.Context(), p, agentctx.Input{})
	require.NoError(t, err)
	assert.Empty(t, before.Report.Pressure.AnchorUUID, "no usage yet")

	leaf := s.Leaf()
	r, err := s.Usage(answer.UUID, transcript.Usage{InputTokens: 1_200, OutputTokens: 30})
	require.NoError(t, err)
	assert.Equal(t, transcript.SubtypeUsage, r.Subtype)
	assert.Equal(t, r.UUID, written[len(written)-1].UUID, "written through the Writer")
	assert.Equal(t, leaf, s.Leaf(), "the leaf does not move")
	after, err := s.Prepare(t.Context(), p, agentctx.Input{})
	require.NoError(t, err)
	assert.Equal(t, answer.UUID, after.Report.Pressure.AnchorUUID)
	assert.Equal(t, 1_230, after.Report.Pressure.Anchor)
	assert.Equal(t, string(agentctxBytes(t, before.Request)), string(agentctxBytes(t, after.Request)))

	_, err = s.Usage(answer.UUID, transcript.Usage{InputTokens: 5})
	assert.ErrorContains(t, err, "attached already")
}

func agentctxBytes(t *testing.T, r provider.Request) []byte {
	t.Helper()
	b, err := r.MarshalJSON()
	require.NoError(t, err)
	return b
}
