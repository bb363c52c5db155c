package fsname

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestSafe(t *testing.T) {
	long := strings.Repeat("a", 129)
	tests := []struct {
		id     string
		hashed bool
	}{
		{"toolu_01AbC-9", false},
		{strings.Repeat("a", 128), false},
		{long, true},
		{"", true},
		{"../../etc/passwd", true},
		{"id-abc", true}, // would look like a hashed name
		{"a b", true},
		{"ü", true},
	}
	for _, tt := range tests {
		got := Safe(tt.id)
		if !tt.hashed {
			assert.Equal(t, tt.id, got)
			continue
		}
		assert.Equal(t, Hashed(tt.id), got, "%q", tt.id)
		assert.Regexp(t, `^id-[0-9a-f]{32}$`, got)
	}
	assert.NotEqual(t, Hashed("x"), Hashed("y"))
}

func TestSyncDirMissingIsQuiet(t *testing.T) {
	SyncDir(t.TempDir())
	SyncDir(t.TempDir() + "/missing") // best effort: no panic, no error to report
}
