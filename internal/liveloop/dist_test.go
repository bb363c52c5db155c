package liveloop

import (
	"bytes"
	"flag"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite dist_table.go from the shared corpus")

// TestCorpusDists recomputes the tool-result size table from the shared corpus and checks
// that the committed table (dist_table.go) is what it gives; -update rewrites the file.
func TestCorpusDists(t *testing.T) {
	dir := filepath.Join("..", "..", "..", "shared", "corpus", "claude-code")
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		t.Skipf("%s not found: the committed table is not checked against the corpus (a clone without shared/)", dir)
	}
	dists, err := MeasureCorpus(dir)
	require.NoError(t, err)
	var b bytes.Buffer
	require.NoError(t, WriteDistTable(&b, dists))
	if *update {
		require.NoError(t, os.WriteFile("dist_table.go", b.Bytes(), 0o644))
		t.Logf("updated dist_table.go")
		return
	}
	assert.Equal(t, dists, CorpusDists, "the committed table differs from the corpus: go test -run TestCorpusDists -update")
	got, err := os.ReadFile("dist_table.go")
	require.NoError(t, err)
	assert.Equal(t, b.String(), string(got), "dist_table.go is not what WriteDistTable writes: go test -run TestCorpusDists -update")
}

// The table is well formed whether or not the corpus is present: every measured tool, sizes
// non-decreasing, and samples within the table's range.
func TestDistTableShape(t *testing.T) {
	require.Len(t, CorpusDists, len(MeasuredTools))
	r := rand.New(rand.NewPCG(1, 2))
	for i, d := range CorpusDists {
		assert.Equal(t, MeasuredTools[i], d.Tool)
		assert.Positive(t, d.Calls, d.Tool)
		for j := 1; j < len(d.Sizes); j++ {
			assert.LessOrEqual(t, d.Sizes[j-1], d.Sizes[j], "%s: sizes at quantiles %d and %d", d.Tool, j-1, j)
		}
		for range 1000 {
			n := d.Sample(r)
			assert.GreaterOrEqual(t, n, min(1, d.Sizes[0]), d.Tool)
			assert.LessOrEqual(t, n, max(1, d.Sizes[len(d.Sizes)-1]), d.Tool)
		}
	}
}

func TestDistSampleMedian(t *testing.T) {
	d := Dist{Tool: "x", Calls: 1, Sizes: [len(Quantiles)]int{10, 100, 200, 1000, 2000, 5000, 8000, 20000, 40000}}
	r := rand.New(rand.NewPCG(3, 4))
	below := 0
	const n = 20000
	for range n {
		if d.Sample(r) < 1000 {
			below++
		}
	}
	assert.InDelta(t, 0.5, float64(below)/n, 0.02, "half the samples fall under the median")
}
