package transcript

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// sameDecode checks that the single-pass decoder d reads line exactly as the reference
// decoder does: the same record (unexported presence bits included), the same error, and the
// same bytes written back. It reports whether the single pass took the line itself.
func sameDecode(t *testing.T, d *lineDecoder, label string, line []byte) (fast bool) {
	t.Helper()
	var ref, got, direct Record
	refErr := ref.decodeRef(line)
	gotErr := got.decode(d, line)
	require.Equal(t, fmt.Sprint(refErr), fmt.Sprint(gotErr), "%s: error", label)
	require.True(t, reflect.DeepEqual(refErr, gotErr), "%s: error %v", label, refErr)
	if d := firstDiff(reflect.ValueOf(ref), reflect.ValueOf(got), "Record"); d != "" {
		t.Fatalf("%s: decoded records differ at %s", label, d)
	}
	fast = d.decodeRecordFast(line, &direct)
	if fast {
		require.NoError(t, refErr, "%s: the single pass took a line the reference decoder refuses", label)
		if d := firstDiff(reflect.ValueOf(ref), reflect.ValueOf(direct), "Record"); d != "" {
			t.Fatalf("%s: single pass differs at %s", label, d)
		}
	}
	if refErr == nil {
		want, err1 := ref.MarshalJSON()
		have, err2 := got.MarshalJSON()
		require.Equal(t, err1, err2, "%s: write-back error", label)
		require.Equal(t, string(want), string(have), "%s: written back", label)
	}
	return fast
}

// firstDiff returns the path of the first difference between a and b, "" when they are
// deeply equal (as reflect.DeepEqual sees it: a nil slice or map is not an empty one).
func firstDiff(a, b reflect.Value, path string) string {
	if a.IsValid() != b.IsValid() {
		return path + ": one side is missing"
	}
	if !a.IsValid() {
		return ""
	}
	if a.Type() != b.Type() {
		return fmt.Sprintf("%s: %s vs %s", path, a.Type(), b.Type())
	}
	switch a.Kind() {
	case reflect.Pointer, reflect.Interface:
		if a.IsNil() || b.IsNil() {
			if a.IsNil() != b.IsNil() {
				return fmt.Sprintf("%s: nil %v vs %v", path, a.IsNil(), b.IsNil())
			}
			return ""
		}
		if a.Kind() == reflect.Pointer && a.Pointer() == b.Pointer() {
			return "" // the same value (a reflect.Type in an error, say)
		}
		return firstDiff(a.Elem(), b.Elem(), path)
	case reflect.Struct:
		for i := range a.NumField() {
			if d := firstDiff(a.Field(i), b.Field(i), path+"."+a.Type().Field(i).Name); d != "" {
				return d
			}
		}
		return ""
	case reflect.Slice:
		if a.IsNil() != b.IsNil() {
			return fmt.Sprintf("%s: nil %v vs %v", path, a.IsNil(), b.IsNil())
		}
		if a.Type().Elem().Kind() == reflect.Uint8 {
			if !bytes.Equal(a.Bytes(), b.Bytes()) {
				return fmt.Sprintf("%s: %q vs %q", path, a.Bytes(), b.Bytes())
			}
			return ""
		}
		if a.Len() != b.Len() {
			return fmt.Sprintf("%s: length %d vs %d", path, a.Len(), b.Len())
		}
		for i := range a.Len() {
			if d := firstDiff(a.Index(i), b.Index(i), fmt.Sprintf("%s[%d]", path, i)); d != "" {
				return d
			}
		}
		return ""
	case reflect.Map:
		if a.IsNil() != b.IsNil() {
			return fmt.Sprintf("%s: nil %v vs %v", path, a.IsNil(), b.IsNil())
		}
		if a.Len() != b.Len() {
			return fmt.Sprintf("%s: %d keys vs %d", path, a.Len(), b.Len())
		}
		for _, k := range a.MapKeys() {
			if d := firstDiff(a.MapIndex(k), b.MapIndex(k), fmt.Sprintf("%s[%v]", path, k)); d != "" {
				return d
			}
		}
		return ""
	default:
		if a.Kind() == reflect.Func || !reflect.DeepEqual(valueOf(a), valueOf(b)) {
			return fmt.Sprintf("%s: %v vs %v", path, valueOf(a), valueOf(b))
		}
		return ""
	}
}

// valueOf returns a comparable copy of a basic value, unexported fields included.
func valueOf(v reflect.Value) any {
	switch v.Kind() {
	case reflect.String:
		return v.String()
	case reflect.Bool:
		return v.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return v.Uint()
	case reflect.Float32, reflect.Float64:
		return v.Float()
	}
	return v.Kind().String()
}

