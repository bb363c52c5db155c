package transcript

import (
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
	h, err := CutHistory(records[:2], &records[3])
	require.NoError(t, err)
	withHistory := func(h *History) []Record {
		out := []Record{compaction[0], compaction[1]}
		out[0].History = h
		return out
	}
	for _, c := range []struct {
		name     string
		appended []Record
		from     int
		want     []string // nil: no tail
	}{
		{"kept tail", withHistory(h), 2, []string{"a1", "u2", "a2", "b", "s"}},
		{"no history", withHistory(nil), 2, nil},
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
