package agentctx

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentctx/agentctx/provider"

	"github.com/agentctx/agentctx/internal/wire"

	"github.com/agentctx/agentctx/transcript"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// cacheMarker locates one cache_control marker of a request.
type cacheMarker struct {
	where string // "system", "tools" or "messages"
	i, j  int
	ttl   string
}

// cacheMarkers lists the request's markers in prefix order (tools, system, messages), from the
// encoded bytes, so that what is checked is what the provider receives.
func cacheMarkers(t *testing.T, req provider.Request) []cacheMarker {
	t.Helper()
	var body struct {
		System   []map[string]json.RawMessage `json:"system"`
		Tools    []map[string]json.RawMessage `json:"tools"`
		Messages []struct {
			Content []map[string]json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	b, err := req.MarshalJSON()
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &body))
	var out []cacheMarker
	add := func(where string, i, j int, obj map[string]json.RawMessage) {
		raw, ok := obj["cache_control"]
		if !ok {
			return
		}
		var cc transcript.CacheControl
		require.NoError(t, json.Unmarshal(raw, &cc), "cache_control %s", raw)
		require.Equal(t, "ephemeral", cc.Type)
		out = append(out, cacheMarker{where, i, j, cc.TTL})
	}
	for i, tool := range body.Tools {
		add("tools", i, 0, tool)
	}
	for i, s := range body.System {
		add("system", i, 0, s)
	}
	for i, m := range body.Messages {
		for j, blk := range m.Content {
			add("messages", i, j, blk)
			if c, ok := blk["content"]; ok && strings.HasPrefix(string(c), "[") {
				var inner []map[string]json.RawMessage
				require.NoError(t, json.Unmarshal(c, &inner))
				for _, ib := range inner {
					add("nested", i, j, ib)
				}
			}
		}
	}
	return out
}

