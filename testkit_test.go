package agentctx

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentctx/agentctx/provider"

	"github.com/agentctx/agentctx/transcript"

	"github.com/stretchr/testify/require"
)

// tk builds small transcripts for tests: each call appends one record whose parent is the
// previous record (unless a parent is set explicitly), with timestamps one second apart.
type tk struct {
	recs []transcript.Record
	t0   time.Time
	n    int
	last string
	msgN int
}

func newTK() *tk { return &tk{t0: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)} }

func (k *tk) next(typ transcript.RecordType) *transcript.Record {
	k.n++
	r := transcript.Record{
		Type:       typ,
		UUID:       fmt.Sprintf("00000000-0000-4000-8000-%012d", k.n),
		ParentUUID: k.last,
		SessionID:  "11111111-1111-4111-8111-111111111111",
		Timestamp:  k.t0.Add(time.Duration(k.n) * time.Second).Format("2006-01-02T15:04:05.000Z"),
	}
	k.last = r.UUID
	return &r
}

func (k *tk) add(r *transcript.Record) *transcript.Record {
	k.recs = append(k.recs, *r)
	return &k.recs[len(k.recs)-1]
}

// user appends a user prompt with string content.
func (k *tk) user(text string) *transcript.Record {
	r := k.next(transcript.TypeUser)
	r.Message = &transcript.Message{Role: transcript.RoleUser, Content: []transcript.Block{&transcript.Text{Text: text}}, StringContent: true}
	return k.add(r)
}

// testCacheBeta stands for the cache-editing beta header value in tests.
const testCacheBeta = "cache-editing-test"

// userBlocks appends a user message of the given blocks.
func (k *tk) userBlocks(blocks ...transcript.Block) *transcript.Record {
	r := k.next(transcript.TypeUser)
	r.Message = &transcript.Message{Role: transcript.RoleUser, Content: blocks}
	return k.add(r)
}

// assistant appends one assistant record per block, all sharing one message id (the way
// Claude Code writes a response), with usage on every record.
func (k *tk) assistant(blocks ...transcript.Block) *transcript.Record {
	k.msgN++
	id := fmt.Sprintf("msg_%04d", k.msgN)
	var r *transcript.Record
	for _, b := range blocks {
		r = k.next(transcript.TypeAssistant)
		r.Message = &transcript.Message{ID: id, Type: "message", Role: transcript.RoleAssistant, Model: "claude-sonnet-4-5",
			Content: []transcript.Block{b}, Usage: &transcript.Usage{InputTokens: 10, OutputTokens: 5}}
		r = k.add(r)
	}
	return r
}

// readTurns appends n turns of one file read each: a question, a Read call, its result and
// the answer.
func (k *tk) readTurns(n int) {
	for turn := range n {
		k.user(fmt.Sprintf("question %d", turn))
		tu := toolUse(fmt.Sprintf("toolu_%d", turn), "Read")
		k.assistant(text("Reading."), tu)
		k.results(result(tu.ID, fmt.Sprintf("contents of file %d", turn)))
		k.assistant(text("Read."))
	}
}

// results appends one user record per tool result, each parented on the record that holds
// its tool_use (as Claude Code does for parallel calls).
func (k *tk) results(trs ...*transcript.ToolResult) *transcript.Record {
	var r *transcript.Record
	for _, tr := range trs {
		r = k.next(transcript.TypeUser)
		for i := len(k.recs) - 1; i >= 0; i-- {
			if m := k.recs[i].Message; m != nil && k.recs[i].Type == transcript.TypeAssistant && len(m.Content) > 0 {
				if tu, ok := m.Content[0].(*transcript.ToolUse); ok && tu.ID == tr.ToolUseID {
					r.ParentUUID = k.recs[i].UUID
					break
				}
			}
		}
		r.Message = &transcript.Message{Role: transcript.RoleUser, Content: []transcript.Block{tr}}
		r = k.add(r)
	}
	return r
}

// decision appends a record as is (decision records have no parent).
func (k *tk) decision(r transcript.Record) { k.recs = append(k.recs, r) }

func text(s string) *transcript.Text { return &transcript.Text{Text: s} }

func toolUse(id, name string) *transcript.ToolUse {
	return &transcript.ToolUse{ID: id, Name: name, Input: json.RawMessage(`{"path":"x"}`)}
}

func result(id, content string) *transcript.ToolResult {
	return &transcript.ToolResult{ToolUseID: id, Content: []transcript.Block{&transcript.Text{Text: content}}, StringContent: true}
}

// at returns the time of the n-th record plus d.
func (k *tk) at(d time.Duration) time.Time { return k.t0.Add(time.Duration(k.n)*time.Second + d) }

// jsonl encodes the records as a transcript.
func (k *tk) jsonl(t testing.TB) string { return encodeRecords(t, k.recs) }

var errCanceled = context.Canceled

func newCanceled(t *testing.T) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	return ctx, cancel
}

// newTestPipeline returns New(cfg) with the test defaults filled in where cfg leaves them
// zero: a 200,000-token window, the bytes/3 estimate and a clock fixed at now.
func newTestPipeline(t testing.TB, cfg Config, now time.Time) *Pipeline {
	t.Helper()
	if cfg.ContextWindow == 0 {
		cfg.ContextWindow = 200_000
	}
	if cfg.Tokens == nil {
		cfg.Tokens = EstimateCounter{}
	}
	cfg.Now = func() time.Time { return now }
	p, err := New(cfg)
	require.NoError(t, err)
	return p
}

// requestBytes returns the request body.
func requestBytes(t testing.TB, req provider.Request) []byte {
	t.Helper()
	b, err := req.MarshalJSON()
	require.NoError(t, err)
	return b
}

// toolResults returns the tool results of the request by tool_use_id, and the index of the
// message holding each.
func toolResults(req provider.Request) (map[string]*transcript.ToolResult, map[string]int) {
	trs, msg := map[string]*transcript.ToolResult{}, map[string]int{}
	for i, m := range req.Messages {
		for _, b := range m.Content {
			if tr, ok := b.(*transcript.ToolResult); ok {
				trs[tr.ToolUseID], msg[tr.ToolUseID] = tr, i
			}
		}
	}
	return trs, msg
}

// resultText joins the text blocks of a tool result.
func resultText(tr *transcript.ToolResult) string {
	var b strings.Builder
	for _, c := range tr.Content {
		if tx, ok := c.(*transcript.Text); ok {
			b.WriteString(tx.Text)
		}
	}
	return b.String()
}

// roundTrip sends records through their JSONL encoding, as a resume does.
func roundTrip(t testing.TB, recs []transcript.Record) []transcript.Record {
	t.Helper()
	tr, err := transcript.Read(strings.NewReader(encodeRecords(t, recs)), "appended", transcript.ReadOptions{Strict: true})
	require.NoError(t, err)
	require.True(t, tr.Clean(), "every record reads back")
	return tr.Records
}

// encodeRecords encodes records as transcript lines.
func encodeRecords(t testing.TB, recs []transcript.Record) string {
	t.Helper()
	var b strings.Builder
	for _, r := range recs {
		enc, err := json.Marshal(r)
		require.NoError(t, err)
		b.Write(enc)
		b.WriteByte('\n')
	}
	return b.String()
}
