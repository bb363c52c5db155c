package host_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentctx/agentctx/host"
	"github.com/agentctx/agentctx/transcript"
)

// failingStore is a DecisionStore whose Load fails.
type failingStore struct{ host.MemoryStore }

func (*failingStore) Load(context.Context, string) ([]transcript.Record, error) {
	return nil, errors.New("connection refused")
}

// TestReplayRefuses: bad messages and a store that cannot be read are errors naming what is
// wrong, never a guess.
func TestReplayRefuses(t *testing.T) {
	text := func(s string) *transcript.Message {
		return &transcript.Message{Role: transcript.RoleUser, Content: []transcript.Block{&transcript.Text{Text: s}}}
	}
	stray := &host.MemoryStore{}
	require.NoError(t, stray.Append(t.Context(), "c", transcript.Record{Type: transcript.TypeSystem, UUID: "u1"}))
	for _, tc := range []struct {
		name string
		conv host.Conversation
		msgs []host.Message
		want string
	}{
		{"no id", host.Conversation{Store: &host.MemoryStore{}}, nil, "Conversation.ID is empty"},
		{"no store", host.Conversation{ID: "c"}, nil, "Conversation.Store is nil"},
		{"message without id", host.Conversation{ID: "c", Store: &host.MemoryStore{}}, []host.Message{{Message: text("a")}}, `message 0 (id ""): no id`},
		{"message without message", host.Conversation{ID: "c", Store: &host.MemoryStore{}}, []host.Message{{ID: "m"}}, `message 0 (id "m"): no message`},
		{"id twice", host.Conversation{ID: "c", Store: &host.MemoryStore{}}, []host.Message{{ID: "m", Message: text("a")}, {ID: "m", Message: text("b")}}, `message 1: id "m" is used twice`},
		{"role", host.Conversation{ID: "c", Store: &host.MemoryStore{}}, []host.Message{{ID: "m", Message: &transcript.Message{Role: "tool"}}}, `role "tool" is neither user nor assistant`},
		{"store", host.Conversation{ID: "c", Store: &failingStore{}}, []host.Message{{ID: "m", Message: text("a")}}, `load the decisions of session "c": connection refused`},
		{"stray record", host.Conversation{ID: "c", Store: stray}, []host.Message{{ID: "m", Message: text("a")}}, `record 0 (uuid "u1") precedes the first agentctx_host_turn record`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.conv.Replay(t.Context(), tc.msgs)
			require.ErrorContains(t, err, tc.want)
		})
	}
}
