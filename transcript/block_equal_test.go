package transcript

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// equalBlocksJSON are blocks of every kind, each differing from the others in one thing that
// changes its encoding.
var equalBlocksJSON = []string{
	`{"type":"text","text":"hi"}`,
	`{"type":"text","text":"hi!"}`,
	`{"type":"text","text":""}`,
	`{"type":"text","text":"hi","citations":null}`,
	`{"type":"text","text":"hi","citations":[]}`,
	`{"type":"text","text":"hi","cache_control":{"type":"ephemeral"}}`,
	`{"type":"text","text":"hi","cache_control":{"type":"ephemeral","ttl":"1h"}}`,
	`{"type":"text","text":"hi","a":1,"b":2}`,
	`{"type":"text","text":"hi","a":1,"b":3}`,
	`{"type":"text","text":"hi","a":1,"c":2}`,
	`{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AAAA"}}`,
	`{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AAAB"}}`,
	`{"type":"image","source":{"type":"url","url":"https://x/y.png","z":true}}`,
	`{"type":"document","source":{"type":"text","media_type":"text/plain","data":"d"},"title":"t"}`,
	`{"type":"document","source":{"type":"text","media_type":"text/plain","data":"d"},"context":"t"}`,
	`{"type":"tool_use","id":"t1","name":"Read","input":{}}`,
	`{"type":"tool_use","id":"t1","name":"Read","input":{"path":"a"}}`,
	`{"type":"tool_use","id":"t1","name":"Readx","input":{}}`,
	`{"type":"tool_use","id":"t2","name":"Read","input":{}}`,
	`{"type":"tool_result","tool_use_id":"t1","content":"ok"}`,
	`{"type":"tool_result","tool_use_id":"t1","content":"ok!"}`,
	`{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"ok"}]}`,
	`{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"ok"},{"type":"text","text":"ok"}]}`,
	`{"type":"tool_result","tool_use_id":"t1","content":[{"type":"tool_reference","tool_name":"Read"}]}`,
	`{"type":"tool_result","tool_use_id":"t1","content":"ok","is_error":true}`,
	`{"type":"tool_result","tool_use_id":"t1","content":"ok","is_error":false}`,
	`{"type":"tool_result","tool_use_id":"t1","content":"ok","cache_reference":"r1"}`,
	`{"type":"thinking","thinking":"hm","signature":"sig"}`,
	`{"type":"thinking","thinking":"hms","signature":"ig"}`,
	`{"type":"redacted_thinking","data":"x"}`,
	`{"type":"tool_reference","tool_name":"Read"}`,
	`{"type":"server_tool_use","id":"s1","name":"web_search","input":{}}`,
	`{"type":"web_search_tool_result","tool_use_id":"s1","content":[]}`,
	`{"type":"web_fetch_tool_result","tool_use_id":"s1","content":[]}`,
	`{"type":"container_upload","file_id":"f"}`,
	`{"type":"container_upload","file_id":"g"}`,
}

// hashBlock returns the SHA-256 of what HashBlock writes for b.
func hashBlock(b Block) [32]byte {
	h := sha256.New()
	HashBlock(h, b)
	var d [32]byte
	h.Sum(d[:0])
	return d
}

