package transcript

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRevLines checks the reverse line scan against a forward split of the same bytes, with
// chunks smaller and larger than the lines, and lines over the cap.
func TestRevLines(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	type line struct {
		off     int64
		text    string
		tooLong bool
	}
	for iter := range 300 {
		var b strings.Builder
		for range r.IntN(30) {
			n := r.IntN(40)
			if r.IntN(10) == 0 {
				n = 0
			}
			b.WriteString(strings.Repeat(string(rune('a'+r.IntN(26))), n))
			if r.IntN(8) != 0 || b.Len() == 0 {
				b.WriteByte('\n')
			} else {
				b.WriteString("\r\n")
			}
		}
		data := b.String()
		if r.IntN(3) == 0 {
			data += "tail"
		}
		base := int64(0)
		if len(data) > 0 && r.IntN(2) == 0 {
			base = int64(strings.IndexByte(data, '\n') + 1)
		}
		maxLine, chunk := 1+r.IntN(50), 1+r.IntN(20)
		var want []line
		off := base
		for _, l := range strings.SplitAfter(data[base:], "\n") {
			if l == "" {
				continue
			}
			text := strings.TrimSuffix(l, "\n")
			if len(strings.TrimSuffix(text, "\r")) > maxLine {
				want = append([]line{{off, "", true}}, want...)
			} else {
				want = append([]line{{off, text, false}}, want...)
			}
			off += int64(len(l))
		}
		s := newRevLinesChunk(bytes.NewReader([]byte(data)), base, int64(len(data)), maxLine, chunk)
		var got []line
		for {
			o, l, long, ok := s.prev()
			if !ok {
				break
			}
			got = append(got, line{o, string(l), long})
		}
		require.NoError(t, s.err)
		require.Equal(t, want, got, "iter %d: max %d chunk %d base %d %q", iter, maxLine, chunk, base, data)
	}
}
