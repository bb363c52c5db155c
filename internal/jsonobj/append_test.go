package jsonobj

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// QuotedLen is the length AppendString writes, on every kind of escape.
func TestQuotedLen(t *testing.T) {
	for _, s := range []string{
		"", "plain", "\"", "\\", "\b\f\n\r\t", "\x00\x01\x1f\x7f", "<>&", "é", "日本語",
		"\u2028\u2029", "\xff", "\xe2\x80", "a\xe2\x80\xa8b\xe2\x80\xa9", "\xf0\x9f\x98\x80", "\xed\xa0\x80",
		strings.Repeat("\x00\"\\\u2028\xfe\t", 50),
	} {
		assert.Equal(t, len(AppendString(nil, s)), QuotedLen(s), "%q", s)
	}
}

// FuzzQuotedLen holds QuotedLen to AppendString on any bytes.
func FuzzQuotedLen(f *testing.F) {
	for _, s := range []string{"", "a\"b", "\u2028\xff\x00", "日本"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := QuotedLen(s), len(AppendString(nil, s)); got != want {
			t.Fatalf("QuotedLen(%q) = %d, AppendString writes %d bytes", s, got, want)
		}
	})
}

// AppendString writes what encoding/json writes with HTML escaping off.
func TestAppendStringMatchesEncodingJSON(t *testing.T) {
	for _, s := range []string{"", "plain", "\"\\", "\b\f\n\r\t\x00\x1f\x7f", "<>&", "é日本", "\u2028\u2029", "\xff\xe2\x80"} {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		require.NoError(t, enc.Encode(s))
		assert.Equal(t, strings.TrimSuffix(buf.String(), "\n"), string(AppendString([]byte("x"), s))[1:], "%q", s)
	}
}
