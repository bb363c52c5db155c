package postgres_test

import (
	"bytes"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentctx/agentctx/internal/storetest"
	"github.com/agentctx/agentctx/transcript"
)

// TestAppendRefusesCodex: an imported Codex rollout is exported byte for byte, never appended
// to, as OpenAppender refuses the file itself (transcript.ErrCodexAppend).
func TestAppendRefusesCodex(t *testing.T) {
	for _, fixture := range []string{"all-items.jsonl", "legacy.jsonl"} {
		t.Run(fixture, func(t *testing.T) {
			s, ctx := openStore(t), t.Context()
			data, err := os.ReadFile("../testdata/codex/" + fixture)
			require.NoError(t, err)
			f, err := os.Open("../testdata/codex/" + fixture)
			require.NoError(t, err)
			defer f.Close()
			session := "codex-" + t.Name()
			end, err := s.Import(ctx, session, f)
			require.NoError(t, err)
			_, err = s.Append(ctx, session, end, storetest.Record(session, "x", "hi"))
			require.ErrorIs(t, err, transcript.ErrCodexAppend)
			var out bytes.Buffer
			_, err = s.Export(ctx, &out, session)
			require.NoError(t, err)
			require.Equal(t, string(data), out.String(), "the rollout is unchanged")
		})
	}
}
