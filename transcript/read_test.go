package transcript

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// userLine returns a well-formed user record line (without newline) with the given uuid.
func userLine(uuid string) string {
	return fmt.Sprintf(`{"type":"user","uuid":%q,"parentUuid":null,"sessionId":"s1","message":{"role":"user","content":"hello <b>"}}`, uuid)
}

// tornLine is userLine("torn") cut in the middle, as a crash mid-write leaves it.
var tornLine = userLine("torn")[:40]

func uuidsOf(tr *File) []string {
	var out []string
	for _, r := range tr.Records {
		out = append(out, r.UUID)
	}
	return out
}

func problemLines(tr *File) []int {
	var out []int
	for _, p := range tr.Problems {
		out = append(out, p.Line)
	}
	return out
}

// encodeLine encodes one record the way the Appender does, without the newline.
func encodeLine(t testing.TB, r Record) []byte {
	t.Helper()
	b, err := encodeBatch([]Record{r})
	require.NoError(t, err)
	return b[1 : len(b)-1]
}

// decodeAny decodes JSON with numbers kept as json.Number, for exact semantic comparison.
func decodeAny(t testing.TB, b []byte) any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	require.NoError(t, d.Decode(&v), "%.200s", b)
	return v
}

// deliveries feeds the same bytes to the reader in different shapes.
var deliveries = []struct {
	name string
	wrap func(io.Reader) io.Reader
}{
	{"whole", func(r io.Reader) io.Reader { return r }},
	{"onebyte", iotest.OneByteReader},
	{"half", iotest.HalfReader},
	{"dataerr", iotest.DataErrReader},
}

