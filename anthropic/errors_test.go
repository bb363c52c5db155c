package anthropic

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestBlockPath(t *testing.T) {
	tests := []struct{ msg, want string }{
		{"messages.58.content.2.image.source.base64: image exceeds 5 MB maximum: 6500712 bytes > 5242880 bytes", "messages.58.content.2"},
		{"messages.168.content.0.tool_result.content.1.image.source.base64: image exceeds 5 MB maximum", "messages.168.content.0.content.1"},
		{"messages.3.content.0.document.source.base64.data: The PDF specified was not valid.", "messages.3.content.0"},
		{"At least one of the image dimensions exceed max allowed size for many-image requests: 2000 pixels", ""},
		{"system.0: text blocks must be non-empty", ""},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, blockPath(tt.msg), tt.msg)
	}
}
