package transcript

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTagsStableAndUnique: appending uuids never changes an earlier tag, every tag is a prefix
// of its own uuid of at least 8 digits, and no two uuids share a tag — on uuids that share long
// prefixes in every order.
func TestTagsStableAndUnique(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 50 {
		var uuids []string
		for range 40 {
			// Few distinct digits, so prefixes collide often.
			var b strings.Builder
			for range 32 {
				b.WriteByte("ab"[rng.IntN(2)])
			}
			h := b.String()
			uuids = append(uuids, fmt.Sprintf("%s-%s-%s-%s-%s", h[:8], h[8:12], h[12:16], h[16:20], h[20:]))
		}
		uuids = append(uuids, uuids[3]) // a repeated uuid keeps its tag
		all := Tags(uuids)
		byTag := map[string]string{}
		for _, u := range uuids {
			tag := all[u]
			c := compactUUID(u)
			require.GreaterOrEqual(t, len(tag), minTagLen)
			require.True(t, strings.HasPrefix(c, tag), "round %d: %s is a prefix of %s", round, tag, c)
			if other, ok := byTag[tag]; ok {
				require.Equal(t, other, c, "round %d: tag %s names two uuids", round, tag)
			}
			byTag[tag] = c
		}
		for n := 1; n < len(uuids); n++ {
			part := Tags(uuids[:n])
			for _, u := range uuids[:n] {
				require.Equal(t, part[u], all[u], "round %d: the tag of %s changed when uuids were appended after it", round, u)
			}
		}
	}
}

// TestResolveTagOfEarlierRecord: the earlier of two records that share a prefix keeps the short
// tag, which resolves to it although it is a prefix of the later record's uuid too.
func TestResolveTagOfEarlierRecord(t *testing.T) {
	a := Record{Type: TypeUser, UUID: "abcdef01-2345-4000-8000-000000000001", Message: &Message{Role: RoleUser, Content: []Block{&Text{Text: "a"}}}}
	b := Record{Type: TypeUser, UUID: "abcdef01-2345-4111-8000-000000000003", ParentUUID: a.UUID, Message: &Message{Role: RoleUser, Content: []Block{&Text{Text: "b"}}}}
	recs := []Record{a, b}
	tags := Tags([]string{a.UUID, b.UUID})
	assert.Equal(t, "abcdef01", tags[a.UUID])
	assert.Equal(t, "abcdef01234541", tags[b.UUID])
	for _, r := range recs {
		got, err := ResolveTag(recs, "[id:"+tags[r.UUID]+"]")
		require.NoError(t, err)
		assert.Equal(t, r.UUID, got)
	}
}