func TestReadTranscript(t *testing.T) {
	a, b := userLine("a"), userLine("b")
	tests := []struct {
		name     string
		in       string
		strict   bool
		uuids    []string
		lines    []int
		problems []int
		dropped  []int // lines of records kept without a field they could not read
		torn     int   // line of the torn last line; 0 for none
		errLine  int   // strict: line of the expected error; 0 for none
	}{
		{name: "empty file", in: ""},
		{name: "blank lines only", in: "\n\n  \n\t\r\n"},
		{name: "records", in: a + "\n" + b + "\n", uuids: []string{"a", "b"}, lines: []int{1, 2}},
		{name: "blank lines between", in: "\n" + a + "\n\n  \n" + b + "\n\n", uuids: []string{"a", "b"}, lines: []int{2, 5}},
		{name: "crlf", in: a + "\r\n" + b + "\r\n", uuids: []string{"a", "b"}, lines: []int{1, 2}},
		{name: "crlf blank lines", in: "\r\n" + a + "\r\n\r\n" + b, uuids: []string{"a", "b"}, lines: []int{2, 4}},
		{name: "no final newline", in: a + "\n" + b, uuids: []string{"a", "b"}, lines: []int{1, 2}},
		{name: "byte order mark", in: "\xef\xbb\xbf" + a + "\n", uuids: []string{"a"}, lines: []int{1}},
		{name: "unknown type", in: `{"type":"brand-new","foo":{"bar":[1,2]}}` + "\n", uuids: []string{""}, lines: []int{1}},
		{name: "torn last line", in: a + "\n" + tornLine, uuids: []string{"a"}, lines: []int{1}, torn: 2},
		{name: "torn last line strict", in: a + "\n" + tornLine, strict: true, uuids: []string{"a"}, lines: []int{1}, torn: 2},
		{name: "torn then blank lines", in: a + "\n" + tornLine + "\n\n \n", uuids: []string{"a"}, lines: []int{1}, torn: 2},
		{name: "torn only", in: tornLine, torn: 1},
		{name: "torn number", in: `{"type":"user","x":12`, torn: 1},
		{name: "torn escape", in: `{"type":"user","x":"\u00`, torn: 1},
		{name: "torn healed", in: a + "\n" + tornLine + "\n" + b + "\n", uuids: []string{"a", "b"}, lines: []int{1, 3}, problems: []int{2}},
		{name: "torn healed strict", in: a + "\n" + tornLine + "\n" + b + "\n", strict: true, uuids: []string{"a", "b"}, lines: []int{1, 3}, problems: []int{2}},
		{name: "two torn", in: tornLine + "\n" + a + "\n" + tornLine, uuids: []string{"a"}, lines: []int{2}, problems: []int{1}, torn: 3},
		{name: "torn then bad", in: tornLine + "\n{bad}\n", problems: []int{1, 2}},
		{name: "invalid json", in: a + "\n{not json}\n" + b + "\n", uuids: []string{"a", "b"}, lines: []int{1, 3}, problems: []int{2}},
		{name: "invalid json strict", in: a + "\n{not json}\n" + b + "\n", strict: true, errLine: 2},
		{name: "wrong field type", in: a + "\n" + `{"type":"user","parentUuid":5}` + "\n" + b, uuids: []string{"a", "", "b"}, lines: []int{1, 2, 3}, dropped: []int{2}},
		{name: "wrong field type strict", in: a + "\n" + `{"type":"user","parentUuid":5}` + "\n" + b, strict: true, errLine: 2},
		{name: "not objects", in: "[1,2]\nnull\n42\n\"s\"\n" + a, uuids: []string{"a"}, lines: []int{5}, problems: []int{1, 2, 3, 4}},
		{name: "not objects strict", in: "[1,2]\n" + a, strict: true, errLine: 1},
		{name: "unhealed torn line", in: `{"type":"us` + b + "\n", problems: []int{1}},
		{name: "unhealed torn line strict", in: `{"type":"us` + b + "\n", strict: true, errLine: 1},
		{name: "trailing garbage", in: a + " x\n" + b, uuids: []string{"b"}, lines: []int{2}, problems: []int{1}},
		{name: "nbsp is not blank", in: "\u00a0\n" + a, uuids: []string{"a"}, lines: []int{2}, problems: []int{1}},
	}
	for _, tt := range tests {
		for _, dl := range deliveries {
			t.Run(tt.name+"/"+dl.name, func(t *testing.T) {
				tr, err := Read(dl.wrap(strings.NewReader(tt.in)), "x.jsonl", ReadOptions{Strict: tt.strict})
				if tt.errLine != 0 {
					var le *LineError
					require.ErrorAs(t, err, &le)
					assert.Equal(t, "x.jsonl", le.File)
					assert.Equal(t, tt.errLine, le.Line)
					assert.Nil(t, tr)
					return
				}
				require.NoError(t, err)
				assert.Equal(t, "x.jsonl", tr.Name)
				assert.Equal(t, tt.uuids, uuidsOf(tr))
				assert.Equal(t, tt.lines, tr.Lines)
				assert.Equal(t, tt.problems, problemLines(tr))
				var dropped []int
				for _, d := range tr.Dropped {
					dropped = append(dropped, d.Line)
				}
				assert.Equal(t, tt.dropped, dropped)
				assert.Equal(t, len(tr.Records), tr.Len())
				for i, r := range tr.Records {
					assert.Equal(t, tr.Lines[i], r.Line, "Record.Line")
				}
				if tt.torn == 0 {
					assert.Nil(t, tr.Torn)
				} else if assert.NotNil(t, tr.Torn) {
					assert.Equal(t, tt.torn, tr.Torn.Line)
					assert.ErrorIs(t, tr.Torn, ErrTornLine)
				}
				assert.Equal(t, tt.problems == nil && tt.dropped == nil && tt.torn == 0, tr.Clean())
				assert.Equal(t, tr.Clean(), tr.Err() == nil)
			})
		}
	}
}

