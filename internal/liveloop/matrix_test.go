package liveloop

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// matrixTurns is the turns of each cell: 1,000, or 150 with -short (50 under the race
// detector, which runs the loop about ten times slower).
func matrixTurns() int {
	switch {
	case raceEnabled:
		return 50
	case testing.Short():
		return 150
	}
	return 1000
}

// TestMatrix runs the whole matrix (every window, both summarizers, both adapters, and the
// newcomer's trial scenario), logs the table, and asserts, cell by cell, that every turn ran:
// 0 terminal errors, 0 invalid bodies, and compactions that free at least half of the context
// on median.
func TestMatrix(t *testing.T) {
	if raceEnabled && !testing.Short() {
		t.Skip("the full matrix is too slow under the race detector: run it with -short")
	}
	turns := matrixTurns()
	began := time.Now()
	rows := []string{TableHeader()}
	for _, sc := range Matrix(turns) {
		m, err := Run(t.Context(), sc)
		require.NoError(t, err, sc.label())
		rows = append(rows, m.Row())
		assert.Empty(t, m.Failures(), sc.label())
	}
	t.Logf("%d turns a cell, %s in all\n%s", turns, time.Since(began).Round(time.Second), strings.Join(rows, "\n"))
}
