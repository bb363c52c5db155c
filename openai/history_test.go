package openai_test

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/hostrec"
	"github.com/agentctx/agentctx/internal/providertest"
	"github.com/agentctx/agentctx/openai"
	"github.com/agentctx/agentctx/provider"
	"github.com/agentctx/agentctx/summarize"
	"github.com/agentctx/agentctx/transcript"
	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// roundTrip is one API's conversion of a conversation: records → SDK → records, and the
// part of the body the conversation makes (messages, or instructions and input).
type roundTrip struct {
	name string
	back func(t *testing.T, system []*transcript.Text, records []transcript.Record) ([]*transcript.Text, []transcript.Record)
	body func(t *testing.T, req provider.Request) []byte
	// lossy returns records as the API's messages hold them.
	lossy func(records []transcript.Record) []transcript.Record
}

// history is what both conversions make of records.
type history interface {
	Records(openai.RecordOptions) ([]*transcript.Text, []transcript.Record, error)
}

// via is the round trip through one API's history.
func via[H history](of func([]*transcript.Text, []transcript.Record) (H, []openai.Drop, error)) func(*testing.T, []*transcript.Text, []transcript.Record) ([]*transcript.Text, []transcript.Record) {
	return func(t *testing.T, system []*transcript.Text, records []transcript.Record) ([]*transcript.Text, []transcript.Record) {
		t.Helper()
		h, _, err := of(system, records)
		require.NoError(t, err)
		sys, back, err := h.Records(openai.RecordOptions{SessionID: "corpus", Cwd: transcript.LastCwd(records)})
		require.NoError(t, err)
		return sys, back
	}
}

// sent is the JSON of what a body holds of the conversation.
func sent[P any](params func(provider.Request, openai.Options) (P, []openai.Drop, error), part func(P) any) func(*testing.T, provider.Request) []byte {
	return func(t *testing.T, req provider.Request) []byte {
		t.Helper()
		p, _, err := params(req, openai.Options{})
		require.NoError(t, err)
		b, err := json.Marshal(part(p))
		require.NoError(t, err)
		return b
	}
}

var roundTrips = []roundTrip{
	{"chat", via(openai.ChatHistoryOf), sent(openai.ChatParams, func(p sdk.ChatCompletionNewParams) any { return p.Messages }),
		func(records []transcript.Record) []transcript.Record {
			return joinTexts(withoutThinking(records), true)
		}},
	{"responses", via(openai.ResponsesHistoryOf), sent(openai.ResponsesParams, func(p responses.ResponseNewParams) any { return []any{p.Instructions, p.Input} }),
		func(records []transcript.Record) []transcript.Record {
			return joinTexts(withoutThinking(records), false)
		}},
}

// TestHistoryCorpus converts every corpus session's records into each API's messages and
// back, and checks that the bodies the adapter sends for the requests a Pipeline builds from
// both record lists are the same. A request that differs must be the same as the one built
// from the session as the API's messages hold it: without Anthropic's thinking (and the
// records only it filled), which neither API carries, and with the texts of an assistant
// message (and, in Chat Completions, of a user message) joined into one: the pipeline then
// counted, cut and summarized another conversation.
func TestHistoryCorpus(t *testing.T) {
	sessions := providertest.CorpusSessions(t, "..")
	for _, rt := range roundTrips {
		t.Run(rt.name, func(t *testing.T) {
			same, lost := 0, 0
			for _, s := range sessions {
				_, back := rt.back(t, nil, s.Records)
				var stripped []transcript.Record // built when needed
				for _, c := range providertest.CorpusConfigs() {
					want, werr := c.Prepare(t, s.Records)
					got, gerr := c.Prepare(t, back)
					if werr != nil {
						assert.Error(t, gerr, "%s %s", s.Name, c.Name)
						continue
					}
					require.NoError(t, gerr, "%s %s", s.Name, c.Name)
					d := providertest.JSONDiff(rt.body(t, want), rt.body(t, got))
					if d == "" {
						same++
						continue
					}
					lost++
					if stripped == nil {
						stripped = rt.lossy(s.Records)
					}
					want, err := c.Prepare(t, stripped)
					require.NoError(t, err)
					if d2 := providertest.JSONDiff(rt.body(t, want), rt.body(t, got)); d2 != "" {
						t.Errorf("%s %s: %s (as the API holds it: %s)", s.Name, c.Name, d, d2)
						continue
					}
					t.Logf("format loss: %s %s: %s", s.Name, c.Name, d)
				}
			}
			t.Logf("%d sessions: %d requests the same, %d differing by a format loss", len(sessions), same, lost)
			assert.Positive(t, same)
		})
	}
}

