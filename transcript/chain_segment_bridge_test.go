package transcript

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPreservedSegmentBridged: a kept tail whose parent links break inside it — at a torn
// line, or at a parent the file does not hold — is relinked across the break as the chain's
// walk bridges it, and the break is reported; with NoBridge the segment is not applied, and
// SegmentProblem says why.
func TestPreservedSegmentBridged(t *testing.T) {
	msg := func(role Role, text string) *Message {
		return &Message{Role: role, Content: []Block{&Text{Text: text}}}
	}
	tests := []struct {
		name string
		// mid is the line between a2 and u3, and u3's parent.
		mid, parent string
		kind        ChainProblemKind
	}{
		{"torn line", `{"type":"assistant","uuid":"x","parentUuid":"a2","mess`, "x", ChainUnreadable},
		{"dangling parent", "", "gone", ChainDangling},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			recs := []Record{
				{Type: TypeUser, UUID: "u1", Message: msg(RoleUser, "first")},
				{Type: TypeAssistant, UUID: "a1", ParentUUID: "u1", Message: msg(RoleAssistant, "one")},
				{Type: TypeUser, UUID: "u2", ParentUUID: "a1", Message: msg(RoleUser, "second")},
				{Type: TypeAssistant, UUID: "a2", ParentUUID: "u2", Message: msg(RoleAssistant, "two")},
				{Type: TypeUser, UUID: "u3", ParentUUID: tt.parent, Message: msg(RoleUser, "third")},
				{Type: TypeAssistant, UUID: "a3", ParentUUID: "u3", Message: msg(RoleAssistant, "three")},
				{Type: TypeSystem, Subtype: SubtypeCompactBoundary, UUID: "b", LogicalParentUUID: "a3",
					CompactMetadata: &CompactMetadata{Trigger: TriggerAuto, PreservedSegment: &PreservedSegment{HeadUUID: "u2", AnchorUUID: "s", TailUUID: "a3"}}},
				{Type: TypeUser, UUID: "s", ParentUUID: "b", IsCompactSummary: true, Message: msg(RoleUser, "summary")},
				{Type: TypeUser, UUID: "u4", ParentUUID: "a3", Message: msg(RoleUser, "fourth")},
			}
			var lines []string
			for i, r := range recs {
				if i == 4 && tt.mid != "" {
					lines = append(lines, tt.mid)
				}
				b, err := r.MarshalLine()
				require.NoError(t, err)
				lines = append(lines, string(b))
			}
			f, err := Read(strings.NewReader(strings.Join(lines, "\n")+"\n"), "s.jsonl", ReadOptions{})
			require.NoError(t, err)

			c, err := BuildChain(f.Records, ChainOptions{})
			require.NoError(t, err)
			assert.Empty(t, c.SegmentProblem)
			require.NotNil(t, c.Preserved)
			var got []string
			for _, r := range c.Records {
				got = append(got, r.UUID)
			}
			assert.Equal(t, []string{"b", "s", "u2", "a2", "u3", "a3", "u4"}, got)
			require.Len(t, c.Problems, 1)
			assert.Equal(t, tt.kind, c.Problems[0].Kind)
			assert.Equal(t, "a2", c.Problems[0].Bridge)

			c, err = BuildChain(f.Records, ChainOptions{NoBridge: true})
			require.NoError(t, err)
			assert.Nil(t, c.Preserved)
			assert.Contains(t, c.SegmentProblem, "does not lead back to head u2")
		})
	}
}
