package provider

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/agentctx/agentctx/transcript"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEncodeCorpus compares the encoder with the reference on the messages of every corpus
// session as decoded (unknown fields, null fields, unknown blocks and all); the root package's
// test does the same for the requests a Pipeline prepares from them.
func TestEncodeCorpus(t *testing.T) {
	reqs := corpusRequests(t)
	if reqs == nil {
		t.Skip("../shared/corpus not found; corpus encoding test skipped")
	}
	for f, req := range reqs {
		checkEncoding(t, f, req)
	}
}

// checkEncoding asserts that req encodes to the reference encoder's bytes (or error) four
// ways: without a memo, with a cold memo, with the memo warm, and with the memo again after
// the parts went to its previous generation.
func checkEncoding(t *testing.T, name string, req Request) {
	t.Helper()
	want, wantErr := req.marshalSlow()
	memo := NewEncodeMemo()
	for _, how := range []struct {
		name string
		memo *EncodeMemo
	}{{"no memo", nil}, {"cold memo", memo}, {"warm memo", memo}} {
		got, err := encodeRequest(&req, how.memo)
		if wantErr != nil {
			if assert.Error(t, err, "%s, %s", name, how.name) {
				assert.Equal(t, wantErr.Error(), err.Error(), "%s, %s", name, how.name)
			}
			continue
		}
		require.NoError(t, err, "%s, %s", name, how.name)
		assert.Equal(t, string(want), string(got), "%s, %s", name, how.name)
	}
	// The size bodyBytes measures: the same length, whether the memo holds the parts or not,
	// and the parts it memoized while measuring give the same bytes after.
	sizeMemo := NewEncodeMemo()
	for _, how := range []struct {
		name string
		memo *EncodeMemo
	}{{"no memo", nil}, {"cold memo", sizeMemo}, {"warm memo", sizeMemo}} {
		n, err := encodedSize(&req, how.memo)
		if wantErr != nil {
			assert.Error(t, err, "%s, size, %s", name, how.name)
			continue
		}
		require.NoError(t, err, "%s, size, %s", name, how.name)
		assert.Equal(t, len(want), n, "%s, size, %s", name, how.name)
	}
	// WriteTo writes the same bytes in pieces, copying what a memo holds and storing nothing.
	for _, how := range []struct {
		name string
		memo *EncodeMemo
	}{{"no memo", nil}, {"cold memo", NewEncodeMemo()}, {"warm memo", sizeMemo}} {
		r := req
		r.Memo = how.memo
		var b bytes.Buffer
		n, err := r.WriteTo(&b)
		if wantErr != nil {
			if assert.Error(t, err, "%s, WriteTo, %s", name, how.name) {
				assert.Equal(t, wantErr.Error(), err.Error(), "%s, WriteTo, %s", name, how.name)
			}
			continue
		}
		require.NoError(t, err, "%s, WriteTo, %s", name, how.name)
		assert.Equal(t, string(want), b.String(), "%s, WriteTo, %s", name, how.name)
		assert.Equal(t, int64(b.Len()), n, "%s, WriteTo, %s", name, how.name)
		if how.name == "cold memo" {
			assert.Empty(t, how.memo.cur, "%s, WriteTo stores nothing", name)
		}
	}
	// AppendJSON appends the same bytes after what the buffer holds, into its array when it
	// has room to spare; on an error it returns the buffer as it was.
	for _, how := range []struct {
		name string
		memo *EncodeMemo
	}{{"no memo", nil}, {"warm memo", memo}} {
		r := req
		r.Memo = how.memo
		buf := append(make([]byte, 0, 2*len(want)+4096), "prefix "...)
		got, err := r.AppendJSON(buf)
		if wantErr != nil {
			if assert.Error(t, err, "%s, AppendJSON, %s", name, how.name) {
				assert.Equal(t, wantErr.Error(), err.Error(), "%s, AppendJSON, %s", name, how.name)
			}
			assert.Equal(t, "prefix ", string(got), "%s, AppendJSON, %s", name, how.name)
			continue
		}
		require.NoError(t, err, "%s, AppendJSON, %s", name, how.name)
		assert.Equal(t, "prefix "+string(want), string(got), "%s, AppendJSON, %s", name, how.name)
		assert.Same(t, &buf[0], &got[0], "%s, AppendJSON into the buffer's room, %s", name, how.name)
	}
	if wantErr != nil {
		return
	}
	if got, err := encodeRequest(&req, sizeMemo); assert.NoError(t, err, name) {
		assert.Equal(t, string(want), string(got), "%s, after measuring", name)
	}
	memo.mu.Lock()
	memo.prev, memo.cur, memo.curBytes = memo.cur, map[encodeKey]encodedPart{}, 0
	memo.mu.Unlock()
	got, err := encodeRequest(&req, memo)
	require.NoError(t, err, name)
	assert.Equal(t, string(want), string(got), "%s, from the previous generation", name)
	req.Memo = memo
	got, err = req.MarshalJSON()
	require.NoError(t, err, name)
	assert.Equal(t, string(want), string(got), "%s, MarshalJSON", name)
}