func TestReadTranscriptErrorMessages(t *testing.T) {
	deep := `{"type":"user","uuid":"c","message":{"role":"user","content":[{"type":"text","text":"a"},{"type":"tool_result","tool_use_id":"t","is_error":"yes"}]}}`
	tests := []struct {
		name   string
		in     string
		opts   ReadOptions
		line   int
		field  string
		prefix string
		is     error
	}{
		{
			name: "wrong type", in: userLine("a") + "\n" + userLine("b") + "\n" + `{"type":"user","uuid":"c","parentUuid":5}` + "\n",
			line: 3, field: "parentUuid", prefix: "x.jsonl:3: field parentUuid: json: cannot unmarshal number",
		},
		{
			name: "deep block field", in: userLine("a") + "\n" + deep + "\n",
			line: 2, field: "message.content[1].is_error", prefix: "x.jsonl:2: field message.content[1].is_error: json: cannot unmarshal string",
		},
		{
			name: "block without type", in: `{"type":"assistant","message":{"content":[{"text":"a"}]}}`,
			line: 1, field: "message.content[0].type", prefix: "x.jsonl:1: field message.content[0].type: missing",
		},
		{
			name: "invalid json", in: userLine("a") + "\n{x}\n",
			line: 2, prefix: "x.jsonl:2: invalid character 'x'",
		},
		{
			name: "line too long", in: userLine("a") + "\n" + userLine(strings.Repeat("z", 200)) + "\n", opts: ReadOptions{MaxLineBytes: 150},
			line: 2, prefix: "x.jsonl:2: line too long: ", is: ErrLineTooLong,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			check := func(t *testing.T, err error) {
				t.Helper()
				var le *LineError
				require.ErrorAs(t, err, &le)
				assert.Equal(t, "x.jsonl", le.File)
				assert.Equal(t, tt.line, le.Line)
				assert.Equal(t, tt.field, le.Field)
				assert.True(t, strings.HasPrefix(le.Error(), tt.prefix), "got %q, want prefix %q", le.Error(), tt.prefix)
				if tt.is != nil {
					assert.ErrorIs(t, err, tt.is)
				}
				assert.NotNil(t, le.Unwrap())
			}
			t.Run("strict", func(t *testing.T) {
				opts := tt.opts
				opts.Strict = true
				_, err := Read(strings.NewReader(tt.in), "x.jsonl", opts)
				check(t, err)
			})
			t.Run("lenient", func(t *testing.T) {
				tr, err := Read(strings.NewReader(tt.in), "x.jsonl", tt.opts)
				require.NoError(t, err)
				got := tr.Problems
				if tt.field != "" {
					// A field that cannot be read drops the field, not the record.
					assert.Empty(t, tr.Problems)
					got = tr.Dropped
					r := tr.Records[len(tr.Records)-1]
					assert.Equal(t, tt.line, r.Line)
					require.NotNil(t, r.Damage)
					require.Len(t, r.Damage.Fields, 1)
					check(t, r.Damage.Fields[0])
				}
				require.Len(t, got, 1)
				check(t, got[0])
				check(t, tr.Err())
			})
		})
	}
	t.Run("torn", func(t *testing.T) {
		tr, err := Read(strings.NewReader(userLine("a")+"\n"+tornLine), "x.jsonl", ReadOptions{})
		require.NoError(t, err)
		require.NotNil(t, tr.Torn)
		assert.ErrorIs(t, tr.Torn, ErrTornLine)
		assert.True(t, strings.HasPrefix(tr.Torn.Error(), "x.jsonl:2: torn line"), tr.Torn.Error())
	})
	t.Run("sentinels", func(t *testing.T) {
		assert.True(t, strings.HasPrefix(ErrLineTooLong.Error(), "agentctx: "))
		assert.True(t, strings.HasPrefix(ErrTornLine.Error(), "agentctx: "))
	})
}

// imageLine returns a user record line holding a base64 PNG image of about n bytes of base64.
func imageLine(t testing.TB, uuid string, n int) (line string, data string) {
	t.Helper()
	raw := make([]byte, n/4*3)
	_, _ = rand.Read(raw)
	data = base64.StdEncoding.EncodeToString(raw)
	line = fmt.Sprintf(`{"type":"user","uuid":%q,"message":{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":%q}},{"type":"text","text":"look"}]}}`, uuid, data)
	return line, data
}