// sameDecodeLines runs sameDecode on every non-blank line of data, with one decoder sharing
// strings between the lines as a Decoder does, and returns how many lines the single pass
// took and how many it left to the reference decoder.
func sameDecodeLines(t *testing.T, label string, data []byte) (fast, ref int) {
	t.Helper()
	lines, nums := splitLines(data)
	d := lineDecoder{sharing: true}
	for i, l := range lines {
		if sameDecode(t, &d, fmt.Sprintf("%s:%d", label, nums[i]), l) {
			fast++
		} else {
			ref++
		}
	}
	return fast, ref
}

// SameDecodeLines is sameDecodeLines for the external tests (generated sessions).
var SameDecodeLines = sameDecodeLines

// TestRecordDecodeCorpus decodes every line of every corpus session and of the repository's
// test sessions and golden cases with both decoders (TestRecordDecodeGenerated does generated
// sessions).
func TestRecordDecodeCorpus(t *testing.T) {
	files := corpusPaths(t)
	_ = filepath.WalkDir(filepath.Join("..", "testdata"), func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".jsonl") && !strings.Contains(path, "codex") {
			files = append(files, path)
		}
		return nil
	})
	var fast, ref int
	for _, path := range files {
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		f, r := sameDecodeLines(t, path, data)
		fast, ref = fast+f, ref+r
	}
	t.Logf("%d files: %d lines in a single pass, %d by the reference decoder", len(files), fast, ref)
	require.Positive(t, fast)
}

// TestRecordDecodeTestInputs decodes, with both decoders, every line of every string literal
// of the package's tests that looks like a transcript (the damage, hostile, round-trip and
// fuzz-seed inputs among them), and every seed file of the fuzz corpora.
func TestRecordDecodeTestInputs(t *testing.T) {
	paths, err := filepath.Glob("*_test.go")
	require.NoError(t, err)
	fset := token.NewFileSet()
	n := 0
	for _, path := range paths {
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		require.NoError(t, err)
		ast.Inspect(f, func(node ast.Node) bool {
			lit, ok := node.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil || !strings.Contains(s, "{") {
				return true
			}
			sameDecodeLines(t, fset.Position(lit.Pos()).String(), []byte(s))
			n++
			return true
		})
	}
	seeds, _ := filepath.Glob(filepath.Join("..", "testdata", "fuzz", "*", "*"))
	for _, path := range seeds {
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		for line := range strings.SplitSeq(string(data), "\n") {
			if v, ok := strings.CutPrefix(line, "[]byte("); ok {
				if s, err := strconv.Unquote(strings.TrimSuffix(v, ")")); err == nil {
					sameDecodeLines(t, path, []byte(s))
				}
			}
		}
	}
	t.Logf("%d literals, %d fuzz seed files", n, len(seeds))
	require.Positive(t, n)
}