func mustBlock(t *testing.T, js string) transcript.Block {
	t.Helper()
	b, err := transcript.UnmarshalBlock([]byte(js))
	require.NoError(t, err, js)
	return b
}

// TestEncodeAdversarial compares the encoder with the reference on the cases its fast path
// must get exactly right or hand over: every escape, invalid UTF-8, fields decoded as null or
// present and empty, unknown fields at the top level and nested, raw JSON with whitespace,
// bad raw JSON, blocks a position cannot hold, and every request-level field.
func TestEncodeAdversarial(t *testing.T) {
	var ascii strings.Builder
	for c := range 128 {
		ascii.WriteByte(byte(c))
	}
	nasty := ascii.String() + "\xff\xfe<>&\u2028\u2029\u00e9\U0001F600\xe2\x82"
	text := func(s string) *transcript.Text { return &transcript.Text{Text: s} }
	msg := func(role transcript.Role, bs ...transcript.Block) Request {
		return Request{Model: "claude-<x>", MaxTokens: 7, Messages: []Message{{Role: role, Content: bs}}}
	}
	tests := []struct {
		name string
		req  Request
	}{
		{"escapes in text", msg(transcript.RoleUser, text(nasty))},
		{"escapes everywhere", Request{Model: nasty, MaxTokens: -3, System: []*transcript.Text{text(nasty)},
			Messages:   []Message{{Role: transcript.Role(nasty), Content: []transcript.Block{&transcript.ToolUse{ID: nasty, Name: nasty, Input: json.RawMessage(`{"a": "` + "\\u003c<>" + `"}`)}}}},
			Tools:      []Tool{{Name: "t", Definition: json.RawMessage(`{ "name" : "t", "x": "<&>" }`)}},
			ToolChoice: &ToolChoice{Type: "tool", Name: nasty}, Thinking: &Thinking{Type: "enabled", BudgetTokens: 2048}}},
		{"empty request", Request{}},
		{"nil content", Request{Messages: []Message{{Role: transcript.RoleUser}}}},
		{"tool choice without name, thinking without budget", Request{Messages: []Message{{Role: transcript.RoleUser, Content: []transcript.Block{text("x")}}},
			ToolChoice: &ToolChoice{Type: "auto"}, Thinking: &Thinking{Type: "disabled"}}},
		{"tool with cache marker", Request{Messages: []Message{{Role: transcript.RoleUser, Content: []transcript.Block{text("x")}}},
			Tools: []Tool{{Name: "a", Definition: json.RawMessage(`{"name":"a"}`)}, {Name: "b", Definition: json.RawMessage(`{"name": "b", "input_schema": {"type": "object"}}`), CacheControl: &transcript.CacheControl{Type: "ephemeral", TTL: "1h"}}}}},
		{"bad tool definition", Request{Tools: []Tool{{Name: "a", Definition: json.RawMessage(`{"name":`)}}}},
		{"bad tool definition with marker", Request{Tools: []Tool{{Name: "a", Definition: json.RawMessage(`[1]`), CacheControl: transcript.Ephemeral()}}}},
		{"decoded nulls", msg(transcript.RoleAssistant,
			mustBlock(t, `{"type":"text","text":null,"citations":null,"cache_control":null}`),
			mustBlock(t, `{"type":"tool_use","id":null,"name":"","input":null,"cache_control":null}`),
			mustBlock(t, `{"type":"thinking","thinking":"","signature":null}`),
			mustBlock(t, `{"type":"redacted_thinking","data":null}`),
			mustBlock(t, `{"type":"server_tool_use","id":"s","name":null,"input":{ "q" : 1 }}`),
			mustBlock(t, `{"type":"web_search_tool_result","tool_use_id":null,"content":[ 1, 2 ]}`))},
		{"decoded result fields", msg(transcript.RoleUser,
			mustBlock(t, `{"type":"tool_result","tool_use_id":"x","content":null,"is_error":false,"cache_control":null,"cache_reference":""}`),
			mustBlock(t, `{"type":"tool_result","tool_use_id":"y","content":[],"is_error":null}`),
			mustBlock(t, `{"type":"tool_result","tool_use_id":"z","content":"","is_error":true}`),
			mustBlock(t, `{"type":"tool_result","tool_use_id":"w","content":"a<b"}`),
			mustBlock(t, `{"type":"tool_result","tool_use_id":"v","content":[{"type":"text","text":"t","citations":[ {"a": 1} ]},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AAAA"}}, {"type":"search_result", "x" : [1, 2]}]}`))},
		{"media", msg(transcript.RoleUser,
			mustBlock(t, `{"type":"image","source":null}`),
			mustBlock(t, `{"type":"image","source":{}}`),
			mustBlock(t, `{"type":"image","source":{"type":"url","url":"https://e/x.png","media_type":null}}`),
			&transcript.Image{},
			&transcript.Image{Source: transcript.MediaSource{Extra: map[string]json.RawMessage{}}},
			mustBlock(t, `{"type":"document","source":{"type":"text","media_type":"text/plain","data":"d"},"title":"T","context":null,"citations":{"enabled": true},"cache_control":{"type":"ephemeral"}}`),
			&transcript.Document{Source: transcript.MediaSource{Type: "file", FileID: "f"}, Title: nasty})},
		{"unknown fields", msg(transcript.RoleUser,
			mustBlock(t, `{"type":"text","text":"x","zeta":  [1,  2],"<a>":1,"alpha":{ }}`),
			mustBlock(t, `{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AA","extra": { "k" : 1 }}}`),
			mustBlock(t, `{"type":"tool_result","tool_use_id":"x","content":[{"type":"text","text":"n","later": [ 3 ] }]}`),
			mustBlock(t, `{"type":"tool_reference","tool_name":"x","y":2}`))},
		{"unknown blocks", msg(transcript.RoleUser,
			mustBlock(t, `{"type":"search_result", "source": "s" , "content": [ ] }`),
			mustBlock(t, `{"type":"mystery","a":  1}`),
			&transcript.UnknownBlock{Type: "empty"})},
		{"tool reference, cache edits", msg(transcript.RoleUser,
			&transcript.ToolReference{ToolName: "x"},
			&transcript.CacheEdits{Edits: []transcript.CacheEdit{{Type: "delete", CacheReference: "r<1>"}}},
			&transcript.CacheEdits{})},
		{"cache markers", msg(transcript.RoleUser,
			&transcript.Text{Text: "a", CacheControl: transcript.Ephemeral()},
			&transcript.ToolResult{ToolUseID: "t", StringContent: true, Content: []transcript.Block{text("r")}, CacheControl: &transcript.CacheControl{Type: "ephemeral", TTL: "5m"}, CacheReference: "ref"})},
		{"string content that is not one text", msg(transcript.RoleUser,
			&transcript.ToolResult{ToolUseID: "a", StringContent: true},
			&transcript.ToolResult{ToolUseID: "b", StringContent: true, Content: []transcript.Block{text("1"), text("2")}},
			&transcript.ToolResult{ToolUseID: "c", StringContent: true, Content: []transcript.Block{&transcript.Image{Source: transcript.MediaSource{Type: "url", URL: "u"}}}},
			&transcript.ToolResult{ToolUseID: "d", Content: []transcript.Block{}})},
		{"bad raw input", msg(transcript.RoleAssistant, &transcript.ToolUse{ID: "a", Name: "n", Input: json.RawMessage(`{"a":`)})},
		{"empty raw input", msg(transcript.RoleAssistant, &transcript.ToolUse{ID: "a", Name: "n", Input: json.RawMessage{}})},
		{"bad citations nested", msg(transcript.RoleUser, &transcript.ToolResult{ToolUseID: "a", Content: []transcript.Block{&transcript.Text{Text: "x", Citations: json.RawMessage(`nope`)}}})},
		{"bad unknown nested", msg(transcript.RoleUser, &transcript.ToolResult{ToolUseID: "a", Content: []transcript.Block{&transcript.UnknownBlock{Type: "x", JSON: json.RawMessage(`{"a"`)}}})},
		{"nil block nested", msg(transcript.RoleUser, &transcript.ToolResult{ToolUseID: "a", Content: []transcript.Block{nil}})},
		{"cache edits nested", msg(transcript.RoleUser, &transcript.ToolResult{ToolUseID: "a", Content: []transcript.Block{&transcript.CacheEdits{}}})},
		{"nil block", msg(transcript.RoleUser, text("ok"), nil)},
		{"server result without type", msg(transcript.RoleAssistant, &transcript.ServerToolResult{ToolUseID: "x", Content: json.RawMessage(`[]`)})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { checkEncoding(t, tt.name, tt.req) })
	}
}