// TestEqualBlock: a block decoded twice equals itself and no other block of the list; equal
// blocks are those HashBlock writes the same bytes for, also for blocks built in Go (whose
// presence bits differ from a decoded block's), nil blocks and nil pointers.
func TestEqualBlock(t *testing.T) {
	var once, twice []Block
	for _, js := range equalBlocksJSON {
		a, err := UnmarshalBlock([]byte(js))
		require.NoError(t, err, js)
		b, err := UnmarshalBlock([]byte(js))
		require.NoError(t, err, js)
		once, twice = append(once, a), append(twice, b)
	}
	// Blocks built in Go, made anew for each side; nil blocks and nil pointers are shared.
	built := func() []Block {
		return []Block{
			nil, (*Text)(nil), (*ToolUse)(nil),
			&Text{Text: "hi"}, &Text{Text: "hi", CacheControl: Ephemeral()},
			&ToolUse{ID: "t1", Name: "Read", Input: json.RawMessage(`{}`)},
			&ToolUse{ID: "t1", Name: "Read", Input: json.RawMessage{}},
			&ToolUse{ID: "t1", Name: "Read"},
			TextResult("t1", "ok"), TextResult("t1", "ok?"),
			&CacheEdits{}, &CacheEdits{Edits: []CacheEdit{}},
			&CacheEdits{Edits: []CacheEdit{{Type: "delete", CacheReference: "r1"}}},
			&CacheEdits{Edits: []CacheEdit{{Type: "delete", CacheReference: "r2"}}},
			&UnknownBlock{Type: "x", JSON: json.RawMessage(`{"type":"x"}`)},
			&UnknownBlock{Type: "x", JSON: json.RawMessage(`{"type":"x","y":1}`)},
		}
	}
	once, twice = append(once, built()...), append(twice, built()...)
	// HashBlock does not tell a nil list of edits from an empty one; EqualBlock does.
	noEdits, emptyEdits := len(equalBlocksJSON)+10, len(equalBlocksJSON)+11
	for i, a := range once {
		for j, b := range twice {
			want := i == j
			assert.Equal(t, want, EqualBlock(a, b), "%d %#v and %d %#v", i, a, j, b)
			if (i == noEdits && j == emptyEdits) || (i == emptyEdits && j == noEdits) {
				continue
			}
			assert.Equal(t, want, hashBlock(a) == hashBlock(b), "%d and %d: EqualBlock agrees with HashBlock", i, j)
		}
	}
}

// TestEqualMessage: a message decoded twice equals itself, and a change to any one of its
// fields, to its usage or to one of its blocks makes another; rebuilt messages compare
// without allocating.
func TestEqualMessage(t *testing.T) {
	base := `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"hi"},{"type":"tool_use","id":"t1","name":"Read","input":{"path":"a"}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":2,"service_tier":"standard"},"x":1}`
	decode := func(js string) *Message {
		var m Message
		require.NoError(t, json.Unmarshal([]byte(js), &m), js)
		return &m
	}
	variants := []string{
		`{"id":"msg_2","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"hi"},{"type":"tool_use","id":"t1","name":"Read","input":{"path":"a"}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":2,"service_tier":"standard"},"x":1}`,
		`{"id":"msg_1","role":"assistant","model":"m","content":[{"type":"text","text":"hi"},{"type":"tool_use","id":"t1","name":"Read","input":{"path":"a"}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":2,"service_tier":"standard"},"x":1}`,
		`{"id":"msg_1","type":"message","role":"user","model":"m","content":[{"type":"text","text":"hi"},{"type":"tool_use","id":"t1","name":"Read","input":{"path":"a"}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":2,"service_tier":"standard"},"x":1}`,
		`{"id":"msg_1","type":"message","role":"assistant","model":"n","content":[{"type":"text","text":"hi"},{"type":"tool_use","id":"t1","name":"Read","input":{"path":"a"}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":2,"service_tier":"standard"},"x":1}`,
		`{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"hi!"},{"type":"tool_use","id":"t1","name":"Read","input":{"path":"a"}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":2,"service_tier":"standard"},"x":1}`,
		`{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"hi"},{"type":"tool_use","id":"t1","name":"Read","input":{"path":"b"}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":2,"service_tier":"standard"},"x":1}`,
		`{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"hi"}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":2,"service_tier":"standard"},"x":1}`,
		`{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"hi"},{"type":"tool_use","id":"t1","name":"Read","input":{"path":"a"}}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":2,"service_tier":"standard"},"x":1}`,
		`{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"hi"},{"type":"tool_use","id":"t1","name":"Read","input":{"path":"a"}}],"stop_reason":"tool_use","usage":{"input_tokens":5,"output_tokens":2,"service_tier":"standard"},"x":1}`,
		`{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"hi"},{"type":"tool_use","id":"t1","name":"Read","input":{"path":"a"}}],"stop_reason":"tool_use","stop_sequence":"\n","usage":{"input_tokens":5,"output_tokens":2,"service_tier":"standard"},"x":1}`,
		`{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"hi"},{"type":"tool_use","id":"t1","name":"Read","input":{"path":"a"}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":6,"output_tokens":2,"service_tier":"standard"},"x":1}`,
		`{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"hi"},{"type":"tool_use","id":"t1","name":"Read","input":{"path":"a"}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":2,"service_tier":"priority"},"x":1}`,
		`{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"hi"},{"type":"tool_use","id":"t1","name":"Read","input":{"path":"a"}}],"stop_reason":"tool_use","stop_sequence":null,"x":1}`,
		`{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"hi"},{"type":"tool_use","id":"t1","name":"Read","input":{"path":"a"}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":2,"service_tier":"standard"},"x":2}`,
		`{"id":"msg_1","type":"message","role":"assistant","model":"m","content":"hi","stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":2,"service_tier":"standard"},"x":1}`,
		`{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":2,"service_tier":"standard"},"x":1}`,
	}
	a, b := decode(base), decode(base)
	require.NotSame(t, a, b)
	assert.True(t, EqualMessage(a, b))
	assert.True(t, EqualMessage(a, a))
	assert.False(t, EqualMessage(a, nil))
	assert.True(t, EqualMessage(nil, nil))
	for _, js := range variants {
		v := decode(js)
		assert.False(t, EqualMessage(a, v), js)
		assert.False(t, EqualMessage(v, a), js)
	}
	built := func() *Message {
		return &Message{Role: RoleUser, Content: []Block{TextResult("t1", "ok")}, Usage: &Usage{InputTokens: 3}}
	}
	assert.True(t, EqualMessage(built(), built()))
	assert.False(t, EqualMessage(built(), &Message{Role: RoleUser, Content: []Block{TextResult("t1", "ok")}}))
	assert.False(t, EqualMessage(&Message{Role: RoleUser}, &Message{Role: RoleUser, Content: []Block{}}))
	assert.Zero(t, testing.AllocsPerRun(100, func() { EqualMessage(a, b) }))
}

