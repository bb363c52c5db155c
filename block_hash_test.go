package agentctx_test

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"testing"

	"github.com/agentctx/agentctx/transcript"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hashOf returns the SHA-256 of what HashBlock writes for b.
func hashOf(b transcript.Block) [32]byte {
	h := sha256.New()
	transcript.HashBlock(h, b)
	var d [32]byte
	h.Sum(d[:0])
	return d
}

// TestHashBlock: a block decoded twice writes the same bytes (unknown fields in any order
// too), and blocks whose encodings differ — in a field's value, in whether a zero field was
// present or null, in a tool result's content, in an unknown field — write different bytes,
// for every block kind.
func TestHashBlock(t *testing.T) {
	blocks := []string{
		`{"type":"text","text":"hi"}`,
		`{"type":"text","text":"hi!"}`,
		`{"type":"text","text":""}`,
		`{"type":"text","text":"hi","citations":null}`,
		`{"type":"text","text":"hi","citations":[]}`,
		`{"type":"text","text":"hi","cache_control":{"type":"ephemeral"}}`,
		`{"type":"text","text":"hi","cache_control":{"type":"ephemeral","ttl":"1h"}}`,
		`{"type":"text","text":"hi","a":1,"b":2}`,
		`{"type":"text","text":"hi","a":1,"b":3}`,
		`{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AAAA"}}`,
		`{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AAAB"}}`,
		`{"type":"image","source":{"type":"url","url":"https://x/y.png","z":true}}`,
		`{"type":"document","source":{"type":"text","media_type":"text/plain","data":"d"},"title":"t"}`,
		`{"type":"document","source":{"type":"text","media_type":"text/plain","data":"d"},"context":"t"}`,
		`{"type":"tool_use","id":"t1","name":"Read","input":{}}`,
		`{"type":"tool_use","id":"t1","name":"Read","input":{"path":"a"}}`,
		`{"type":"tool_use","id":"t1","name":"Readx","input":{}}`,
		`{"type":"tool_result","tool_use_id":"t1","content":"ok"}`,
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
	decoded := make([]transcript.Block, len(blocks))
	sums := map[[32]byte]string{}
	for i, js := range blocks {
		b, err := transcript.UnmarshalBlock([]byte(js))
		require.NoError(t, err, js)
		again, err := transcript.UnmarshalBlock([]byte(js))
		require.NoError(t, err, js)
		decoded[i] = b
		d := hashOf(b)
		assert.Equal(t, d, hashOf(again), "%s: decoded twice, the same bytes", js)
		if other, ok := sums[d]; ok {
			t.Errorf("%s and %s encode differently but write the same bytes", js, other)
		}
		sums[d] = js
	}
	for i, b := range decoded {
		enc, err := transcript.MarshalBlock(b)
		require.NoError(t, err)
		for j := range i {
			other, err := transcript.MarshalBlock(decoded[j])
			require.NoError(t, err)
			require.False(t, bytes.Equal(enc, other), "the table holds distinct encodings: %s", enc)
		}
	}

	// The request-only cache_edits block, nil blocks and nil pointers of each kind.
	edits := func(refs ...string) transcript.Block {
		ce := &transcript.CacheEdits{}
		for _, r := range refs {
			ce.Edits = append(ce.Edits, transcript.CacheEdit{Type: "delete", CacheReference: r})
		}
		return ce
	}
	others := []transcript.Block{edits("r1"), edits("r2"), edits("r1", "r2"), nil,
		(*transcript.Text)(nil), (*transcript.ToolUse)(nil), (*transcript.ToolResult)(nil), (*transcript.UnknownBlock)(nil),
		(*transcript.ServerToolResult)(nil), (*transcript.CacheEdits)(nil)}
	for i, b := range others {
		d := hashOf(b)
		if other, ok := sums[d]; ok {
			t.Errorf("others[%d] and %s write the same bytes", i, other)
		}
		sums[d] = fmt.Sprintf("others[%d]", i)
	}
	assert.Equal(t, hashOf(edits("r1", "r2")), hashOf(edits("r1", "r2")))
}