// TestEncodeMemoKeys checks that the memo tells apart what encodes differently: a moved cache
// marker, a changed text of the same length, a presence bit, nil and empty raw JSON.
func TestEncodeMemoKeys(t *testing.T) {
	memo := NewEncodeMemo()
	enc := func(bs ...transcript.Block) string {
		req := Request{Messages: []Message{{Role: transcript.RoleUser, Content: bs}}}
		b, err := encodeRequest(&req, memo)
		require.NoError(t, err)
		want, err := req.marshalSlow()
		require.NoError(t, err)
		require.Equal(t, string(want), string(b))
		return string(b)
	}
	seen := map[string]bool{}
	for _, bs := range [][]transcript.Block{
		{&transcript.Text{Text: "abc"}},
		{&transcript.Text{Text: "abd"}},
		{&transcript.Text{Text: "abc", CacheControl: transcript.Ephemeral()}},
		{&transcript.Text{Text: "abc", CacheControl: &transcript.CacheControl{Type: "ephemeral", TTL: "1h"}}},
		{mustBlock(t, `{"type":"text","text":"abc","citations":null}`)},
		{&transcript.Text{Text: "abc", Citations: json.RawMessage(`[]`)}},
		{&transcript.ToolResult{ToolUseID: "abc", StringContent: true, Content: []transcript.Block{&transcript.Text{Text: "x"}}}},
		{&transcript.ToolResult{ToolUseID: "abc", Content: []transcript.Block{&transcript.Text{Text: "x"}}}},
		{&transcript.ToolResult{ToolUseID: "abc", Content: []transcript.Block{&transcript.Text{Text: "x"}}, CacheReference: "r"}},
	} {
		got := enc(bs...)
		assert.False(t, seen[got], "%s encoded twice", got)
		seen[got] = true
		assert.Equal(t, got, enc(bs...), "from the memo")
	}
}