// withoutThinking returns records without their thinking blocks and without the assistant
// records that held nothing else (their children linked to their parents), as the messages
// of either API hold them.
func withoutThinking(records []transcript.Record) []transcript.Record {
	gone := map[string]string{}
	out := make([]transcript.Record, 0, len(records))
	for _, r := range records {
		if r.Message != nil && slices.ContainsFunc(r.Message.Content, isThinking) {
			m := *r.Message
			m.Content = slices.DeleteFunc(slices.Clone(m.Content), isThinking)
			if len(m.Content) == 0 {
				gone[r.UUID] = r.ParentUUID
				continue
			}
			r.Message = &m
		}
		for gone[r.ParentUUID] != "" {
			r.ParentUUID = gone[r.ParentUUID]
		}
		out = append(out, r)
	}
	return out
}

// joinTexts returns records with the text blocks of each assistant message joined into one,
// first, and, when user is set, those of a user message whose blocks besides tool results
// are all text joined into one, after the results.
func joinTexts(records []transcript.Record, user bool) []transcript.Record {
	out := slices.Clone(records)
	for i := range out {
		r := &out[i]
		if r.Message == nil || r.Message.Role == transcript.RoleUser && !user {
			continue
		}
		var texts []string
		var rest []transcript.Block
		for _, b := range r.Message.Content {
			if t, ok := b.(*transcript.Text); ok && strings.TrimSpace(t.Text) != "" {
				texts = append(texts, t.Text)
			} else {
				rest = append(rest, b)
			}
		}
		if len(texts) < 2 || r.Message.Role == transcript.RoleUser && slices.ContainsFunc(rest, func(b transcript.Block) bool { return b.Kind() != transcript.KindToolResult }) {
			continue
		}
		m := *r.Message
		joined := &transcript.Text{Text: strings.Join(texts, "\n\n")}
		if m.Role == transcript.RoleAssistant {
			m.Content = append([]transcript.Block{joined}, rest...)
		} else {
			m.Content = append(rest, joined)
		}
		r.Message = &m
	}
	return out
}

func isThinking(b transcript.Block) bool {
	return b.Kind() == transcript.KindThinking || b.Kind() == transcript.KindRedactedThinking
}

// TestHistoryCodex reads the Codex rollouts of the corpus, whose answers hold reasoning
// items with encrypted content, and checks that a Pipeline keeping them
// (NormalizeConfig.KeepReasoningItems) sends them as reasoning items, and that their
// Responses round trip gives the same input.
func TestHistoryCodex(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "..", "shared", "corpus", "codex", "*", "*.jsonl"))
	if len(files) == 0 {
		t.Skip("../shared/corpus/codex has no rollouts; Codex round trip skipped (clone without shared/)")
	}
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	rt := roundTrips[1]
	reasoning := 0
	for _, window := range []int{400_000, 40_000} {
		p, err := agentctx.New(agentctx.Config{Model: "gpt-5", ContextWindow: window, Tokens: agentctx.EstimateCounter{}, Validate: true,
			Now: func() time.Time { return now }, Compact: agentctx.CompactConfig{Summarizer: summarize.Extractive{}},
			Normalize: agentctx.NormalizeConfig{KeepReasoningItems: true}})
		require.NoError(t, err)
		for _, f := range files {
			tr, err := transcript.ReadFile(f, transcript.ReadOptions{})
			require.NoError(t, err, f)
			want, err := p.Prepare(t.Context(), agentctx.Input{System: tr.System, Records: tr.Records})
			require.NoError(t, err, "%s window=%d", f, window)
			sys, back := rt.back(t, tr.System, tr.Records)
			got, err := p.Prepare(t.Context(), agentctx.Input{System: sys, Records: back})
			require.NoError(t, err, "%s window=%d", f, window)
			wb := rt.body(t, want.Request)
			assert.Empty(t, providertest.JSONDiff(wb, rt.body(t, got.Request)), "%s window=%d", f, window)
			reasoning += strings.Count(string(wb), `"type":"reasoning"`)
		}
	}
	t.Logf("%d rollouts under 2 windows: %d reasoning items sent back", len(files), reasoning)
	assert.Positive(t, reasoning, "the reasoning items are sent")
}

