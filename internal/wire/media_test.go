package wire

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestImageType sniffs each format the provider takes from the first bytes of base64 data (the
// headers are all the sniffing reads), and reads the head of long data chunk by chunk, refusing
// padding anywhere but at the end.
func TestImageType(t *testing.T) {
	enc := base64.StdEncoding.EncodeToString
	for _, tt := range []struct{ name, data, want string }{
		{"png", enc([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")), "image/png"},
		{"jpeg", enc([]byte("\xff\xd8\xff\xe0\x00\x10JFIF\x00")), "image/jpeg"},
		{"gif87", enc([]byte("GIF87a\x04\x00\x03\x00")), "image/gif"},
		{"gif89", enc([]byte("GIF89a\x04\x00\x03\x00")), "image/gif"},
		{"webp", enc([]byte("RIFF\x24\x00\x00\x00WEBPVP8 \x18\x00\x00\x00")), "image/webp"},
		{"bmp", enc([]byte("BM\x46\x00\x00\x00\x00\x00\x00\x00\x36\x00\x00\x00")), ""},
		{"riff, not webp", enc([]byte("RIFF\x24\x00\x00\x00WAVEfmt ")), ""},
	} {
		head, ok := Base64Head(tt.data)
		require.True(t, ok, tt.name)
		assert.Equal(t, tt.want, ImageType(head), tt.name)
	}
	long := strings.Repeat("QUJD", 5000) // "ABC" × 5000, over several chunks
	head, ok := Base64Head(long)
	assert.True(t, ok)
	assert.Equal(t, "ABCABCABCABC", string(head))
	_, ok = Base64Head(long[:4096] + "QQ==" + long[4096:])
	assert.False(t, ok, "padding at a chunk boundary, then more data")
	_, ok = Base64Head(long + "QQ==")
	assert.True(t, ok)
	_, ok = Base64Head(long + "QQ=")
	assert.False(t, ok)
	lines := long[:76] + "\r\n" + long[76:]
	head, ok = Base64Head(lines)
	assert.True(t, ok, "line breaks are read through")
	assert.Equal(t, "ABCABCABCABC", string(head))
}
