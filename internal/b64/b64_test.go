package b64

import (
	"encoding/base64"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestDecodedLen(t *testing.T) {
	for n := range 40 {
		data := make([]byte, n)
		enc := base64.StdEncoding.EncodeToString(data)
		assert.Equal(t, n, DecodedLen(enc), "%d bytes as a string", n)
		assert.Equal(t, n, DecodedLen([]byte(enc)), "%d bytes as bytes", n)
	}
}
