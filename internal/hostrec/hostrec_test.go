package hostrec

import (
	"encoding/json"
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
			r, err := Record(msg(role, s), Flags{}, "test")
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

	_, err := Record(&transcript.Message{Role: "system"}, Flags{}, "message 3")
	assert.ErrorContains(t, err, "message 3")
}

func TestJSON(t *testing.T) {
	tests := []struct {
		name string
		in   any
		want string
	}{
		{"html characters as themselves", map[string]string{"cmd": "a < b && c > d"}, `{"cmd":"a < b && c > d"}`},
		{"other escapes kept", map[string]string{"s": "tab\there \"q\" \u2028"}, `{"s":"tab\there \"q\" \u2028"}`},
		{"an escaped backslash before u003c", map[string]string{"s": `\u003c`}, `{"s":"\\u003c"}`},
		{"raw JSON", json.RawMessage(`{"a":"<x>"}`), `{"a":"<x>"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := JSON(tt.in)
			require.NoError(t, err)
			assert.Equal(t, tt.want, string(got))
		})
	}
}

func TestRecordAndChain(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	user := &transcript.Message{Role: transcript.RoleUser, Content: []transcript.Block{&transcript.Text{Text: "hi"}}}
	asst := &transcript.Message{Role: transcript.RoleAssistant, Content: []transcript.Block{&transcript.Text{Text: "hello"}}}
	u, err := Record(user, Flags{Time: at, Injected: true, SourceToolUseID: "toolu_1"}, "m0")
	require.NoError(t, err)
	a, err := Record(asst, Flags{CompactSummary: true}, "m1")
	require.NoError(t, err)
	assert.Equal(t, transcript.TypeUser, u.Type)
	assert.True(t, u.IsMeta)
	assert.Equal(t, "toolu_1", u.SourceToolUseID)
	assert.Equal(t, transcript.TypeAssistant, a.Type)
	assert.True(t, a.IsCompactSummary)
	_, err = Record(&transcript.Message{Role: "system"}, Flags{}, "messages[2]")
	require.ErrorContains(t, err, `messages[2]: role "system"`)

	chain := func(parent string) []transcript.Record {
		recs := []transcript.Record{u, a}
		require.NoError(t, Chain(recs, Options{SessionID: "s", Parent: parent, Time: at.Add(time.Hour), Cwd: "/w"}, func(i int) string { return "x" }))
		return recs
	}
	first, again, other := chain(""), chain(""), chain("p0")
	assert.Equal(t, first[0].UUID, again[0].UUID, "the same history gives the same uuids")
	assert.Equal(t, first[1].UUID, again[1].UUID)
	assert.NotEqual(t, first[0].UUID, other[0].UUID, "another parent gives another uuid")
	assert.Equal(t, first[0].UUID, first[1].ParentUUID)
	assert.Equal(t, "p0", other[0].ParentUUID)
	assert.Equal(t, transcript.Timestamp(at), first[0].Timestamp, "a record's own time wins")
	assert.Equal(t, transcript.Timestamp(at.Add(time.Hour)), first[1].Timestamp)
	assert.Equal(t, "/w", first[1].Cwd)
	assert.Equal(t, "s", first[1].SessionID)
}