// TestEqualCoversFields: EqualBlock and EqualMessage compare every field of the types they
// walk; a field added to one of them must be compared there too (and this count raised).
func TestEqualCoversFields(t *testing.T) {
	for typ, n := range map[reflect.Type]int{
		reflect.TypeFor[Text]():             5,
		reflect.TypeFor[Image]():            4,
		reflect.TypeFor[Document]():         7,
		reflect.TypeFor[MediaSource]():      7,
		reflect.TypeFor[ToolUse]():          6,
		reflect.TypeFor[ToolResult]():       8,
		reflect.TypeFor[Thinking]():         4,
		reflect.TypeFor[RedactedThinking](): 3,
		reflect.TypeFor[ToolReference]():    3,
		reflect.TypeFor[ServerToolUse]():    6,
		reflect.TypeFor[ServerToolResult](): 6,
		reflect.TypeFor[CacheEdits]():       1,
		reflect.TypeFor[CacheEdit]():        2,
		reflect.TypeFor[CacheControl]():     2,
		reflect.TypeFor[UnknownBlock]():     2,
		reflect.TypeFor[Message]():          11,
		reflect.TypeFor[Usage]():            6,
	} {
		assert.Equal(t, n, typ.NumField(), "%s: compare the new field in block_equal.go", typ)
	}
}

// BenchmarkEqualMessage compares a message rebuilt with the same content (new structs and
// strings) with the one before it, three ways side by side: EqualMessage's field-wise walk,
// encoding the new message to compare with the old one's JSON (as if a record held it), and
// the digest of its blocks that a host message's uuid is derived from ([HashBlock]).
func BenchmarkEqualMessage(b *testing.B) {
	for _, size := range []int{100, 2_000} {
		text := strings.Repeat("shard 7: line ok, latency 12ms, bytes 4096\n", size)
		mk := func() *Message {
			return &Message{Role: RoleUser, Content: []Block{TextResult(strings.Clone("toolu_07"), strings.Clone(text))}}
		}
		old, now := mk(), mk()
		oldJSON, err := json.Marshal(old)
		require.NoError(b, err)
		oldSum := contentSum(old)
		b.Run(fmt.Sprintf("bytes=%d/equal", len(text)), func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				if !EqualMessage(old, now) {
					b.Fatal("not equal")
				}
			}
		})
		b.Run(fmt.Sprintf("bytes=%d/json", len(text)), func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				enc, err := json.Marshal(now)
				if err != nil || !bytes.Equal(enc, oldJSON) {
					b.Fatal("not equal")
				}
			}
		})
		b.Run(fmt.Sprintf("bytes=%d/hash", len(text)), func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				if contentSum(now) != oldSum {
					b.Fatal("not equal")
				}
			}
		})
	}
}

// contentSum is the SHA-256 of what HashBlock writes for m's blocks.
func contentSum(m *Message) [32]byte {
	h := sha256.New()
	for _, b := range m.Content {
		HashBlock(h, b)
	}
	var d [32]byte
	h.Sum(d[:0])
	return d
}
