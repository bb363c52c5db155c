package transcript

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// checkWeighLine checks weighLine on line against a full decode: when it is sure, it reads
// what weighed reads of the decoded record. It returns whether it was sure.
func checkWeighLine(t *testing.T, name string, line []byte) bool {
	t.Helper()
	var ld lineDecoder
	got, ok, sure := weighLine(&ld.s, trimJSONSpace(line), "")
	if !sure {
		return false
	}
	var r Record
	decoded := decodeLine(&ld, 1, 0, line, &r)
	want, wantOK := weighed(&r)
	require.True(t, decoded, "%s: weighLine is sure of a line the decoder refuses", name)
	require.Equal(t, wantOK, ok, "%s: a response with usage", name)
	if ok {
		assert.Equal(t, threadResponse{weighedResponse: want, thread: uint8(thread(&r))}, got, name)
	}
	return true
}

func TestWeighLine(t *testing.T) {
	const resp = `{"type":"assistant","uuid":"u1","isSidechain":%s,"timestamp":"2026-03-01T09:00:00.5Z",` +
		`"message":{"id":"msg_1","role":"assistant","model":"%s","content":[{"type":"text","text":"a \"b\" c"}],` +
		`"usage":{"input_tokens":10,"cache_read_input_tokens":2000,"cache_creation_input_tokens":300,"output_tokens":7}}}`
	tests := []struct {
		name     string
		line     string
		ok, sure bool
	}{
		{"a response", fmt.Sprintf(resp, "false", "claude-sonnet-4-5"), true, true},
		{"a sidechain's", fmt.Sprintf(resp, "true", "claude-sonnet-4-5"), true, true},
		{"a synthetic one", fmt.Sprintf(resp, "false", SyntheticModel), false, true},
		{"an API error", `{"type":"assistant","isApiErrorMessage":true,"message":{"id":"m","model":"x","usage":{"input_tokens":1}}}`, false, true},
		{"no usage", `{"type":"assistant","message":{"id":"m","model":"x"}}`, false, true},
		{"no message", `{"type":"assistant","uuid":"u"}`, false, true},
		{"a user record", `{"type":"user","message":{"role":"user","content":"hi","usage":{"input_tokens":1}}}`, false, true},
		{"an escaped id and time", `{"type":"assistant","timestamp":"2026-03-01T09:00:00\u002e5Z","message":{"id":"m\u0031","model":"x","usage":{"input_tokens":5}}}`, true, true},
		{"a bad time", `{"type":"assistant","timestamp":"yesterday","message":{"id":"m","model":"x","usage":{"input_tokens":5}}}`, true, true},
		{"usage null", `{"type":"assistant","message":{"id":"m","model":"x","usage":null}}`, false, false},
		{"message null", `{"type":"assistant","message":null}`, false, false},
		{"a key twice", `{"type":"assistant","message":{"id":"m","model":"x","usage":{"input_tokens":5,"input_tokens":6}}}`, false, false},
		{"a case-folded key", `{"Type":"assistant","message":{"id":"m","model":"x","usage":{"input_tokens":5}}}`, false, false},
		{"a case-folded usage key", `{"type":"assistant","message":{"id":"m","model":"x","usage":{"Input_Tokens":5}}}`, false, false},
		{"an int as a float", `{"type":"assistant","message":{"id":"m","model":"x","usage":{"input_tokens":5.0}}}`, false, false},
		{"a bool as a string", `{"type":"assistant","isSidechain":"true","message":{"id":"m","model":"x","usage":{"input_tokens":5}}}`, false, false},
		{"a torn line", `{"type":"assistant","message":{"id":"m","model":"x","usage":{"input_tok`, false, false},
		{"a bad value skipped", `{"type":"assistant","content":[1,],"message":{"id":"m","model":"x","usage":{"input_tokens":5}}}`, false, false},
		{"trailing bytes", `{"type":"assistant","message":{"id":"m","model":"x","usage":{"input_tokens":5}}} x`, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s lineDecoder
			_, ok, sure := weighLine(&s.s, []byte(tt.line), "")
			assert.Equal(t, tt.sure, sure, "sure")
			assert.Equal(t, tt.ok, ok, "ok")
			assert.Equal(t, tt.sure, checkWeighLine(t, tt.name, []byte(tt.line)))
		})
	}
	t.Run("the previous id is shared", func(t *testing.T) {
		var ld lineDecoder
		prev := string([]byte("msg_1"))
		w, ok, sure := weighLine(&ld.s, fmt.Appendf(nil, resp, "false", "m"), prev)
		require.True(t, ok && sure)
		assert.Same(t, unsafe.StringData(prev), unsafe.StringData(w.id))
	})
}

// TestWeighLineCorpus checks weighLine on every assistant line of the corpus against a full
// decode.
func TestWeighLineCorpus(t *testing.T) {
	lines, sure := 0, 0
	for _, path := range corpusFiles(t) {
		f, err := os.Open(path)
		require.NoError(t, err)
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 64<<20)
		for n := 1; sc.Scan(); n++ {
			if line := sc.Bytes(); bytes.Contains(line, patAssistant) && bytes.Contains(line, patUsage) {
				lines++
				if checkWeighLine(t, fmt.Sprintf("%s:%d", path, n), line) {
					sure++
				}
			}
		}
		require.NoError(t, sc.Err())
		require.NoError(t, f.Close())
	}
	require.Positive(t, lines)
	assert.Greater(t, float64(sure), 0.99*float64(lines), "lines read without a full decode")
	t.Logf("%d assistant lines with usage, %d read without a full decode", lines, sure)
}
