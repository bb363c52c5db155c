// Package b64 reads what standard base64 text decodes to without decoding it.
package b64

// DecodedLen is the length of the bytes that the standard (padded) base64 text s decodes to,
// read from its length and padding.
func DecodedLen[T ~string | ~[]byte](s T) int {
	n := len(s) / 4 * 3
	for i := len(s) - 1; i >= max(0, len(s)-2); i-- {
		if s[i] == '=' {
			n--
		}
	}
	return n
}
