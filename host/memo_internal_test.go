package host

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentctx/agentctx/transcript"
	"github.com/stretchr/testify/require"
)

// TestGrowExtends: the replay of messages that only grew is the previous one, extended, also
// when the host rebuilt its messages with the same content (new structs, new strings); an
// edit (in place, under the same id), a changed block, tool result or time, a deletion, an
// insertion, a reordering or a store that lost records builds a new one, reusing the records
// of unchanged messages; both are the replay built without the previous one.
func TestGrowExtends(t *testing.T) {
	at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	msg := func(id string, blocks ...transcript.Block) Message {
		return Message{ID: strings.Clone(id), Time: at, Message: &transcript.Message{Role: transcript.RoleUser, Content: blocks}}
	}
	text := func(s string) transcript.Block { return &transcript.Text{Text: strings.Clone(s)} }
	// messages returns the conversation anew each time, as a host reading its rows would.
	messages := func() []Message {
		return []Message{
			msg("a", text("one")),
			msg("b", text("two"), text("and two")),
			msg("c", transcript.TextResult(strings.Clone("toolu_1"), strings.Clone("output"))),
		}
	}
	base := messages()
	later := func(m Message) Message {
		m.Time = m.Time.Add(time.Second)
		return m
	}
	mark := transcript.Record{Type: transcript.TypeSystem, Subtype: SubtypeTurn, Content: []byte(`{}`)}
	tests := []struct {
		name    string
		msgs    []Message
		stored  []transcript.Record
		extends bool
	}{
		{"the same", base, []transcript.Record{mark}, true},
		{"grown", append(slices.Clip(base), msg("d", text("four"))), []transcript.Record{mark, mark}, true},
		{"rebuilt", messages(), []transcript.Record{mark}, true},
		{"rebuilt and grown", append(messages(), msg("d", text("four"))), []transcript.Record{mark, mark}, true},
		{"rebuilt, the time in another zone", []Message{base[0], base[1], {ID: "c", Time: at.In(time.FixedZone("X", 3600)), Message: base[2].Message}}, []transcript.Record{mark}, true},
		{"edited", []Message{base[0], msg("b", text("two!")), base[2]}, []transcript.Record{mark}, false},
		{"rebuilt, edited in place under its id", []Message{base[0], msg("b", text("two"), text("and three")), base[2]}, []transcript.Record{mark}, false},
		{"rebuilt, one block of two changed", []Message{base[0], msg("b", text("two!"), text("and two")), base[2]}, []transcript.Record{mark}, false},
		{"rebuilt, a tool result changed", []Message{base[0], base[1], msg("c", transcript.TextResult("toolu_1", "output!"))}, []transcript.Record{mark}, false},
		{"rebuilt, a tool result's error flag changed", []Message{base[0], base[1], msg("c", transcript.ErrorResult("toolu_1", "output"))}, []transcript.Record{mark}, false},
		{"rebuilt, a time changed", []Message{base[0], later(messages()[1]), base[2]}, []transcript.Record{mark}, false},
		{"rebuilt, injected", []Message{base[0], {ID: "b", Time: at, Injected: true, Message: messages()[1].Message}, base[2]}, []transcript.Record{mark}, false},
		{"deleted", []Message{base[0], base[2]}, []transcript.Record{mark}, false},
		{"inserted", []Message{base[0], msg("x", text("aside")), base[1], base[2]}, []transcript.Record{mark}, false},
		{"reordered", []Message{base[1], base[0], base[2]}, []transcript.Record{mark}, false},
		{"the store lost records", base, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prev, err := build("s", "", base, []transcript.Record{mark}, nil)
			require.NoError(t, err)
			records := slices.Clone(prev.records)
			rp, err := build("s", "", tt.msgs, tt.stored, prev)
			require.NoError(t, err)
			fresh, err := build("s", "", tt.msgs, tt.stored, nil)
			require.NoError(t, err)
			require.Equal(t, fresh.records, rp.records)
			require.Equal(t, fresh.leaf, rp.leaf)
			require.Equal(t, tt.extends, rp == prev)
			if tt.extends {
				require.Same(t, &prev.records[0], &rp.records[0], "the records slice is extended in place")
			}
			// A message with the same id, content and time keeps its record, message and all.
			for _, r := range rp.records {
				if i := slices.IndexFunc(records, func(o transcript.Record) bool { return o.UUID == r.UUID && o.Timestamp == r.Timestamp }); i >= 0 {
					require.Same(t, records[i].Message, r.Message, "record %s", r.UUID)
				}
			}
		})
	}
}