func cachePipeline(t *testing.T, cc CacheConfig) *Pipeline {
	t.Helper()
	return newTestPipeline(t, Config{Cache: cc}, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
}

func cacheTools() []provider.Tool {
	return []provider.Tool{
		{Name: "Read", Definition: json.RawMessage(`{"name":"Read","description":"read a file","input_schema":{"type":"object"}}`)},
		{Name: "Bash", Definition: json.RawMessage(`{"name":"Bash","description":"run","input_schema":{"type":"object"}}`)},
	}
}

// cacheSession: prompt, a tool round, an answer, a new prompt (5 messages).
func cacheSession() *tk {
	k := newTK()
	k.user("read x")
	k.assistant(&transcript.Thinking{Thinking: "hmm", Signature: "sig"}, text("reading"), toolUse("c1", "Read"))
	k.results(result("c1", "content of x"))
	k.assistant(text("x says hi"))
	k.user("thanks, now y")
	return k
}

// TestCacheMarkerBeforeContinuation: a request that ends on an assistant message gets
// normalize's user continuation, and the marker goes on the assistant message before it: the
// next turn sends the user's own message in the continuation's place, and reads the prefix the
// first request cached (with SkipCacheWrite, the marker moves one message further back).
func TestCacheMarkerBeforeContinuation(t *testing.T) {
	k := cacheSession()
	k.assistant(text("y says bye"))
	p := cachePipeline(t, CacheConfig{})
	first, err := p.Prepare(t.Context(), Input{Records: k.recs})
	require.NoError(t, err)
	msgs := first.Request.Messages
	require.Len(t, msgs, 7)
	assert.Equal(t, text(defaultContinuation).Text, msgs[6].Content[0].(*transcript.Text).Text)
	assert.Equal(t, []cacheMarker{{"messages", 5, 0, ""}}, cacheMarkers(t, first.Request), "on the assistant message, not the continuation")

	fork, err := p.Prepare(t.Context(), Input{Records: k.recs, SkipCacheWrite: true})
	require.NoError(t, err)
	assert.Equal(t, []cacheMarker{{"messages", 4, 0, ""}}, cacheMarkers(t, fork.Request))

	k.user("and z?")
	next, err := p.Prepare(t.Context(), Input{Records: k.recs})
	require.NoError(t, err)
	require.Len(t, next.Request.Messages, 7)
	for i := range 6 {
		want := slices.Clone(msgs[i].Content)
		for j, b := range want {
			if transcript.CacheControlOf(b) != nil {
				want[j] = transcript.WithCacheControl(b, nil)
			}
		}
		assert.Equal(t, string(requestBytes(t, provider.Request{Messages: []provider.Message{{Role: msgs[i].Role, Content: want}}})),
			string(requestBytes(t, provider.Request{Messages: next.Request.Messages[i : i+1]})), "message %d is sent again", i)
	}
}

func TestCacheBreakpoints(t *testing.T) {
	tests := []struct {
		name string
		cfg  CacheConfig
		skip bool
		want []cacheMarker
	}{
		{name: "default: one marker on the last message", want: []cacheMarker{{"messages", 4, 0, ""}}},
		{name: "skip cache write: penultimate message", skip: true, want: []cacheMarker{{"messages", 3, 0, ""}}},
		{
			name: "system and tools markers, 1h",
			cfg:  CacheConfig{SystemMarker: true, ToolsMarker: true, TTL: "1h"},
			want: []cacheMarker{{"tools", 1, 0, "1h"}, {"system", 1, 0, "1h"}, {"messages", 4, 0, "1h"}},
		},
		{name: "explicit 5m", cfg: CacheConfig{TTL: "5m", ToolsMarker: true}, want: []cacheMarker{{"tools", 1, 0, "5m"}, {"messages", 4, 0, "5m"}}},
		{name: "disabled", cfg: CacheConfig{Disable: true, SystemMarker: true, ToolsMarker: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			k := cacheSession()
			system := []*transcript.Text{{Text: "You are an agent."}, {Text: "Be brief."}}
			tools := cacheTools()
			res, err := cachePipeline(t, tc.cfg).Prepare(t.Context(), Input{Records: k.recs, System: system, Tools: tools, SkipCacheWrite: tc.skip})
			require.NoError(t, err)
			mcValid(t, res.Request)
			got := cacheMarkers(t, res.Request)
			assert.Equal(t, tc.want, got)
			assert.LessOrEqual(t, len(got), wire.MaxCacheMarkers)
			// The caller's values are not modified.
			assert.Nil(t, system[1].CacheControl)
			assert.Nil(t, tools[1].CacheControl)
			st := res.Report.Stage("cache")
			require.NotNil(t, st)
			require.Len(t, st.Actions, len(tc.want))
			for _, a := range st.Actions {
				assert.Equal(t, ActionMarker, a.Kind)
				assert.NotEmpty(t, a.Detail)
			}
			// TTL order: no 1h marker after a 5m one.
			seen5m := false
			for _, m := range got {
				if m.ttl == "1h" {
					assert.False(t, seen5m)
				} else {
					seen5m = true
				}
			}
		})
	}
}

func TestCacheStripsStaleMarkers(t *testing.T) {
	k := newTK()
	k.user("a")
	k.assistant(&transcript.Text{Text: "b", CacheControl: transcript.Ephemeral()}, &transcript.ToolUse{ID: "s1", Name: "Read", Input: json.RawMessage(`{}`), CacheControl: transcript.Ephemeral()})
	k.results(&transcript.ToolResult{ToolUseID: "s1", Content: []transcript.Block{&transcript.Text{Text: "nested", CacheControl: transcript.Ephemeral()}}, CacheControl: transcript.Ephemeral()})
	k.assistant(text("c"))
	k.user("d")
	// Decode from JSON so the markers are "present" fields, as in a real transcript.
	tr, err := transcript.Read(strings.NewReader(k.jsonl(t)), "t.jsonl", transcript.ReadOptions{})
	require.NoError(t, err)
	system := []*transcript.Text{{Text: "sys", CacheControl: transcript.Ephemeral()}}
	tools := []provider.Tool{{Name: "Read", CacheControl: transcript.Ephemeral(),
		Definition: json.RawMessage(`{"name":"Read","input_schema":{"type":"object"},"cache_control":{"type":"ephemeral"}}`)}}

	res, err := cachePipeline(t, CacheConfig{}).Prepare(t.Context(), Input{Records: tr.Records, System: system, Tools: tools})
	require.NoError(t, err)
	mcValid(t, res.Request)
	got := cacheMarkers(t, res.Request)
	assert.Equal(t, []cacheMarker{{"messages", len(res.Request.Messages) - 1, 0, ""}}, got)
	enc := string(requestBytes(t, res.Request))
	assert.NotContains(t, enc, `"cache_control":null`)
	assert.Equal(t, 1, strings.Count(enc, "cache_control"))
	var repaired []string
	for _, a := range res.Report.Stage("cache").Actions {
		if a.Kind == ActionRepaired {
			repaired = append(repaired, a.Detail)
		}
	}
	// Normalize already rebuilds message blocks without cache_control; the caller's system
	// prompt and tool definitions are this stage's to clean.
	assert.Contains(t, repaired, "removed cache_control from system[0]")
	assert.Contains(t, repaired, "removed cache_control from tools[0] (Read)")
	// The transcript and the caller's values are not modified.
	assert.NotNil(t, system[0].CacheControl)
	assert.Contains(t, string(tools[0].Definition), "cache_control")
	for _, r := range tr.Records {
		if r.Type == transcript.TypeAssistant {
			assert.NotNil(t, transcript.CacheControlOf(r.Message.Content[0]))
			break
		}
	}
}

// TestCacheMarkerPlacement runs the stage alone on hand-built messages.
func TestCacheMarkerPlacement(t *testing.T) {
	think := &transcript.Thinking{Thinking: "t", Signature: "s"}
	redacted := &transcript.RedactedThinking{Data: "r"}
	edits := &transcript.CacheEdits{Edits: []transcript.CacheEdit{{Type: "delete", CacheReference: "r1"}}}
	ref := &transcript.ToolResult{ToolUseID: "r1", Content: []transcript.Block{text("x")}, CacheReference: "r1"}
	tests := []struct {
		name   string
		msgs   []provider.Message
		skip   bool
		wantAt [2]int // message, block; -1 for none
	}{
		{
			name:   "skips empty text and cache_edits",
			msgs:   []provider.Message{{Role: transcript.RoleUser, Content: []transcript.Block{text("q")}}, {Role: transcript.RoleAssistant, Content: []transcript.Block{toolUse("r1", "Read")}}, {Role: transcript.RoleUser, Content: []transcript.Block{ref, text("ok"), text("  "), edits}}},
			wantAt: [2]int{2, 1},
		},
		{
			name:   "no marker on thinking: earlier message",
			msgs:   []provider.Message{{Role: transcript.RoleUser, Content: []transcript.Block{text("q")}}, {Role: transcript.RoleAssistant, Content: []transcript.Block{think, redacted}}},
			wantAt: [2]int{0, 0},
		},
		{
			name:   "skip write with thinking-led assistant",
			msgs:   []provider.Message{{Role: transcript.RoleUser, Content: []transcript.Block{text("q")}}, {Role: transcript.RoleAssistant, Content: []transcript.Block{think, text("a"), toolUse("u", "Read")}}, {Role: transcript.RoleUser, Content: []transcript.Block{result("u", "r")}}},
			skip:   true,
			wantAt: [2]int{1, 2},
		},
		{name: "single message with skip write: none", msgs: []provider.Message{{Role: transcript.RoleUser, Content: []transcript.Block{text("q")}}}, skip: true, wantAt: [2]int{-1, -1}},
		{name: "no messages", wantAt: [2]int{-1, -1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := cachePipeline(t, CacheConfig{})
			orig := make([]provider.Message, len(tc.msgs))
			for i, m := range tc.msgs {
				orig[i] = provider.Message{Role: m.Role, Content: append([]transcript.Block(nil), m.Content...)}
			}
			tn := &turn{in: &Input{SkipCacheWrite: tc.skip}, report: &Report{}, req: provider.Request{Messages: tc.msgs}}
			require.NoError(t, p.stages.cache.run(tn))
			var at [2]int = [2]int{-1, -1}
			n := 0
			for i, m := range tn.req.Messages {
				for j, b := range m.Content {
					if transcript.CacheControlOf(b) != nil {
						at = [2]int{i, j}
						n++
					}
				}
			}
			assert.Equal(t, tc.wantAt, at)
			assert.LessOrEqual(t, n, 1)
			// The input blocks were not modified in place.
			for i, m := range orig {
				for j, b := range m.Content {
					assert.Nil(t, transcript.CacheControlOf(b), "message %d block %d", i, j)
				}
			}
		})
	}
}

// TestCacheStripsMessageMarkers runs the stage alone: markers on message blocks, also inside
// a tool_result, are removed without writing "cache_control":null.
func TestCacheStripsMessageMarkers(t *testing.T) {
	var blocks []transcript.Block
	for _, raw := range []string{
		`{"type":"text","text":"a","cache_control":{"type":"ephemeral"}}`,
		`{"type":"tool_result","tool_use_id":"x","content":[{"type":"text","text":"n","cache_control":{"type":"ephemeral","ttl":"1h"}}],"cache_control":{"type":"ephemeral"}}`,
		`{"type":"image","source":{"type":"url","url":"https://example.com/a.png"},"cache_control":{"type":"ephemeral"}}`,
	} {
		b, err := transcript.UnmarshalBlock([]byte(raw))
		require.NoError(t, err)
		blocks = append(blocks, b)
	}
	msgs := []provider.Message{
		{Role: transcript.RoleUser, Content: []transcript.Block{blocks[0]}},
		{Role: transcript.RoleAssistant, Content: []transcript.Block{toolUse("x", "Read")}},
		{Role: transcript.RoleUser, Content: []transcript.Block{blocks[1], blocks[2], text("last")}},
	}
	p := cachePipeline(t, CacheConfig{})
	tn := &turn{in: &Input{}, report: &Report{}, req: provider.Request{Messages: msgs}}
	require.NoError(t, p.stages.cache.run(tn))
	assert.Equal(t, []cacheMarker{{"messages", 2, 2, ""}}, cacheMarkers(t, tn.req))
	enc := string(requestBytes(t, tn.req))
	assert.NotContains(t, enc, "null")
	assert.Contains(t, enc, `{"type":"tool_result","tool_use_id":"x","content":[{"type":"text","text":"n"}]}`)
	assert.Len(t, tn.report.Stage("cache").Actions, 4, "3 repairs and the marker")
	// The input blocks keep their markers.
	assert.NotNil(t, transcript.CacheControlOf(blocks[0]))
	assert.NotNil(t, transcript.CacheControlOf(blocks[1].(*transcript.ToolResult).Content[0]))
}

func TestCacheReferencesAfterMarker(t *testing.T) {
	refBefore := &transcript.ToolResult{ToolUseID: "a", Content: []transcript.Block{text("x")}, CacheReference: "a"}
	refLast := &transcript.ToolResult{ToolUseID: "b", Content: []transcript.Block{text("y")}, CacheReference: "b"}
	msgs := func() []provider.Message {
		return []provider.Message{
			{Role: transcript.RoleUser, Content: []transcript.Block{text("q")}},
			{Role: transcript.RoleAssistant, Content: []transcript.Block{toolUse("a", "Read")}},
			{Role: transcript.RoleUser, Content: []transcript.Block{refBefore}},
			{Role: transcript.RoleAssistant, Content: []transcript.Block{toolUse("b", "Read")}},
			{Role: transcript.RoleUser, Content: []transcript.Block{refLast, text("go"), &transcript.CacheEdits{Edits: []transcript.CacheEdit{{Type: "delete", CacheReference: "a"}, {Type: "delete", CacheReference: "b"}, {Type: "delete", CacheReference: "a"}, {Type: "delete", CacheReference: "gone"}}}}},
		}
	}
	t.Run("enabled", func(t *testing.T) {
		p := cachePipeline(t, CacheConfig{})
		tn := &turn{in: &Input{}, report: &Report{}, req: provider.Request{Messages: msgs()}}
		require.NoError(t, p.stages.cache.run(tn))
		ms := tn.req.Messages
		assert.Equal(t, "a", ms[2].Content[0].(*transcript.ToolResult).CacheReference)
		assert.Empty(t, ms[4].Content[0].(*transcript.ToolResult).CacheReference, "not before the marker")
		assert.Equal(t, "b", refLast.CacheReference, "input block untouched")
		ce := ms[4].Content[2].(*transcript.CacheEdits)
		assert.Equal(t, []transcript.CacheEdit{{Type: "delete", CacheReference: "a"}}, ce.Edits)
		assert.NotNil(t, transcript.CacheControlOf(ms[4].Content[1]))
	})
	t.Run("disabled drops all cache editing", func(t *testing.T) {
		p := cachePipeline(t, CacheConfig{Disable: true})
		tn := &turn{in: &Input{}, report: &Report{}, req: provider.Request{Messages: msgs()}}
		require.NoError(t, p.stages.cache.run(tn))
		ms := tn.req.Messages
		assert.Empty(t, ms[2].Content[0].(*transcript.ToolResult).CacheReference)
		assert.Len(t, ms[4].Content, 2, "cache_edits dropped")
		b, err := tn.req.MarshalJSON()
		require.NoError(t, err)
		assert.NotContains(t, string(b), "cache_")
	})
}

func TestCacheConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		cfg CacheConfig
		ok  bool
	}{
		{CacheConfig{}, true},
		{CacheConfig{TTL: "5m"}, true},
		{CacheConfig{TTL: "1h", SystemMarker: true, ToolsMarker: true}, true},
		{CacheConfig{TTL: "2h"}, false},
		{CacheConfig{TTL: "ephemeral"}, false},
	} {
		_, err := New(Config{ContextWindow: 1000, Tokens: EstimateCounter{}, Cache: tc.cfg})
		if tc.ok {
			assert.NoError(t, err, "%+v", tc.cfg)
			assert.LessOrEqual(t, tc.cfg.maxMarkers(), wire.MaxCacheMarkers)
		} else {
			assert.ErrorContains(t, err, "agentctx: Cache.TTL", "%+v", tc.cfg)
		}
	}
}

