package wire

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestValidJSONText(t *testing.T) {
	tests := []struct {
		in, want string
		n        int
	}{
		{`{"a":"b"}`, `{"a":"b"}`, 0},
		{"{\"a\":\"\xff\"}", "{\"a\":\"\ufffd\"}", 1},
		{"{\"a\":\"\xe2\x82\"}", "{\"a\":\"\ufffd\ufffd\"}", 2},           // a truncated sequence: one U+FFFD per byte
		{"{\"a\":\"\xed\xa0\x80\"}", "{\"a\":\"\ufffd\ufffd\ufffd\"}", 3}, // a surrogate encoded as UTF-8
		{`{"a":"\ud83d\ude00"}`, `{"a":"\ud83d\ude00"}`, 0},
		{`{"a":"\uD83D\uDE00"}`, `{"a":"\uD83D\uDE00"}`, 0},
		{`{"a":"\ud83d"}`, `{"a":"\ufffd"}`, 1},
		{`{"a":"\ud83dx"}`, `{"a":"\ufffdx"}`, 1},
		{`{"a":"\ude00\ud83d"}`, `{"a":"\ufffd\ufffd"}`, 2},
		{`{"a":"\ud83d\u0041"}`, `{"a":"\ufffd\u0041"}`, 1},
		{`{"a":"\ud83d\ud83d\ude00"}`, `{"a":"\ufffd\ud83d\ude00"}`, 1},
		{`{"a":"\\ud83d"}`, `{"a":"\\ud83d"}`, 0},
		{`{"a":"\\\ud83d"}`, `{"a":"\\\ufffd"}`, 1},
		{`{"a":"\"\ud83d"}`, `{"a":"\"\ufffd"}`, 1},
		{`{"a":"\u00e9"}`, `{"a":"\u00e9"}`, 0},
		{"{\"é\":\"ok \ufffd\"}", "{\"é\":\"ok \ufffd\"}", 0},
	}
	for _, tt := range tests {
		got, n := ValidJSONText(json.RawMessage(tt.in))
		assert.Equal(t, tt.want, string(got), "%q", tt.in)
		assert.Equal(t, tt.n, n, "%q", tt.in)
	}
	raw := json.RawMessage(`{"a":"b"}`)
	got, _ := ValidJSONText(raw)
	assert.Same(t, &raw[0], &got[0], "valid text is returned as it is")
}

// TestValidJSONTextKeepsJSON repairs random JSON objects whose strings hold random bytes and
// escapes, and requires valid JSON that is valid UTF-8 without lone surrogates, and that
// decodes to what the Go decoder reads from the original (which replaces the same things by
// U+FFFD).
func TestValidJSONTextKeepsJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	pieces := []string{"a", "é", "\xff", "\xc3", "\xe2\x82", "\xed\xa0\x80", `\ud83d`, `\ude00`, `\ud83d\ude00`, `\\`, `\"`, `\n`, `\u0041`, `\u00e9`, "😀", " "}
	for range 2000 {
		var b strings.Builder
		b.WriteByte('{')
		for i := range 1 + rng.IntN(3) {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, `"k%d": "`, i)
			for range rng.IntN(8) {
				b.WriteString(pieces[rng.IntN(len(pieces))])
			}
			b.WriteString(`"`)
		}
		b.WriteByte('}')
		in := json.RawMessage(b.String())
		require.True(t, json.Valid(in), "%q", in)
		got, _ := ValidJSONText(in)
		require.True(t, json.Valid(got), "%q → %q", in, got)
		require.True(t, utf8.Valid(got), "%q → %q", in, got)
		require.False(t, HasLoneSurrogate(got), "%q → %q", in, got)
		var want, have map[string]string
		require.NoError(t, json.Unmarshal(in, &want))
		require.NoError(t, json.Unmarshal(got, &have))
		require.Equal(t, want, have, "%q → %q", in, got)
	}
}
