package provider

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentctx/agentctx/transcript"

	"github.com/stretchr/testify/require"
)

// The blocks the tests build requests from.

func text(s string) *transcript.Text { return &transcript.Text{Text: s} }

func toolUse(id, name string) *transcript.ToolUse {
	return &transcript.ToolUse{ID: id, Name: name, Input: json.RawMessage(`{"path":"x"}`)}
}

func result(id, content string) *transcript.ToolResult {
	return &transcript.ToolResult{ToolUseID: id, Content: []transcript.Block{&transcript.Text{Text: content}}, StringContent: true}
}

// normSig is a thinking signature the provider could have issued (replayable).
var normSig = "EqQBCkYIBxgCKkB" + strings.Repeat("x9+/", 20) + "=="

// recordsRequest is a request made of the records' messages as decoded (unknown fields, null
// fields, unknown blocks and all), which a Pipeline never sends but a caller may.
func recordsRequest(records []transcript.Record) Request {
	req := Request{Model: "m", MaxTokens: 1}
	for _, r := range records {
		if r.Message != nil {
			req.Messages = append(req.Messages, Message{Role: r.Message.Role, Content: r.Message.Content})
		}
	}
	return req
}

// sessionRequests returns the request of each bundled session's messages, by file.
func sessionRequests(t *testing.T) map[string]Request {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "testdata", "sessions", "*", "*.jsonl"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	out := map[string]Request{}
	for _, f := range files {
		tr, err := transcript.ReadFile(f, transcript.ReadOptions{})
		require.NoError(t, err, f)
		out[f] = recordsRequest(tr.Records)
	}
	return out
}

// corpusRequests returns the request of each shared corpus session's messages, by file; nil
// when the corpus is absent.
func corpusRequests(t *testing.T) map[string]Request {
	t.Helper()
	dir := filepath.Join("..", "..", "shared", "corpus")
	if _, err := os.Stat(dir); err != nil {
		return nil
	}
	var files []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".jsonl") {
			files = append(files, path)
		}
		return err
	})
	require.NoError(t, err)
	out := map[string]Request{}
	for _, f := range files {
		tr, err := transcript.ReadFile(f, transcript.ReadOptions{})
		require.NoError(t, err, f)
		out[f] = recordsRequest(tr.Records)
	}
	require.NotEmpty(t, out, "no session in %s", dir)
	return out
}

// compactionJSON is an Anthropic compaction block as an answer carries it.
const compactionJSON = `{"type":"compaction","content":"Summary: the parser is written; tests come next.","encrypted_content":"Eabc","signature":"c2ln"}`

// unknown decodes raw, a block of a type the transcript package does not model.
func unknown(raw string) *transcript.UnknownBlock {
	b, err := transcript.UnmarshalBlock([]byte(raw))
	if err != nil {
		panic("test block does not decode: " + err.Error())
	}
	return b.(*transcript.UnknownBlock)
}