// TestHistoryGolden converts the messages of every golden request, as records, into each
// API's messages and back: the messages are those ChatParams and ResponsesParams send for
// the request, and the records come back as messages that send the same.
func TestHistoryGolden(t *testing.T) {
	tested := 0
	for _, c := range providertest.Goldens(t, "../testdata/cases") {
		if slices.ContainsFunc(c.Request.Messages, func(m provider.Message) bool {
			return slices.ContainsFunc(m.Content, func(b transcript.Block) bool { return b.Kind() == transcript.KindCacheEdits })
		}) {
			continue // a request's cache_edits blocks are the pipeline's: no record holds one
		}
		records := make([]transcript.Record, 0, len(c.Request.Messages))
		for i, m := range c.Request.Messages {
			compactInputs(t, m.Content)
			r, err := hostrec.Record(&transcript.Message{Role: m.Role, Content: m.Content}, hostrec.Flags{}, c.Name)
			require.NoError(t, err, "%s: messages[%d]", c.Name, i)
			records = append(records, r)
		}
		require.NoError(t, hostrec.Chain(records, hostrec.Options{SessionID: "golden"}, func(int) string { return c.Name }))
		tested++

		ch, _, err := openai.ChatHistoryOf(c.Request.System, records)
		require.NoError(t, err, c.Name)
		cp, _, err := openai.ChatParams(c.Request, openai.Options{})
		require.NoError(t, err, c.Name)
		assert.Equal(t, jsonOf(t, cp.Messages), jsonOf(t, ch.Messages), c.Name)
		sys, back, err := ch.Records(openai.RecordOptions{SessionID: "golden"})
		require.NoError(t, err, c.Name)
		assert.Equal(t, string(roundTrips[0].body(t, c.Request)), string(roundTrips[0].body(t, request(sys, back))), c.Name)

		rh, _, err := openai.ResponsesHistoryOf(c.Request.System, records)
		require.NoError(t, err, c.Name)
		rp, _, err := openai.ResponsesParams(c.Request, openai.Options{})
		require.NoError(t, err, c.Name)
		assert.Equal(t, jsonOf(t, rp.Input.OfInputItemList), jsonOf(t, rh.Input), c.Name)
		assert.Equal(t, rp.Instructions.Value, rh.Instructions, c.Name)
		sys, back, err = rh.Records(openai.RecordOptions{SessionID: "golden"})
		require.NoError(t, err, c.Name)
		assert.Equal(t, string(roundTrips[1].body(t, c.Request)), string(roundTrips[1].body(t, request(sys, back))), c.Name)
	}
	t.Logf("%d golden requests", tested)
	assert.Positive(t, tested)
}

// compactInputs compacts the tool calls' inputs, as an answer's are recorded: the golden
// files are indented.
func compactInputs(t *testing.T, blocks []transcript.Block) {
	t.Helper()
	for _, b := range blocks {
		if tu, ok := b.(*transcript.ToolUse); ok && len(tu.Input) > 0 {
			var buf bytes.Buffer
			require.NoError(t, json.Compact(&buf, tu.Input))
			tu.Input = buf.Bytes()
		}
	}
}

// request is a request of the records' messages.
func request(system []*transcript.Text, records []transcript.Record) provider.Request {
	req := provider.Request{System: system}
	for _, r := range records {
		req.Messages = append(req.Messages, provider.Message{Role: r.Message.Role, Content: r.Message.Content})
	}
	return req
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}
