package transcript

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCutTail checks the records a read from a new boundary's cut holds, built from the
// records before the boundary and the compaction's: the history's records, the kept tail and
// the compaction's records, the same chain as the whole; and none when the tail would not
// stand for the whole.
func TestCutTail(t *testing.T) {
	var all []Record
	for _, line := range tailLines(t)[:6] { // u1 a1 u2 a2, the boundary b (kept head u2), s
		var r Record
		require.NoError(t, r.UnmarshalJSON([]byte(line)))
		all = append(all, r)
	}
	records, compaction := all[:4], all[4:]
	h, err := CutHistory(records, 2, &records[3])
	require.NoError(t, err)
	withHistory := func(h *History) []Record {
		out := []Record{compaction[0], compaction[1]}
		out[0].History = h
		return out
	}
	unsealed := *h
	unsealed.Sum = "0"
	u2, err := records[2].MarshalJSON()
	require.NoError(t, err)
	clash := &History{Version: HistoryVersion, Records: []json.RawMessage{u2}}
	require.NoError(t, clash.Seal())
	for _, c := range []struct {
		name     string
		appended []Record
		from     int
		want     []string // nil: no tail
	}{
		{"kept tail", withHistory(h), 2, []string{"a1", "u2", "a2", "b", "s"}},
		{"no history", withHistory(nil), 2, nil},
		{"a history that does not check", withHistory(&unsealed), 2, nil},
		{"a history carrying a record of the tail", withHistory(clash), 2, nil},
		{"not a boundary", withHistory(h)[1:], 2, nil},
		{"no compaction", nil, 2, nil},
		{"cut after the kept head", withHistory(h), 3, nil},
		{"cut out of range", withHistory(h), 5, nil},
	} {
		got, ok := CutTail(records, c.appended, c.from, "")
		if c.want == nil {
			assert.False(t, ok, c.name)
			assert.Nil(t, got, c.name)
			continue
		}
		require.True(t, ok, c.name)
		uuids := make([]string, len(got))
		for i := range got {
			uuids[i] = got[i].UUID
			assert.Equal(t, got[i].UUID == "b", got[i].Cut, "%s: only the boundary is marked as a read's cut", c.name)
		}
		assert.Equal(t, c.want, uuids, c.name)
		assert.Equal(t, chainUUIDs(t, append(records[:len(records):len(records)], c.appended...)), chainUUIDs(t, got), c.name)
	}
}

// TestCutStartMarkedBoundary checks that a read's history starts at the boundary the read
// stopped at, not at another boundary of the thread between the kept head and it (here one
// on a branch off u1, written after a2).
func TestCutStartMarkedBoundary(t *testing.T) {
	h := &History{Version: HistoryVersion, Compactions: 2, Runs: []int{1}}
	require.NoError(t, h.Seal())
	lines := withHistory(t, h)
	branch := `{"type":"system","subtype":"compact_boundary","uuid":"x","logicalParentUuid":"u1","compactMetadata":{"trigger":"manual"}}` + "\n"
	lines = slices.Insert(lines, 4, branch)
	tail, _ := readTailOf(t, strings.Join(lines, ""), ReadOptions{})
	require.NotNil(t, tail.Tail)
	require.True(t, tail.Tail.Digest, tail.Tail.DigestProblem)
	leaf := &tail.Records[len(tail.Records)-1]
	w, from := StartHistoryWalk(tail.Records, nil, leaf, HistoryResponses)
	assert.Equal(t, 2, w.Compactions, "the walk starts from the history of the boundary the read stopped at")
	assert.Equal(t, 0, from, "the history carries no records")
}
