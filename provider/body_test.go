package provider

import (
	"crypto/rand"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/agentctx/agentctx/transcript"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pngBlock returns a base64 image block of about n bytes of PNG-headed random data.
func pngBlock(n int) *transcript.Image {
	raw := make([]byte, n)
	_, _ = rand.Read(raw)
	copy(raw, "\x89PNG\r\n\x1a\n")
	return &transcript.Image{Source: transcript.MediaSource{Type: "base64", MediaType: "image/png", Data: base64.StdEncoding.EncodeToString(raw)}}
}

// TestBodyBound requires both bounds to be at or above the encoded size of the request of every
// bundled session's messages and of requests full of what JSON escapes most (control characters, quotes, invalid
// UTF-8 in raw inputs, line separators).
func TestBodyBound(t *testing.T) {
	check := func(name string, req Request) {
		b, err := req.MarshalJSON()
		require.NoError(t, err, name)
		assert.GreaterOrEqual(t, bodyBound(&req, false), len(b), name)
		assert.GreaterOrEqual(t, bodyBound(&req, true), len(b), name)
	}
	for f, req := range sessionRequests(t) {
		check(f, req)
	}
	hostile := strings.Repeat("\x00\x01\"\\\u2028<>&\t\n", 1000)
	check("hostile", Request{Model: hostile, MaxTokens: 1, System: []*transcript.Text{{Text: hostile}},
		Messages: []Message{
			{Role: transcript.RoleUser, Content: []transcript.Block{&transcript.Text{Text: hostile}, pngBlock(3000)}},
			{Role: transcript.RoleAssistant, Content: []transcript.Block{&transcript.Thinking{Thinking: hostile, Signature: hostile},
				&transcript.ToolUse{ID: "t1", Name: "Bash", Input: []byte(`{"c":"` + "\xff\xfe" + strings.Repeat(`\u0000`, 100) + `"}`)}}},
			{Role: transcript.RoleUser, Content: []transcript.Block{&transcript.ToolResult{ToolUseID: "t1", Content: []transcript.Block{&transcript.Text{Text: hostile}}},
				&transcript.Document{Source: transcript.MediaSource{Type: "text", MediaType: "text/plain", Data: hostile}, Title: hostile},
				&transcript.CacheEdits{Edits: []transcript.CacheEdit{{Type: "delete", CacheReference: hostile}}}}},
		}})
}

// The exact-string bound keeps a long text session with few escapes from being measured: a
// request whose strings are 1 MB of plain prose, against a 4 MB limit, reaches the loose bound
// (six bytes a string byte) but not the exact one, so BodySize does not encode it.
func TestBodyBoundExactStrings(t *testing.T) {
	prose := strings.Repeat("The build passed on the second try. ", 3000) // about 108 KB
	req := Request{Model: "m", MaxTokens: 1}
	for range 10 {
		req.Messages = append(req.Messages,
			Message{Role: transcript.RoleUser, Content: []transcript.Block{&transcript.Text{Text: prose}}},
			Message{Role: transcript.RoleAssistant, Content: []transcript.Block{&transcript.Text{Text: "Noted."}}})
	}
	const limit = 4_000_000
	require.GreaterOrEqual(t, bodyBound(&req, false), limit, "the loose bound reaches the limit")
	require.Less(t, bodyBound(&req, true), limit)
	n, err := req.BodySize(limit)
	require.NoError(t, err)
	assert.Zero(t, n, "not measured")
	b, err := req.MarshalJSON()
	require.NoError(t, err)
	assert.Less(t, len(b), limit)
	n, err = req.BodySize(len(b))
	require.NoError(t, err)
	assert.Equal(t, len(b), n, "measured when the bounds reach the limit")
}