// TestEncodeMemoBound checks the memo's two generations: the bytes it holds stay within twice
// its bound, and a request larger than the bound still encodes exactly.
func TestEncodeMemoBound(t *testing.T) {
	memo := NewEncodeMemo()
	memo.bound, memo.floor = 256<<10, 256<<10 // small, so that a few requests go round
	big := strings.Repeat("x", 32<<10)
	for i := range 40 {
		req := Request{Messages: []Message{{Role: transcript.RoleUser, Content: []transcript.Block{&transcript.Text{Text: fmt.Sprint(i, big)}}}}}
		got, err := encodeRequest(&req, memo)
		require.NoError(t, err)
		want, _ := req.marshalSlow()
		require.Equal(t, string(want), string(got))
		memo.mu.Lock()
		held := 0
		for _, g := range []map[encodeKey]encodedPart{memo.cur, memo.prev} {
			for _, p := range g {
				held += len(p.b)
			}
		}
		assert.LessOrEqual(t, held, 2*memo.bound+len(big)+64, "turn %d", i)
		memo.mu.Unlock()
	}
	assert.NotNil(t, memo.prev, "the memo started a new generation")
	assert.Equal(t, memo.floor, memo.bound, "32 KiB requests keep the floor")

	var msgs []Message
	for i := range 12 {
		msgs = append(msgs, Message{Role: transcript.RoleUser, Content: []transcript.Block{&transcript.Text{Text: fmt.Sprint(i, big)}}})
	}
	req := Request{Messages: msgs}
	for range 3 {
		got, err := encodeRequest(&req, memo)
		require.NoError(t, err)
		want, _ := req.marshalSlow()
		require.Equal(t, string(want), string(got))
	}
	assert.Equal(t, 2*len(mustEncode(t, req)), memo.bound, "the bound follows the largest request")
}

