package hostrec

import (
	"testing"
	"time"

	"github.com/agentctx/agentctx/transcript"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func msg(role transcript.Role, text string) *transcript.Message {
	return &transcript.Message{Role: role, Content: []transcript.Block{&transcript.Text{Text: text}}}
}

// TestFromID: the uuid follows the session, the host's id, the role, the content and the
// injected flag, and nothing else (not the usage a host learns later).
func TestFromID(t *testing.T) {
	base := FromID("s", "row-1", msg(transcript.RoleUser, "hi"), false)
	assert.Equal(t, base, FromID("s", "row-1", msg(transcript.RoleUser, "hi"), false), "deterministic")
	withUsage := msg(transcript.RoleUser, "hi")
	withUsage.Usage = &transcript.Usage{InputTokens: 5}
	assert.Equal(t, base, FromID("s", "row-1", withUsage, false), "usage is left out")
	for name, other := range map[string]string{
		"another session":             FromID("t", "row-1", msg(transcript.RoleUser, "hi"), false),
		"another id":                  FromID("s", "row-2", msg(transcript.RoleUser, "hi"), false),
		"another role":                FromID("s", "row-1", msg(transcript.RoleAssistant, "hi"), false),
		"edited":                      FromID("s", "row-1", msg(transcript.RoleUser, "hi!"), false),
		"injected":                    FromID("s", "row-1", msg(transcript.RoleUser, "hi"), true),
		"id and session run together": FromID("s1", "ow-1", msg(transcript.RoleUser, "hi"), false),
	} {
		assert.NotEqual(t, base, other, name)
	}
}

// TestChain: a history that grows keeps its prefix's uuids; a message changed in place
// changes its uuid and those after it; a role neither user nor assistant is refused.
func TestChain(t *testing.T) {
	records := func(texts ...string) []transcript.Record {
		var out []transcript.Record
		for i, s := range texts {
			role := transcript.RoleUser
			if i%2 == 1 {
				role = transcript.RoleAssistant
			}
			r, err := Record(msg(role, s), time.Time{}, false, false, "test")
			require.NoError(t, err)
			out = append(out, r)
		}
		return out
	}
	where := func(i int) string { return "record" }
	opts := Options{SessionID: "s", Time: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)}
	a := records("q1", "a1")
	require.NoError(t, Chain(a, opts, where))
	b := records("q1", "a1", "q2")
	require.NoError(t, Chain(b, opts, where))
	assert.Equal(t, a[0].UUID, b[0].UUID)
	assert.Equal(t, a[1].UUID, b[1].UUID)
	assert.Equal(t, b[1].UUID, b[2].ParentUUID)
	c := records("q1", "a1 edited", "q2")
	require.NoError(t, Chain(c, opts, where))
	assert.Equal(t, b[0].UUID, c[0].UUID)
	assert.NotEqual(t, b[1].UUID, c[1].UUID)
	assert.NotEqual(t, b[2].UUID, c[2].UUID)

	_, err := Record(&transcript.Message{Role: "system"}, time.Time{}, false, false, "message 3")
	assert.ErrorContains(t, err, "message 3")
}
