package host_test

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentctx/agentctx/host"
	"github.com/agentctx/agentctx/transcript"
)

// TestStores: each store gives back the batches appended, in order; a session with none has
// none; a file torn by a crash loses only its torn line.
func TestStores(t *testing.T) {
	fs := host.FileStore{Root: t.TempDir()}
	for name, s := range map[string]host.DecisionStore{"file": fs, "memory": &host.MemoryStore{}} {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			none, err := s.Load(ctx, "s/../x")
			require.NoError(t, err)
			require.Empty(t, none)
			rec := func(u string) transcript.Record {
				return transcript.Record{Type: transcript.TypeSystem, Subtype: transcript.SubtypeSnip, UUID: u, SessionID: "s/../x"}
			}
			require.NoError(t, s.Append(ctx, "s/../x", rec("a"), rec("b")))
			require.NoError(t, s.Append(ctx, "s/../x"))
			require.NoError(t, s.Append(ctx, "s/../x", rec("c")))
			got, err := s.Load(ctx, "s/../x")
			require.NoError(t, err)
			var uuids []string
			for _, r := range got {
				uuids = append(uuids, r.UUID)
			}
			require.Equal(t, []string{"a", "b", "c"}, uuids)
		})
	}
	f, err := os.OpenFile(fs.Path("s/../x"), os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString(`{"type":"system","uuid":"d"`)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	got, err := fs.Load(t.Context(), "s/../x")
	require.NoError(t, err)
	require.Len(t, got, 3)
	require.ErrorContains(t, host.FileStore{}.Append(t.Context(), "x", transcript.Record{}), "Root is empty")
}
