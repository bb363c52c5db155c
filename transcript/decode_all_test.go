package transcript

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDecodeAll decodes transcripts of several lengths around the chunks' sizes, into chunks
// and into room made for them (as a tail read makes it, a record a line; short: less than
// that), with a blank line among them: the records, their lines and the array they land in.
func TestDecodeAll(t *testing.T) {
	for _, n := range []int{0, 1, recordChunk - 1, recordChunk, recordChunk + 1, 3*recordChunk + 5} {
		k := newTK()
		for i := range n {
			k.user(fmt.Sprintf("q%d", i))
		}
		text := k.jsonl(t)
		if n > 1 {
			text = strings.Replace(text, "\n", "\n\n", 1) // line 2 is blank
		}
		lines := strings.Count(text, "\n")
		for _, room := range []string{"none", "exact", "short"} {
			t.Run(fmt.Sprintf("%d records, room %s", n, room), func(t *testing.T) {
				var dst []Record
				switch room {
				case "exact":
					dst = make([]Record, 2, 2+lines)[2:]
				case "short":
					dst = make([]Record, 0, n/2)
				}
				f := &File{}
				require.NoError(t, decodeAll(NewDecoder(strings.NewReader(text), "s.jsonl", ReadOptions{}), f, dst))
				require.Len(t, f.Records, n)
				require.NotNil(t, f.Records)
				for i := range f.Records {
					require.Equal(t, k.recs[i].UUID, f.Records[i].UUID)
				}
				if n == 0 {
					assert.Nil(t, f.Lines)
					return
				}
				require.Len(t, f.Lines, n)
				assert.Equal(t, 1, f.Lines[0])
				assert.Equal(t, lines, f.Lines[n-1], "the last record's line")
				if n > 1 {
					assert.Equal(t, 3, f.Lines[1], "after the blank line")
				}
				switch {
				case room == "exact":
					assert.Same(t, &dst[:1][0], &f.Records[0], "the records are decoded into the room")
				case cap(dst) > 0:
					assert.NotSame(t, &dst[:1][0], &f.Records[0], "records past the room are copied into one slice")
				}
			})
		}
	}
}