func TestReadTranscriptHugeLines(t *testing.T) {
	t.Run("5MB image", func(t *testing.T) {
		img, data := imageLine(t, "img", 5<<20)
		require.Greater(t, len(img), 5<<20)
		in := userLine("a") + "\n" + img + "\n" + userLine("b") + "\n"
		// HalfReader delivers the line in many short reads, each below the read buffer.
		tr, err := Read(iotest.HalfReader(strings.NewReader(in)), "big.jsonl", ReadOptions{Strict: true})
		require.NoError(t, err)
		require.Equal(t, []string{"a", "img", "b"}, uuidsOf(tr))
		assert.Equal(t, []int{1, 2, 3}, tr.Lines)
		im, ok := tr.Records[1].Message.Content[0].(*Image)
		require.True(t, ok)
		assert.Equal(t, data, im.Source.Data)
		assert.JSONEq(t, img, string(encodeLine(t, tr.Records[1])))
	})

	long := userLine(strings.Repeat("z", 4000)) // ~4.1 KB
	tests := []struct {
		name     string
		in       string
		max      int
		uuids    []string
		problems []int
		errLine  int
	}{
		{name: "under the cap", in: long + "\n", max: len(long), uuids: []string{strings.Repeat("z", 4000)}},
		{name: "under the cap crlf", in: long + "\r\n", max: len(long), uuids: []string{strings.Repeat("z", 4000)}},
		{name: "under the cap no newline", in: long, max: len(long), uuids: []string{strings.Repeat("z", 4000)}},
		{name: "one over the cap", in: long + "\n" + userLine("b"), max: len(long) - 1, uuids: []string{"b"}, problems: []int{1}, errLine: 1},
		{name: "one over the cap crlf", in: long + "\r\n" + userLine("b"), max: len(long) - 1, uuids: []string{"b"}, problems: []int{1}, errLine: 1},
		{name: "middle line", in: userLine("a") + "\n" + long + "\n" + userLine("b") + "\n", max: 1024, uuids: []string{"a", "b"}, problems: []int{2}, errLine: 2},
		{name: "last line without newline", in: userLine("a") + "\n" + long, max: 1024, uuids: []string{"a"}, problems: []int{2}, errLine: 2},
		{name: "over the read buffer", in: userLine("a") + "\n" + userLine(strings.Repeat("y", 300<<10)) + "\n" + userLine("b"), max: 100 << 10, uuids: []string{"a", "b"}, problems: []int{2}, errLine: 2},
		{name: "over the read buffer but under the cap", in: userLine("a") + "\n" + userLine(strings.Repeat("y", 300<<10)) + "\n" + userLine("b"), max: 400 << 10, uuids: []string{"a", strings.Repeat("y", 300<<10), "b"}},
	}
	for _, tt := range tests {
		for _, dl := range deliveries[:3] {
			t.Run(tt.name+"/"+dl.name, func(t *testing.T) {
				tr, err := Read(dl.wrap(strings.NewReader(tt.in)), "x.jsonl", ReadOptions{MaxLineBytes: tt.max})
				require.NoError(t, err)
				assert.Equal(t, tt.uuids, uuidsOf(tr))
				assert.Equal(t, tt.problems, problemLines(tr))
				for _, p := range tr.Problems {
					assert.ErrorIs(t, p, ErrLineTooLong)
				}

				_, err = Read(dl.wrap(strings.NewReader(tt.in)), "x.jsonl", ReadOptions{MaxLineBytes: tt.max, Strict: true})
				if tt.errLine == 0 {
					require.NoError(t, err)
					return
				}
				var le *LineError
				require.ErrorAs(t, err, &le)
				assert.ErrorIs(t, err, ErrLineTooLong)
				assert.Equal(t, tt.errLine, le.Line)
				assert.Contains(t, err.Error(), fmt.Sprintf("x.jsonl:%d: ", tt.errLine))
			})
		}
	}

	t.Run("over-long line is not buffered", func(t *testing.T) {
		huge := userLine(strings.Repeat("q", 8<<20))
		d := NewDecoder(strings.NewReader(huge+"\n"+userLine("b")+"\n"), "x.jsonl", ReadOptions{MaxLineBytes: 64 << 10})
		var r Record
		require.NoError(t, d.Decode(&r))
		assert.Equal(t, "b", r.UUID)
		assert.Equal(t, 2, d.Line())
		assert.Less(t, cap(d.buf), 1<<20, "the decoder buffered the over-long line")
		require.Len(t, d.Problems(), 1)
		assert.Contains(t, d.Problems()[0].Error(), fmt.Sprintf("%d bytes exceeds the limit of %d", len(huge), 64<<10))
	})
}

