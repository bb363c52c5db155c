// Package fsname turns untrusted ids into file names and makes files created in a directory
// durable: what the transcript store and the tool-result store share.
package fsname

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
)

// Safe maps an untrusted tool_use_id to a name made only of [A-Za-z0-9_-]: the id itself
// when it is 1 to 128 such characters and does not start with "id-", else "id-" followed by
// the first 32 hex digits of its SHA-256. The "id-" exclusion keeps a hashed name from ever
// equalling a verbatim one.
func Safe(id string) string {
	if isPlainID(id) && !(len(id) >= 3 && id[:3] == "id-") {
		return id
	}
	return Hashed(id)
}

// Hashed returns "id-" followed by the first 32 hex digits of id's SHA-256: a name made
// only of [a-z0-9-] that no verbatim name from Safe equals.
func Hashed(id string) string {
	sum := sha256.Sum256([]byte(id))
	return "id-" + hex.EncodeToString(sum[:16])
}

// isPlainID reports whether id matches ^[A-Za-z0-9_-]{1,128}$.
func isPlainID(id string) bool {
	if len(id) == 0 || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// SyncDir fsyncs a directory so that a file created in it is durable. Best effort: not every
// platform can sync a directory.
func SyncDir(dir string) {
	d, err := os.Open(dir)
	if err != nil {
		return
	}
	_ = d.Sync()
	_ = d.Close()
}