// TestRecordDecodeEdges names the lines the single pass must read as the reference decoder
// does, whether it takes them itself or leaves them to it.
func TestRecordDecodeEdges(t *testing.T) {
	for _, tc := range []struct {
		name string
		line string
		fast bool // the single pass takes it
	}{
		{"plain user", `{"type":"user","uuid":"a","parentUuid":null,"message":{"role":"user","content":"hi"}}`, true},
		{"empty content string", `{"type":"user","message":{"role":"user","content":""}}`, true},
		{"empty content array", `{"type":"user","message":{"role":"user","content":[]}}`, true},
		{"white space everywhere", " { \"type\" : \"user\" , \"message\" : { \"content\" : [ { \"type\" : \"text\" , \"text\" : \"x\" } ] } } ", true},
		{"escapes", `{"type":"user","uuid":"\u0061\n\t\"\\\/\b\f\r","summary":"\ud83d\ude00 é"}`, true},
		{"escaped key", `{"typ\u0065":"user"}`, true},
		{"lone surrogate", `{"type":"user","summary":"\ud83d x \ude00"}`, true},
		{"surrogate then escape", `{"type":"user","summary":"\ud83d\n"}`, true},
		{"invalid utf-8", "{\"type\":\"user\",\"summary\":\"a\xffb\xc3\",\"x\":\"\xfe\"}", true},
		{"invalid utf-8 key", "{\"type\":\"user\",\"k\xff\":1}", true},
		{"unknown fields", `{"type":"x","a":{"b":[1,-2.5e+3,true,false,null,{}]},"c":[],"d":"s"}`, true},
		{"unknown block", `{"type":"assistant","message":{"content":[{"type":"future","x":[1]}]}}`, true},
		{"type not first", `{"type":"assistant","message":{"content":[{"text":"t","type":"text"}]}}`, true},
		{"unknown block type not first", `{"type":"assistant","message":{"content":[{"x":1,"type":"future"}]}}`, true},
		{"server tool result", `{"type":"assistant","message":{"content":[{"type":"web_search_tool_result","tool_use_id":"s","content":[{"a":1}]}]}}`, true},
		{"nested tool result", `{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"tool_result","content":"x"}],"is_error":false}]}}`, true},
		{"image", `{"type":"user","message":{"content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AAAA"}}]}}`, true},
		{"cache control", `{"type":"user","message":{"content":[{"type":"text","text":"x","cache_control":{"type":"ephemeral","ttl":"1h"}}]}}`, true},
		{"usage", `{"type":"assistant","message":{"usage":{"input_tokens":-0,"output_tokens":9223372036854775807,"service_tier":"s"}}}`, true},
		{"compact metadata", `{"type":"system","compactMetadata":{"trigger":"auto","preTokens":5,"preservedSegment":{"headUuid":"h","x":1},"fallback":true}}`, true},
		{"decision", `{"type":"system","subtype":"agentctx_snip","snipMetadata":{"removedUuids":["a"],"REASON":"x"}}`, true},
		{"nulls", `{"type":null,"message":null,"content":null,"toolUseResult":null,"compactMetadata":null}`, true},
		{"nested nulls", `{"type":"user","message":{"content":null,"usage":null}}`, true},
		{"deep unknown", `{"type":"x","d":` + strings.Repeat("[", 200) + strings.Repeat("]", 200) + `}`, true},

		{"too deep", `{"type":"x","d":` + strings.Repeat("[", 2000) + strings.Repeat("]", 2000) + `}`, false},
		{"duplicate known key", `{"type":"user","type":"assistant"}`, false},
		{"duplicate block type", `{"type":"user","message":{"content":[{"type":"text","type":"image"}]}}`, false},
		{"folded block type", `{"type":"user","message":{"content":[{"type":"text","Type":"future"}]}}`, false},
		{"folded type only", `{"type":"user","message":{"content":[{"TYPE":"text","text":"x"}]}}`, false},
		{"block without type", `{"type":"user","message":{"content":[{"text":"x"}]}}`, false},
		{"block not an object", `{"type":"user","message":{"content":["x"]}}`, false},
		{"int as float", `{"type":"assistant","message":{"usage":{"input_tokens":1.0}}}`, false},
		{"int too large", `{"type":"assistant","message":{"usage":{"input_tokens":1e400}}}`, false},
		{"string for bool", `{"type":"user","isMeta":"yes"}`, false},
		{"number for string", `{"type":"user","parentUuid":5}`, false},
		{"message not an object", `{"type":"user","message":"x"}`, false},
		{"content an object", `{"type":"user","message":{"content":{}}}`, false},
		{"bad decision", `{"type":"system","snipMetadata":{"removedUuids":"a"}}`, false},
		{"not an object", `[1]`, false},
		{"null", `null`, false},
		{"trailing data", `{"type":"user"} x`, false},
		{"torn", `{"type":"user","message":{"role":"us`, false},
		{"bad escape", `{"type":"user","x":"\q"}`, false},
		{"short unicode escape", `{"type":"user","x":"\u12"}`, false},
		{"control character", "{\"type\":\"user\",\"x\":\"a\tb\"}", false},
		{"bad number", `{"type":"user","x":01}`, false},
		{"bad literal", `{"type":"user","x":tru}`, false},
		{"missing colon", `{"type" "user"}`, false},
		{"trailing comma", `{"type":"user",}`, false},
		{"array trailing comma", `{"type":"user","x":[1,]}`, false},
		{"mismatched close", `{"type":"user","x":[1}}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fast := sameDecode(t, &lineDecoder{}, tc.name, []byte(tc.line))
			require.Equal(t, tc.fast, fast, "taken by the single pass")
		})
	}
}

// FuzzRecordDecode checks on arbitrary lines that the single-pass decoder reads a line exactly
// as the reference decoder does.
func FuzzRecordDecode(f *testing.F) {
	img, _ := imageLine(f, "img", 64)
	for _, s := range []string{
		userLine("a"), tornLine, img,
		`{"type":"assistant","message":{"id":"m","role":"assistant","content":[{"type":"future_block","x":1},{"type":"thinking","thinking":"t","signature":"s"},{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}],"usage":{"input_tokens":1,"output_tokens":2,"service_tier":"standard"}},"parentUuid":null,"isMeta":false}`,
		`{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"x\u00e9\ud83d\ude00"}],"is_error":true}]},"toolUseResult":"Error: x"}`,
		`{"type":"system","subtype":"compact_boundary","parentUuid":null,"logicalParentUuid":"x","compactMetadata":{"trigger":"auto","preTokens":167117,"extra":1,"preservedSegment":{"headUuid":"h"}}}`,
		`{"type":"user","message":{"content":[{"type":"image","source":{"type":"base64","data":"QQ=="},"cache_control":{"type":"ephemeral"}}]}}`,
		`{"type":"system","subtype":"agentctx_pin","pinDecision":{"uuids":["a"],"tokens":3}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		sameDecodeLines(t, "fuzz", data)
		sameDecode(t, &lineDecoder{sharing: true}, "fuzz", data)
	})
}