func TestDecoder(t *testing.T) {
	t.Run("stream", func(t *testing.T) {
		in := "\n" + userLine("a") + "\n{bad}\n" + userLine("b") + "\n" + tornLine
		d := NewDecoder(strings.NewReader(in), "s.jsonl", ReadOptions{})
		assert.Equal(t, 0, d.Line())
		var r Record
		require.NoError(t, d.Decode(&r))
		assert.Equal(t, "a", r.UUID)
		assert.Equal(t, 2, d.Line())
		r.Extra = map[string]json.RawMessage{"stale": json.RawMessage("1")}
		require.NoError(t, d.Decode(&r))
		assert.Equal(t, "b", r.UUID)
		assert.Nil(t, r.Extra, "Decode must overwrite the whole record")
		assert.Equal(t, 4, d.Line())
		require.ErrorIs(t, d.Decode(&r), io.EOF)
		require.ErrorIs(t, d.Decode(&r), io.EOF)
		require.Len(t, d.Problems(), 1)
		assert.Equal(t, 3, d.Problems()[0].Line)
		require.NotNil(t, d.Torn())
		assert.Equal(t, 5, d.Torn().Line)
	})
	t.Run("strict continues after an error", func(t *testing.T) {
		in := userLine("a") + "\n{bad}\n" + userLine("b") + "\n"
		d := NewDecoder(strings.NewReader(in), "s.jsonl", ReadOptions{Strict: true})
		var r Record
		require.NoError(t, d.Decode(&r))
		err := d.Decode(&r)
		var le *LineError
		require.ErrorAs(t, err, &le)
		assert.Equal(t, 2, le.Line)
		assert.Equal(t, 2, d.Line())
		assert.Equal(t, Record{}, r)
		require.NoError(t, d.Decode(&r))
		assert.Equal(t, "b", r.UUID)
		require.ErrorIs(t, d.Decode(&r), io.EOF)
	})
	t.Run("read error is sticky", func(t *testing.T) {
		boom := errors.New("boom")
		in := io.MultiReader(strings.NewReader(userLine("a")+"\n"), iotest.ErrReader(boom))
		d := NewDecoder(in, "s.jsonl", ReadOptions{})
		var r Record
		require.NoError(t, d.Decode(&r))
		err := d.Decode(&r)
		require.ErrorIs(t, err, boom)
		assert.Contains(t, err.Error(), "s.jsonl:2: boom")
		require.ErrorIs(t, d.Decode(&r), boom)

		_, err = Read(io.MultiReader(strings.NewReader(userLine("a")+"\n"), iotest.ErrReader(boom)), "s.jsonl", ReadOptions{})
		require.ErrorIs(t, err, boom)
	})
}

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s.jsonl")
	require.NoError(t, os.WriteFile(path, []byte(userLine("a")+"\n"+tornLine+"\n"), 0o644))
	tr, err := ReadFile(path, ReadOptions{})
	require.NoError(t, err)
	assert.Equal(t, path, tr.Name)
	assert.Equal(t, []string{"a"}, uuidsOf(tr))
	require.NotNil(t, tr.Torn)
	assert.True(t, strings.HasPrefix(tr.Torn.Error(), path+":2: "))

	_, err = ReadFile(filepath.Join(dir, "missing.jsonl"), ReadOptions{})
	assert.ErrorIs(t, err, os.ErrNotExist)

	empty := filepath.Join(dir, "empty.jsonl")
	require.NoError(t, os.WriteFile(empty, nil, 0o644))
	tr, err = ReadFile(empty, ReadOptions{Strict: true})
	require.NoError(t, err)
	assert.Empty(t, tr.Records)
	assert.True(t, tr.Clean())
}

// splitLines returns the non-blank lines of data (JSON white space trimmed) and their 1-based
// line numbers, the way the Decoder numbers them.
func splitLines(data []byte) (lines [][]byte, nums []int) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	for i, l := range bytes.Split(data, []byte("\n")) {
		if l = trimJSONSpace(l); len(l) > 0 {
			lines = append(lines, l)
			nums = append(nums, i+1)
		}
	}
	return lines, nums
}

func TestCorpusReadRoundTrip(t *testing.T) {
	for _, path := range corpusFiles(t) {
		name, _ := filepath.Rel(corpusDir(t), path)
		t.Run(name, func(t *testing.T) {
			tr, err := ReadFile(path, ReadOptions{Strict: true})
			require.NoError(t, err)
			assert.Empty(t, tr.Problems)
			assert.Nil(t, tr.Torn)

			data, err := os.ReadFile(path)
			require.NoError(t, err)
			lines, nums := splitLines(data)
			require.Len(t, tr.Records, len(lines))
			assert.Equal(t, nums, tr.Lines)
			bad := 0
			for i, rec := range tr.Records {
				got := encodeLine(t, rec)
				if !reflect.DeepEqual(decodeAny(t, lines[i]), decodeAny(t, got)) {
					bad++
					if bad <= 3 {
						assert.JSONEq(t, string(lines[i]), string(got), "line %d", tr.Lines[i])
					}
				}
			}
			assert.Zero(t, bad, "records that do not re-encode to semantically equal JSON")
		})
	}
}

