package agentctx_test

import (
	"testing"

	"github.com/agentctx/agentctx/transcript"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWithCacheControl: every block kind that carries a marker gets it on a copy and loses it
// again, the copy then encoding as the block decoded without one; the original keeps its own;
// the other kinds are returned as they are.
func TestWithCacheControl(t *testing.T) {
	for _, tc := range []struct {
		name     string
		json     string // the block with a marker, or of a kind without one
		unmarked string // its encoding without the marker; "": the kind carries none
	}{
		{"text", `{"type":"text","text":"hi","cache_control":{"type":"ephemeral"}}`, `{"type":"text","text":"hi"}`},
		{"text with null citations", `{"type":"text","text":"hi","citations":null,"cache_control":{"type":"ephemeral","ttl":"1h"}}`, `{"type":"text","text":"hi","citations":null}`},
		{"image", `{"type":"image","source":{"type":"url","url":"https://x/y.png"},"cache_control":{"type":"ephemeral"}}`, `{"type":"image","source":{"type":"url","url":"https://x/y.png"}}`},
		{"document", `{"type":"document","source":{"type":"text","media_type":"text/plain","data":"d"},"title":"t","cache_control":{"type":"ephemeral"}}`, `{"type":"document","source":{"type":"text","media_type":"text/plain","data":"d"},"title":"t"}`},
		{"tool_use", `{"type":"tool_use","id":"t1","name":"Read","input":{},"cache_control":{"type":"ephemeral"}}`, `{"type":"tool_use","id":"t1","name":"Read","input":{}}`},
		{"tool_result", `{"type":"tool_result","tool_use_id":"t1","content":"ok","cache_control":{"type":"ephemeral"},"caller":"x"}`, `{"type":"tool_result","tool_use_id":"t1","content":"ok","caller":"x"}`},
		{"server_tool_use", `{"type":"server_tool_use","id":"s1","name":"web_search","input":{"q":"go"},"cache_control":{"type":"ephemeral"}}`, `{"type":"server_tool_use","id":"s1","name":"web_search","input":{"q":"go"}}`},
		{"server tool result", `{"type":"web_search_tool_result","tool_use_id":"s1","content":[],"cache_control":{"type":"ephemeral"}}`, `{"type":"web_search_tool_result","tool_use_id":"s1","content":[]}`},
		{"thinking", `{"type":"thinking","thinking":"hm","signature":"sig"}`, ""},
		{"redacted_thinking", `{"type":"redacted_thinking","data":"x"}`, ""},
		{"tool_reference", `{"type":"tool_reference","tool_name":"Read"}`, ""},
		{"unknown", `{"type":"container_upload","file_id":"f"}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := transcript.UnmarshalBlock([]byte(tc.json))
			require.NoError(t, err)
			cc := &transcript.CacheControl{Type: "ephemeral", TTL: "5m"}
			if tc.unmarked == "" {
				assert.Nil(t, transcript.CacheControlOf(b))
				assert.Same(t, b, transcript.WithCacheControl(b, cc), "a kind without a marker is returned as it is")
				return
			}
			own := transcript.CacheControlOf(b)
			require.NotNil(t, own)

			marked := transcript.WithCacheControl(b, cc)
			assert.Same(t, cc, transcript.CacheControlOf(marked))
			assert.Same(t, own, transcript.CacheControlOf(b), "the original keeps its marker")

			plain := transcript.WithCacheControl(marked, nil)
			assert.Nil(t, transcript.CacheControlOf(plain))
			enc, err := transcript.MarshalBlock(plain)
			require.NoError(t, err)
			assert.JSONEq(t, tc.unmarked, string(enc))
			assert.NotContains(t, string(enc), "cache_control", "a removed marker leaves no key, not null")
			orig, err := transcript.MarshalBlock(b)
			require.NoError(t, err)
			assert.JSONEq(t, tc.json, string(orig), "the original is unchanged")
		})
	}
	assert.Nil(t, transcript.CacheControlOf(nil))
	assert.Nil(t, transcript.WithCacheControl(nil, transcript.Ephemeral()))
	assert.Nil(t, transcript.CacheControlOf(&transcript.CacheEdits{}))
}
