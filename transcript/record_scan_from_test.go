package transcript

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestScanEachFrom checks that EachFrom calls f on what Each calls it on from the position on,
// with an index of the records and without one.
func TestScanEachFrom(t *testing.T) {
	recs := scanMixed(60, 7)
	memo := &ChainCache{}
	ix := memo.index(recs)
	sc := ix.scan
	memo.keep(ix)
	require.True(t, sc.Covers(recs))
	kinds := ScanBudget | ScanMicrocompact | ScanPin
	var all []int
	sc.Each(recs, kinds, func(i int, _ *Record) { all = append(all, i) })
	require.NotEmpty(t, all)
	for _, from := range []int{-1, 0, 1, all[len(all)/2], all[len(all)/2] + 1, len(recs) - 1, len(recs)} {
		var want, got, none []int
		for _, i := range all {
			if i >= from {
				want = append(want, i)
			}
		}
		sc.EachFrom(recs, kinds, from, func(i int, _ *Record) { got = append(got, i) })
		assert.Equal(t, want, got, "from %d", from)
		var empty *Scan
		empty.EachFrom(recs, kinds, from, func(i int, _ *Record) { none = append(none, i) })
		assert.Len(t, none, len(recs)-max(from, 0), "from %d: without an index, every record from the position", from)
		if len(none) > 0 {
			assert.Equal(t, max(from, 0), none[0], "from %d", from)
		}
	}
}

// TestChainStart checks where a chain starts in the file: the kept head of the boundary's
// preserved segment, the boundary without one, 0 without a boundary.
func TestChainStart(t *testing.T) {
	lines := tailLines(t)
	for _, tt := range []struct {
		name  string
		lines []string
		want  int
	}{
		{"kept head", lines, 2},
		{"no boundary", lines[:4], 0},
		{"boundary without a kept tail", append(append([]string{}, lines[:4]...),
			strings.Replace(lines[4], `"preservedSegment"`, `"droppedSegment"`, 1), lines[5]), 4},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f, err := Read(strings.NewReader(strings.Join(tt.lines, "")), "s.jsonl", ReadOptions{})
			require.NoError(t, err)
			c, err := BuildChain(f.Records, ChainOptions{})
			require.NoError(t, err)
			assert.Equal(t, tt.want, c.Start())
		})
	}
}