// droppedPaths returns the paths of the fields a record could not read.
func droppedPaths(d *Damage) []string {
	if d == nil {
		return nil
	}
	var out []string
	for _, e := range d.Fields {
		out = append(out, e.Field)
	}
	return out
}

// TestReadTranscriptUnreadableFields checks that a field that cannot be read costs that field,
// not the record: the record is kept without it, reported by line and JSON path, and written
// back as it was read.
func TestReadTranscriptUnreadableFields(t *testing.T) {
	asst := func(usage string) string {
		return `{"type":"assistant","uuid":"b","parentUuid":"a","message":{"id":"m1","role":"assistant","content":[{"type":"text","text":"hi"}],"usage":` + usage + `}}`
	}
	tests := []struct {
		name  string
		line  string
		paths []string
		check func(t *testing.T, r *Record)
	}{
		{name: "usage figure too large", line: asst(`{"input_tokens":1e400,"output_tokens":7}`), paths: []string{"message.usage.input_tokens"},
			check: func(t *testing.T, r *Record) {
				require.NotNil(t, r.Message.Usage)
				assert.Zero(t, r.Message.Usage.InputTokens)
				assert.Equal(t, 7, r.Message.Usage.OutputTokens, "the rest of the usage is read")
				assert.Equal(t, "hi", r.Message.Content[0].(*Text).Text)
			}},
		{name: "fractional usage figure", line: asst(`{"input_tokens":12.5,"output_tokens":7}`), paths: []string{"message.usage.input_tokens"}},
		{name: "usage not an object", line: asst(`"lots"`), paths: []string{"message.usage"},
			check: func(t *testing.T, r *Record) { assert.Nil(t, r.Message.Usage) }},
		{name: "numeric timestamp", line: `{"type":"user","uuid":"b","parentUuid":"a","timestamp":1767322800,"message":{"role":"user","content":"q"}}`, paths: []string{"timestamp"},
			check: func(t *testing.T, r *Record) {
				assert.Empty(t, r.Timestamp)
				assert.True(t, r.Time().IsZero())
				assert.Equal(t, "a", r.ParentUUID)
			}},
		{name: "parentUuid not a string", line: `{"type":"user","uuid":"b","parentUuid":7,"message":{"role":"user","content":"q"}}`, paths: []string{"parentUuid"},
			check: func(t *testing.T, r *Record) { assert.Empty(t, r.ParentUUID) }},
		{name: "tool_result is_error not a bool", line: `{"type":"user","uuid":"b","parentUuid":"a","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok","is_error":"yes"}]}}`,
			paths: []string{"message.content[0].is_error"},
			check: func(t *testing.T, r *Record) {
				tr := r.Message.Content[0].(*ToolResult)
				assert.Equal(t, "t1", tr.ToolUseID)
				assert.False(t, tr.IsError)
			}},
		{name: "block without a type", line: `{"type":"assistant","uuid":"b","parentUuid":"a","message":{"id":"m1","role":"assistant","content":[{"text":"lost"},{"type":"text","text":"kept"}]}}`,
			paths: []string{"message.content[0].type"},
			check: func(t *testing.T, r *Record) {
				require.Len(t, r.Message.Content, 2)
				assert.IsType(t, &UnknownBlock{}, r.Message.Content[0], "kept verbatim")
				assert.Equal(t, "kept", r.Message.Content[1].(*Text).Text)
			}},
		{name: "block that is no object", line: `{"type":"user","uuid":"b","parentUuid":"a","message":{"role":"user","content":[5,{"type":"text","text":"kept"}]}}`,
			paths: []string{"message.content[0]"}},
		{name: "nested tool_result block", line: `{"type":"user","uuid":"b","parentUuid":"a","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":3},{"type":"text","text":"x"}]}]}}`,
			paths: []string{"message.content[0].content[0].text"}},
		{name: "message not an object", line: `{"type":"user","uuid":"b","parentUuid":"a","message":"q"}`, paths: []string{"message"},
			check: func(t *testing.T, r *Record) {
				assert.Nil(t, r.Message)
				assert.False(t, r.IsConversation())
			}},
		{name: "several fields", line: `{"type":"user","uuid":"b","parentUuid":"a","isMeta":"no","timestamp":5,"message":{"role":"user","content":"q"}}`,
			paths: []string{"isMeta", "timestamp"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := userLine("a") + "\n" + tt.line + "\n" + userLine("c") + "\n"
			tr, err := Read(strings.NewReader(in), "x.jsonl", ReadOptions{})
			require.NoError(t, err)
			require.Equal(t, []string{"a", "b", "c"}, uuidsOf(tr), "the record is kept")
			assert.Empty(t, tr.Problems)
			assert.False(t, tr.Clean())
			r := &tr.Records[1]
			assert.Equal(t, 2, r.Line)
			require.NotNil(t, r.Damage)
			assert.Equal(t, tt.paths, droppedPaths(r.Damage))
			require.Len(t, tr.Dropped, len(tt.paths))
			for _, d := range tr.Dropped {
				assert.Equal(t, "x.jsonl", d.File)
				assert.Equal(t, 2, d.Line)
				assert.True(t, strings.HasPrefix(d.Error(), "x.jsonl:2: field "+d.Field+": "), d.Error())
			}
			assert.ErrorContains(t, tr.Err(), "x.jsonl:2: field "+tt.paths[0])
			assert.Nil(t, tr.Records[0].Damage)
			assert.Nil(t, tr.Records[2].Damage)
			if tt.check != nil {
				tt.check(t, r)
			}
			assert.Equal(t, decodeAny(t, []byte(tt.line)), decodeAny(t, encodeLine(t, *r)), "the record writes back as it was read")

			_, err = Read(strings.NewReader(in), "x.jsonl", ReadOptions{Strict: true})
			var le *LineError
			require.ErrorAs(t, err, &le, "strict mode refuses the line")
			assert.Equal(t, 2, le.Line)
			assert.Equal(t, tt.paths[0], le.Field)
		})
	}
}

