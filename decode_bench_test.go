package agentctx_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentctx/agentctx/internal/testkit"
	"github.com/agentctx/agentctx/transcript"
)

// BenchmarkDecode measures decoding a transcript file alone, at 200 and 2,000 turns of
// generated history, side by side with its floor:
//
//   - read: ReadFile, every line into a Record;
//   - floor: read the file and decode every line with encoding/json into the plain structs
//     of BenchmarkCold's floor, every content block and tool-result block typed.
func BenchmarkDecode(b *testing.B) {
	for _, turns := range []int{200, 2000} {
		path := filepath.Join(b.TempDir(), "session.jsonl")
		writeTranscript(b, path, testkit.Generate(turns, testkit.Options{Seed: 1}))
		fi, err := os.Stat(path)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("turns=%d/read", turns), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(fi.Size())
			for b.Loop() {
				tr, err := transcript.ReadFile(path, transcript.ReadOptions{})
				if err != nil || !tr.Clean() {
					b.Fatal(err, tr.Err())
				}
			}
		})
		b.Run(fmt.Sprintf("turns=%d/floor", turns), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(fi.Size())
			for b.Loop() {
				floorDecode(b, path)
			}
		})
	}
}

// floorDecode reads the transcript at path and decodes every line as coldFloor does, without
// emitting a request; it returns the number of blocks decoded.
func floorDecode(b *testing.B, path string) int {
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	n := 0
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, len(data)+1)
	for sc.Scan() {
		var l floorLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			b.Fatal(err)
		}
		if l.Message == nil {
			continue
		}
		if c := l.Message.Content; len(c) > 0 && c[0] == '"' {
			var s string
			if err := json.Unmarshal(c, &s); err != nil {
				b.Fatal(err)
			}
			n++
			continue
		}
		var in []floorInBlock
		if err := json.Unmarshal(l.Message.Content, &in); err != nil {
			b.Fatal(err)
		}
		for _, ib := range in {
			floorOut(b, ib)
			n++
		}
	}
	if err := sc.Err(); err != nil {
		b.Fatal(err)
	}
	return n
}