// TestCacheWithCachedMicrocompact: the full pipeline keeps every cache_reference before the
// marker, also for a fork that must not write cache.
func TestCacheWithCachedMicrocompact(t *testing.T) {
	for _, skip := range []bool{false, true} {
		k, _ := mcCachedSession()
		p, err := New(Config{ContextWindow: 200_000, Tokens: EstimateCounter{},
			Microcompact: MicrocompactConfig{Cached: true, CacheEditingBeta: testCacheBeta, CachedTriggerTokens: 100, KeepRecent: 1},
			Cache:        CacheConfig{SystemMarker: true, ToolsMarker: true},
			Now:          func() time.Time { return k.at(0) }})
		require.NoError(t, err)
		res, err := p.Prepare(t.Context(), Input{Records: k.recs, SkipCacheWrite: skip,
			System: []*transcript.Text{{Text: "sys"}}, Tools: cacheTools()})
		require.NoError(t, err)
		mcValid(t, res.Request)
		mcAssertRefsBeforeMarker(t, res.Request)
		edits, _ := mcCacheEdits(res.Request)
		assert.Len(t, edits, 6, "skip=%v", skip)
		assert.Len(t, cacheMarkers(t, res.Request), 3)
	}
}

// TestCacheSystemMarkerDefault: by default the system prompt is marked when the tool
// definitions and the system prompt reach the model's minimum cacheable prefix, and not below
// it; SystemMarker marks it whatever its size, NoSystemMarker never, and both are an error.
func TestCacheSystemMarkerDefault(t *testing.T) {
	least := cachePipeline(t, CacheConfig{}).MinCacheTokens()
	long := []*transcript.Text{{Text: "You are an agent."}, {Text: strings.Repeat("Read the code before you change it. ", least/6)}}
	short := []*transcript.Text{{Text: "You are an agent."}, {Text: "Be brief."}}
	for _, tc := range []struct {
		name   string
		cfg    CacheConfig
		system []*transcript.Text
		want   []cacheMarker
	}{
		{"default, short", CacheConfig{}, short, []cacheMarker{{"messages", 4, 0, ""}}},
		{"default, at the minimum", CacheConfig{}, long, []cacheMarker{{"system", 1, 0, ""}, {"messages", 4, 0, ""}}},
		{"SystemMarker, short", CacheConfig{SystemMarker: true}, short, []cacheMarker{{"system", 1, 0, ""}, {"messages", 4, 0, ""}}},
		{"NoSystemMarker, at the minimum", CacheConfig{NoSystemMarker: true}, long, []cacheMarker{{"messages", 4, 0, ""}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := cachePipeline(t, tc.cfg)
			if tc.system[1] == long[1] {
				require.GreaterOrEqual(t, p.Counter().Text(long[0].Text)+p.Counter().Text(long[1].Text), least)
			}
			res, err := p.Prepare(t.Context(), Input{Records: cacheSession().recs, System: tc.system, Tools: cacheTools()})
			require.NoError(t, err)
			assert.Equal(t, tc.want, cacheMarkers(t, res.Request))
		})
	}
	_, err := New(Config{ContextWindow: 1000, Tokens: EstimateCounter{}, Cache: CacheConfig{SystemMarker: true, NoSystemMarker: true}})
	assert.ErrorContains(t, err, "Cache.SystemMarker and Cache.NoSystemMarker")
}
