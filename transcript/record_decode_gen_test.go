package transcript_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentctx/agentctx/internal/testkit"
	"github.com/agentctx/agentctx/transcript"
)

// TestRecordDecodeGenerated decodes generated sessions with both decoders: the single pass
// takes every line of them, and reads each as the reference decoder does.
func TestRecordDecodeGenerated(t *testing.T) {
	for _, turns := range []int{10, 300} {
		var buf bytes.Buffer
		for _, r := range testkit.Generate(turns, testkit.Options{Seed: uint64(turns)}) {
			line, err := r.MarshalJSON()
			require.NoError(t, err)
			buf.Write(line)
			buf.WriteByte('\n')
		}
		fast, ref := transcript.SameDecodeLines(t, fmt.Sprintf("generated %d turns", turns), buf.Bytes())
		require.Positive(t, fast)
		require.Zero(t, ref, "a generated session is clean: the single pass takes every line")
	}
}
