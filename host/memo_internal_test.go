package host

import (
	"slices"
	"testing"

	"github.com/agentctx/agentctx/transcript"
	"github.com/stretchr/testify/require"
)

// TestGrowExtends: the replay of messages that only grew is the previous one, extended; an
// edit, a deletion, an insertion, a reordering or a store that lost records builds a new one;
// both are the replay built without the previous one.
func TestGrowExtends(t *testing.T) {
	msg := func(id, s string) Message {
		return Message{ID: id, Message: &transcript.Message{Role: transcript.RoleUser, Content: []transcript.Block{&transcript.Text{Text: s}}}}
	}
	base := []Message{msg("a", "one"), msg("b", "two"), msg("c", "three")}
	mark := transcript.Record{Type: transcript.TypeSystem, Subtype: SubtypeTurn, Content: []byte(`{}`)}
	tests := []struct {
		name    string
		msgs    []Message
		stored  []transcript.Record
		extends bool
	}{
		{"the same", base, []transcript.Record{mark}, true},
		{"grown", append(slices.Clip(base), msg("d", "four")), []transcript.Record{mark, mark}, true},
		{"edited", []Message{base[0], msg("b", "two!"), base[2]}, []transcript.Record{mark}, false},
		{"deleted", []Message{base[0], base[2]}, []transcript.Record{mark}, false},
		{"inserted", []Message{base[0], msg("x", "aside"), base[1], base[2]}, []transcript.Record{mark}, false},
		{"reordered", []Message{base[1], base[0], base[2]}, []transcript.Record{mark}, false},
		{"the store lost records", base, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prev, err := build("s", "", base, []transcript.Record{mark}, nil)
			require.NoError(t, err)
			records := prev.records
			rp, err := build("s", "", tt.msgs, tt.stored, prev)
			require.NoError(t, err)
			fresh, err := build("s", "", tt.msgs, tt.stored, nil)
			require.NoError(t, err)
			require.Equal(t, fresh.records, rp.records)
			require.Equal(t, fresh.leaf, rp.leaf)
			require.Equal(t, tt.extends, rp == prev)
			if tt.extends {
				require.Same(t, &records[0], &rp.records[0], "the records slice is extended in place")
			} else {
				require.NotSame(t, &records[0], &rp.records[0])
			}
		})
	}
}
