package jsonobj_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentctx/agentctx/internal/jsonobj"
)

// checkScan checks the Scanner against encoding/json on one text: it validates exactly what
// json.Valid accepts (nesting past MaxScanDepth aside, which it refuses), and what it reads
// as a string or an int is what json.Unmarshal decodes.
func checkScan(t *testing.T, data []byte) {
	t.Helper()
	var s jsonobj.Scanner
	s.Reset(data)
	_, ok := s.Raw()
	ok = ok && s.End()
	if valid := json.Valid(data); ok != valid {
		deep := strings.Count(string(data), "[")+strings.Count(string(data), "{") > jsonobj.MaxScanDepth
		require.True(t, valid && deep, "Raw: %v, json.Valid: %v on %q", ok, valid, data)
	}

	s.Reset(data)
	if str, ok := s.String(); ok && s.End() {
		var want string
		require.NoError(t, json.Unmarshal(data, &want), "%q", data)
		require.Equal(t, want, str, "%q", data)
	}
	s.Reset(data)
	if n, ok := s.Int(); ok && s.End() {
		var want int
		require.NoError(t, json.Unmarshal(data, &want), "%q", data)
		require.Equal(t, want, n, "%q", data)
	}
	s.Reset(data)
	if b, ok := s.Bool(); ok && s.End() {
		var want bool
		require.NoError(t, json.Unmarshal(data, &want), "%q", data)
		require.Equal(t, want, b, "%q", data)
	}
}

func TestScanner(t *testing.T) {
	for _, in := range []string{
		`""`, `"abc"`, `"a\"b\\c\/d\be\ff\ng\rh\ti"`, `"\u00e9\u20AC"`, `"\ud83d\ude00"`, `"\ud83d"`,
		`"\ud83dx"`, `"\ude00\ud83d"`, `"\ud83d\u0041"`, `"\ud83d\n"`, "\"a\xffb\"", "\"\xed\xa0\x80\"",
		"\"é€😀\"", `"\u"`, `"\u12"`, `"\x"`, "\"a\nb\"", `"abc`, `"ab\`,
		`0`, `-0`, `12`, `-12`, `1.5`, `1e3`, `1E+3`, `1e-3`, `01`, `-`, `1.`, `.5`, `1e`, `+1`,
		`9223372036854775807`, `9223372036854775808`, `-9223372036854775808`,
		`true`, `false`, `null`, `tru`, `nul`, `truex`,
		`{}`, `[]`, `{"a":1}`, `{"a":1,}`, `[1,]`, `[1 2]`, `{"a" 1}`, `{1:2}`, `[1}`, `{"a":[}`,
		` { "a" : [ 1 , { "b" : null } ] } `, `[[[[]]]]`, `[[[[]]]`, `{"a":{"b":{"c":[true,false,null,"x",-1.5e+2]}}}`,
		strings.Repeat("[", 500) + strings.Repeat("]", 500),
		strings.Repeat("[", 1500) + strings.Repeat("]", 1500),
	} {
		checkScan(t, []byte(in))
	}
}

func TestScannerObject(t *testing.T) {
	var s jsonobj.Scanner
	s.Reset([]byte(`{"a":1,"b\u0063":"x","d":[true]}`))
	var keys []string
	ok := s.Object(func(key []byte) bool {
		keys = append(keys, string(key))
		_, ok := s.Raw()
		return ok
	})
	require.True(t, ok)
	assert.True(t, s.End())
	assert.Equal(t, []string{"a", "bc", "d"}, keys)

	s.Reset([]byte(`{"type":"text","x":1}`))
	v, ok := s.Leading("type")
	assert.True(t, ok)
	assert.Equal(t, "text", string(v))
	assert.Zero(t, s.Pos(), "Leading consumes nothing")
	_, ok = s.Leading("x")
	assert.False(t, ok)

	s.Reset([]byte(`[1,2,3]`))
	var n []int
	require.True(t, s.Array(func() bool {
		v, ok := s.Int()
		n = append(n, v)
		return ok
	}))
	assert.Equal(t, []int{1, 2, 3}, n)
	assert.True(t, s.End())

	s.Reset([]byte(`null`))
	assert.True(t, s.Null())
	s.Reset([]byte(`"null"`))
	assert.False(t, s.Null())
	assert.Zero(t, s.Pos())
}

func FuzzScanner(f *testing.F) {
	for _, s := range []string{`"a\u00e9\ud83d\ude00"`, `{"a":[1,-2.5e3,true,null,{}]}`, `12`, "\"\xff\"", `[1,]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkScan(t, data)
	})
}