// TestReadTranscriptDamageSkipped checks that the lines that are no record are named on the
// record after them, and the ones after the last record on the last record.
func TestReadTranscriptDamageSkipped(t *testing.T) {
	long := userLine(strings.Repeat("z", 300))
	in := userLine("a") + "\n{bad}\n" + long + "\n" + userLine("b") + "\n" + userLine("c") + "\n[1]\n" + tornLine
	tr, err := Read(strings.NewReader(in), "x.jsonl", ReadOptions{MaxLineBytes: 200})
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b", "c"}, uuidsOf(tr))
	lines := func(les []*LineError) []int {
		var out []int
		for _, le := range les {
			out = append(out, le.Line)
		}
		return out
	}
	assert.Nil(t, tr.Records[0].Damage)
	require.NotNil(t, tr.Records[1].Damage)
	assert.Equal(t, []int{2, 3}, lines(tr.Records[1].Damage.Skipped))
	assert.ErrorIs(t, tr.Records[1].Damage.Skipped[1], ErrLineTooLong)
	assert.Empty(t, tr.Records[1].Damage.Trailing)
	require.NotNil(t, tr.Records[2].Damage)
	assert.Empty(t, tr.Records[2].Damage.Skipped)
	assert.Equal(t, []int{6, 7}, lines(tr.Records[2].Damage.Trailing), "the lines after the last record, the torn one included")
	assert.ErrorIs(t, tr.Records[2].Damage.Trailing[1], ErrTornLine)
	assert.Equal(t, []int{2, 3, 6}, problemLines(tr))
	require.NotNil(t, tr.Torn)

	t.Run("decoder", func(t *testing.T) {
		d := NewDecoder(strings.NewReader(in), "x.jsonl", ReadOptions{MaxLineBytes: 200})
		var r Record
		require.NoError(t, d.Decode(&r))
		assert.Nil(t, r.Damage)
		require.NoError(t, d.Decode(&r))
		assert.Equal(t, 4, r.Line)
		require.NotNil(t, r.Damage)
		assert.Equal(t, []int{2, 3}, lines(r.Damage.Skipped))
		require.NoError(t, d.Decode(&r))
		assert.Nil(t, r.Damage, "a Decoder cannot name the lines after the record it returned")
	})
}