// TestRequestWriteTo writes a request larger than one piece: in several writes, none much
// larger than a piece unless one message is, the bytes MarshalJSON gives; a writer's error
// ends the writing and comes back with the bytes written before it.
func TestRequestWriteTo(t *testing.T) {
	var msgs []Message
	for i := range 40 {
		msgs = append(msgs, Message{Role: transcript.RoleUser, Content: []transcript.Block{&transcript.Text{Text: fmt.Sprint(i, strings.Repeat("x", 8<<10))}}})
	}
	msgs = append(msgs, Message{Role: transcript.RoleAssistant, Content: []transcript.Block{&transcript.Text{Text: strings.Repeat("y", 3*flushBytes)}}})
	req := Request{Model: "m", MaxTokens: 1, Messages: msgs}
	want := mustEncode(t, req)
	errWrite := errors.New("disk full")
	tests := []struct {
		name     string
		failAt   int // the write that fails, counted from 1; 0: none
		wantErr  error
		maxWrite int
	}{
		{name: "every write succeeds", maxWrite: 4 * flushBytes},
		{name: "the first write fails", failAt: 1, wantErr: errWrite},
		{name: "the third write fails", failAt: 3, wantErr: errWrite},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &pieceWriter{failAt: tt.failAt, err: errWrite}
			n, err := req.WriteTo(w)
			assert.ErrorIs(t, err, tt.wantErr)
			assert.Equal(t, int64(w.buf.Len()), n, "the count is what the writer took")
			assert.True(t, bytes.HasPrefix(want, w.buf.Bytes()), "what was written is the body's start")
			if tt.failAt == 0 {
				assert.Equal(t, string(want), w.buf.String())
				assert.Greater(t, w.writes, 2, "the body is written in pieces")
				assert.LessOrEqual(t, w.largest, tt.maxWrite)
			} else {
				assert.Equal(t, tt.failAt, w.writes, "no write after the failed one")
			}
		})
	}
}

// pieceWriter records the writes it takes; write number failAt (from 1) takes half its bytes
// and fails with err.
type pieceWriter struct {
	buf             bytes.Buffer
	writes, largest int
	failAt          int
	err             error
}

func (w *pieceWriter) Write(p []byte) (int, error) {
	w.writes++
	w.largest = max(w.largest, len(p))
	if w.writes == w.failAt {
		w.buf.Write(p[:len(p)/2])
		return len(p) / 2, w.err
	}
	return w.buf.Write(p)
}

func mustEncode(t *testing.T, req Request) []byte {
	t.Helper()
	b, err := encodeRequest(&req, nil)
	require.NoError(t, err)
	return b
}

// TestEncodeMemoConcurrent encodes requests sharing parts from many goroutines with one memo
// (run it with -race); every body is the reference's.
func TestEncodeMemoConcurrent(t *testing.T) {
	memo := NewEncodeMemo()
	memo.bound, memo.floor = 4<<10, 4<<10 // rotate often
	shared := []Message{{Role: transcript.RoleUser, Content: []transcript.Block{&transcript.Text{Text: strings.Repeat("s", 1000)}}}}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				req := Request{Messages: append(shared[:1:1], Message{Role: transcript.RoleAssistant, Content: []transcript.Block{&transcript.Text{Text: fmt.Sprint(g, i, strings.Repeat("a", i*30))}}})}
				got, err := encodeRequest(&req, memo)
				want, _ := req.marshalSlow()
				if !assert.NoError(t, err) || !assert.Equal(t, string(want), string(got)) {
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestEncodeMemoIdentity checks the memo's keys by string identity: a block whose text is
// reassigned, a text that is a prefix of another at the same address, and a copy of a text at
// another address each encode as the reference does, and the memo's entries keep the strings
// their keys name.
func TestEncodeMemoIdentity(t *testing.T) {
	memo := NewEncodeMemo()
	long := strings.Repeat("identity ", 20)
	tx := &transcript.Text{Text: long}
	req := Request{Messages: []Message{{Role: transcript.RoleUser, Content: []transcript.Block{tx}}}}
	check := func(name string) {
		t.Helper()
		got, err := encodeRequest(&req, memo)
		require.NoError(t, err, name)
		want, err := req.marshalSlow()
		require.NoError(t, err, name)
		assert.Equal(t, string(want), string(got), name)
	}
	check("first")
	check("again")
	tx.Text = long[:len(long)-1]
	check("a prefix at the same address")
	tx.Text = "reassigned"
	check("reassigned")
	tx.Text = string([]byte(long))
	check("a copy")
	memo.mu.Lock()
	defer memo.mu.Unlock()
	kept := 0
	for _, p := range memo.cur {
		for _, s := range p.keep {
			if s == long || s == long[:len(long)-1] {
				kept++
			}
		}
	}
	assert.GreaterOrEqual(t, kept, 3, "the entries keep the strings their keys name")
}
