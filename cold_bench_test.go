package agentctx_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/testkit"
	"github.com/agentctx/agentctx/transcript"
)

// BenchmarkCold measures a cold resume, file to request bytes, at 10, 200, 2,000 and 5,000
// turns of generated history written as a transcript file, side by side with its floor:
//
//   - resume: ReadFile, a new Pipeline with a new tiktoken Counter (nothing memoized),
//     Prepare and Request.MarshalJSON — what a process pays to send its first request;
//   - floor: read the file, decode every line with encoding/json into plain structs, and emit
//     the request (the conversation's messages, same-role runs joined) with encoding/json.
//
// The floor's request is checked against the library's by its size only (within 5 % and
// 2 KB, before timing): the library's is normalized (cache markers, repairs), which the floor does not do. The tokenizer's tables
// are loaded before timing, as a process loads them once.
func BenchmarkCold(b *testing.B) {
	tc := agentctx.DefaultTokenCounter()
	tc.CountTokens("warm the tables")
	for _, turns := range []int{10, 200, 2000, 5000} {
		path := filepath.Join(b.TempDir(), "session.jsonl")
		writeTranscript(b, path, testkit.Generate(turns, testkit.Options{Seed: 1}))
		fi, err := os.Stat(path)
		if err != nil {
			b.Fatal(err)
		}
		resume := func(b *testing.B) []byte {
			tr, err := transcript.ReadFile(path, transcript.ReadOptions{})
			if err != nil {
				b.Fatal(err)
			}
			p, err := agentctx.New(agentctx.Config{Model: "claude-sonnet-4-5", ContextWindow: 40_000_000,
				Tokens: agentctx.NewCounter(tc).TokenCounter(), Now: func() time.Time { return benchNow }})
			if err != nil {
				b.Fatal(err)
			}
			res, err := p.Prepare(b.Context(), agentctx.Input{Records: tr.Records})
			if err != nil {
				b.Fatal(err)
			}
			body, err := res.Request.MarshalJSON()
			if err != nil {
				b.Fatal(err)
			}
			return body
		}
		checked := false
		check := func(b *testing.B) {
			if checked {
				return
			}
			checked = true
			lib, floor := len(resume(b)), len(coldFloor(b, path))
			// The library also declares the history's tools as unavailable (a few hundred bytes).
			if d := floor - lib; d < -lib/20-2048 || d > lib/20+2048 {
				b.Fatalf("the floor emits %d bytes, the library %d: not the same request", floor, lib)
			}
		}
		b.Run(fmt.Sprintf("turns=%d/resume", turns), func(b *testing.B) {
			check(b)
			b.ReportAllocs()
			b.SetBytes(fi.Size())
			for b.Loop() {
				resume(b)
			}
		})
		b.Run(fmt.Sprintf("turns=%d/floor", turns), func(b *testing.B) {
			check(b)
			b.ReportAllocs()
			b.SetBytes(fi.Size())
			for b.Loop() {
				coldFloor(b, path)
			}
		})
	}
}

func writeTranscript(b *testing.B, path string, recs []transcript.Record) {
	var buf bytes.Buffer
	for _, r := range recs {
		line, err := r.MarshalJSON()
		if err != nil {
			b.Fatal(err)
		}
		buf.Write(line)
		buf.WriteByte('\n')
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		b.Fatal(err)
	}
}

// floorLine is the part of a transcript line the floor decodes: the record's type and its
// message, every content block typed.
type floorLine struct {
	Type       string `json:"type"`
	UUID       string `json:"uuid"`
	ParentUUID string `json:"parentUuid"`
	Message    *struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"message"`
}

// floorInBlock is a content block as the floor decodes it; Content is a tool result's
// content, a string or an array of blocks.
type floorInBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
	Thinking  string          `json:"thinking"`
	Signature string          `json:"signature"`
}

// coldFloor reads the transcript at path, decodes every line and emits the request.
func coldFloor(b *testing.B, path string) []byte {
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	req := floorRequest{Model: "claude-sonnet-4-5", MaxTokens: 32000}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, len(data)+1)
	for sc.Scan() {
		var l floorLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			b.Fatal(err)
		}
		if (l.Type != "user" && l.Type != "assistant") || l.Message == nil {
			continue
		}
		var blocks []floorBlock
		if c := l.Message.Content; len(c) > 0 && c[0] == '"' {
			var s string
			if err := json.Unmarshal(c, &s); err != nil {
				b.Fatal(err)
			}
			blocks = []floorBlock{{Type: "text", Text: s}}
		} else {
			var in []floorInBlock
			if err := json.Unmarshal(c, &in); err != nil {
				b.Fatal(err)
			}
			for _, ib := range in {
				blocks = append(blocks, floorOut(b, ib))
			}
		}
		if n := len(req.Messages); n > 0 && req.Messages[n-1].Role == l.Message.Role {
			req.Messages[n-1].Content = append(req.Messages[n-1].Content, blocks...)
		} else {
			req.Messages = append(req.Messages, floorMessage{Role: l.Message.Role, Content: blocks})
		}
	}
	if err := sc.Err(); err != nil {
		b.Fatal(err)
	}
	return req.encode(b)
}

func floorOut(b *testing.B, ib floorInBlock) floorBlock {
	out := floorBlock{Type: ib.Type, Text: ib.Text, ID: ib.ID, Name: ib.Name, Input: ib.Input, ToolUseID: ib.ToolUseID,
		IsError: ib.IsError, Thinking: ib.Thinking, Signature: ib.Signature}
	if c := ib.Content; len(c) > 0 {
		if c[0] == '"' {
			var s string
			if err := json.Unmarshal(c, &s); err != nil {
				b.Fatal(err)
			}
			out.Content = s
		} else {
			var in []floorInBlock
			if err := json.Unmarshal(c, &in); err != nil {
				b.Fatal(err)
			}
			var cs []floorBlock
			for _, x := range in {
				cs = append(cs, floorOut(b, x))
			}
			out.Content = cs
		}
	}
	return out
}