// FuzzReadTranscript decodes arbitrary bytes: nothing is dropped silently, strict mode agrees,
// and records round-trip (the root package's FuzzPrepareRawTranscript runs what decodes
// through Prepare).
func FuzzReadTranscript(f *testing.F) {
	img, _ := imageLine(f, "img", 2048)
	for _, s := range []string{
		"",
		"\n\n",
		userLine("a") + "\n" + userLine("b") + "\n",
		userLine("a") + "\r\n" + tornLine,
		userLine("a") + "\n" + tornLine + "\n" + userLine("b"),
		`{"type":"brand-new","foo":{"bar":[1,2.5e3,null]},"uuid":"x"}`,
		`{"type":"assistant","message":{"id":"m","role":"assistant","content":[{"type":"future_block","x":1},{"type":"thinking","thinking":"t","signature":"s"},{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}],"usage":{"input_tokens":1,"output_tokens":2,"service_tier":"standard"}},"parentUuid":null,"isMeta":false}`,
		`{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"x"}],"is_error":true}]},"toolUseResult":"Error: x"}`,
		`{"type":"system","subtype":"compact_boundary","parentUuid":null,"logicalParentUuid":"x","compactMetadata":{"trigger":"auto","preTokens":167117,"extra":1}}`,
		`{"type":"user","parentUuid":5}`,
		`{"type":"us{"type":"user"}`,
		"[1]\nnull\n\"s\"\n{}",
		img,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		const maxLine = 8 << 10
		tr, err := Read(bytes.NewReader(data), "fuzz.jsonl", ReadOptions{MaxLineBytes: maxLine})
		require.NoError(t, err)

		// Nothing is dropped silently: every non-blank line is a record (a Codex rollout's line
		// may be several) or a reported problem.
		lines, _ := splitLines(data)
		torn := 0
		if tr.Torn != nil {
			torn = 1
		}
		read := map[int]bool{}
		for _, l := range tr.Lines {
			read[l] = true
		}
		require.Equal(t, len(lines), len(read)+len(tr.Problems)+torn)
		require.Len(t, tr.Lines, len(tr.Records))

		// Strict mode agrees: it fails exactly when a problem other than a torn line exists, or
		// a field could not be read.
		strictTr, strictErr := Read(bytes.NewReader(data), "fuzz.jsonl", ReadOptions{MaxLineBytes: maxLine, Strict: true})
		fatal := len(tr.Dropped) > 0
		for _, p := range tr.Problems {
			fatal = fatal || !errors.Is(p, ErrTornLine)
		}
		if fatal {
			var le *LineError
			require.ErrorAs(t, strictErr, &le)
		} else {
			require.NoError(t, strictErr)
			require.Equal(t, len(tr.Records), len(strictTr.Records))
		}

		// Round-trip stability: encode, decode, encode again gives the same bytes. (Records
		// mapped from a Codex rollout are not its lines: FuzzReadCodex checks those.)
		if tr.Format != FormatClaudeCode {
			return
		}
		for i, rec := range tr.Records {
			first, err := encodeBatch([]Record{rec})
			require.NoError(t, err, "record at line %d", tr.Lines[i])
			again, err := Read(bytes.NewReader(first), "re.jsonl", ReadOptions{})
			require.NoError(t, err)
			require.Len(t, again.Records, 1)
			require.Equal(t, droppedPaths(rec.Damage), droppedPaths(again.Records[0].Damage))
			second, err := encodeBatch(again.Records)
			require.NoError(t, err)
			require.Equal(t, string(first), string(second))
		}
	})
}

func BenchmarkReadTranscript(b *testing.B) {
	var largest string
	var size int64
	for _, path := range corpusFiles(b) {
		fi, err := os.Stat(path)
		require.NoError(b, err)
		if fi.Size() > size {
			largest, size = path, fi.Size()
		}
	}
	data, err := os.ReadFile(largest)
	require.NoError(b, err)
	b.Logf("%s: %d bytes", filepath.Base(largest), len(data))
	b.Run("records", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			tr, err := Read(bytes.NewReader(data), largest, ReadOptions{})
			if err != nil || !tr.Clean() {
				b.Fatal(err, tr.Err())
			}
		}
	})
	// lines measures the line framing alone, without decoding records.
	b.Run("lines", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			d := NewDecoder(bytes.NewReader(data), largest, ReadOptions{})
			for {
				if _, _, _, err := d.readLine(); err != nil {
					break
				}
			}
		}
	})
}
