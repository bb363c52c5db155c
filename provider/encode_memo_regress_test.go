package provider

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/agentctx/agentctx/transcript"
)

func rndVal(r *rand.Rand, depth int) string {
	switch r.IntN(9) {
	case 0:
		return "null"
	case 1:
		return `""`
	case 2:
		return fmt.Sprintf("%q", []string{"a", "b<", "x\u2028", "ab", "ba", "\xff"}[r.IntN(6)])
	case 3:
		return []string{"true", "false"}[r.IntN(2)]
	case 4:
		return fmt.Sprint(r.IntN(3))
	case 5:
		if depth > 2 {
			return "[]"
		}
		return "[" + rndBlockJSON(r, depth+1) + "]"
	case 6:
		return `{ "type" : "ephemeral" }`
	case 7:
		return `{"type":"ephemeral","ttl":"1h"}`
	default:
		return `[ 1, {"a" : 2} ]`
	}
}

var rndKinds = []string{"text", "tool_use", "tool_result", "thinking", "redacted_thinking", "image", "document", "tool_reference", "server_tool_use", "web_search_tool_result", "mystery"}
var rndKeys = []string{"text", "citations", "cache_control", "id", "name", "input", "tool_use_id", "content", "is_error", "cache_reference", "thinking", "signature", "data", "source", "title", "context", "tool_name", "zz"}

func rndBlockJSON(r *rand.Rand, depth int) string {
	var parts []string
	parts = append(parts, fmt.Sprintf(`"type":%q`, rndKinds[r.IntN(len(rndKinds))]))
	used := map[string]bool{}
	for range r.IntN(4) {
		k := rndKeys[r.IntN(len(rndKeys)-1)]
		if r.IntN(20) == 0 {
			k = "zz"
		}
		if used[k] {
			continue
		}
		used[k] = true
		v := rndVal(r, depth)
		if k == "source" && r.IntN(2) == 0 {
			v = []string{`{"type":"base64","media_type":"image/png","data":"AAAA"}`, `{"type":"url","url":"u"}`, `{}`, `{"type":"base64","data":"AA","media_type":null}`}[r.IntN(4)]
		}
		parts = append(parts, fmt.Sprintf("%q:%s", k, v))
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// TestRegressEncodeSharedMemoRandom encodes 20,000 random decoded blocks through one shared
// memo and compares each request with the reference encoder, errors included.
func TestRegressEncodeSharedMemoRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	memo := NewEncodeMemo()
	fails := 0
	for i := 0; i < 20000 && fails < 5; i++ {
		var bs []transcript.Block
		for range 1 + r.IntN(3) {
			js := rndBlockJSON(r, 0)
			b, err := transcript.UnmarshalBlock(json.RawMessage(js))
			if err != nil || b == nil {
				continue
			}
			bs = append(bs, b)
		}
		req := Request{Model: "m", MaxTokens: 1, Messages: []Message{{Role: transcript.RoleUser, Content: bs}}}
		want, werr := req.marshalSlow()
		got, gerr := encodeRequest(&req, memo)
		if (werr != nil) != (gerr != nil) || (werr != nil && werr.Error() != gerr.Error()) || string(want) != string(got) {
			fails++
			t.Errorf("iteration %d:\n want %s %v\n got  %s %v", i, want, werr, got, gerr)
		}
	}
}

// TestRegressEncodeMemoTextImageSameStream: every block's hash stream starts with its kind
// byte. The hasher once wrote an image's source before it, so the stream began with the
// source's flag byte 1 — a text block's kind — and a crafted text and image shared a key
// under every seed.
func TestRegressEncodeMemoTextImageSameStream(t *testing.T) {
	le := func(n uint64) string {
		var b [8]byte
		for i := range b {
			b[i] = byte(n >> (8 * i))
		}
		return string(b[:])
	}
	mt := "\x00" + "1" + "\x01" + le(0) + le(280) + strings.Repeat("a", 238) // 257 bytes
	ttl := strings.Repeat("a", 238) + strings.Repeat("\x00", 24) + "\x06" + strings.Repeat("\x00", 16) + "\x00"
	text := &transcript.Text{Text: "base64", Citations: json.RawMessage("1"), CacheControl: &transcript.CacheControl{TTL: ttl}}
	img := &transcript.Image{Source: transcript.MediaSource{Type: "base64", MediaType: mt}}

	memo := NewEncodeMemo()
	a := Request{Model: "m", MaxTokens: 1, Messages: []Message{{Role: transcript.RoleUser, Content: []transcript.Block{text}}}}
	b := Request{Model: "m", MaxTokens: 1, Messages: []Message{{Role: transcript.RoleUser, Content: []transcript.Block{img}}}}
	_, err := encodeRequest(&a, memo)
	if err != nil {
		t.Fatal(err)
	}
	got, err := encodeRequest(&b, memo)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := b.marshalSlow()
	if string(got) != string(want) {
		t.Fatalf("the image request encodes as the text request:\n got  %.120q\n want %.120q", got, want)
	}
}
