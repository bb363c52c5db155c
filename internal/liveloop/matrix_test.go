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
// on median. The cells run in parallel (each has its own servers and clock); the table's
// memory column is then the process's heap, shared by the cells running at once.
func TestMatrix(t *testing.T) {
	if raceEnabled && !testing.Short() {
		t.Skip("the full matrix is too slow under the race detector: run it with -short")
	}
	turns := matrixTurns()
	began := time.Now()
	cells := Matrix(turns)
	rows := make([]string, len(cells))
	t.Run("cells", func(t *testing.T) {
		for i, sc := range cells {
			t.Run(sc.label(), func(t *testing.T) {
				t.Parallel()
				m, err := Run(t.Context(), sc)
				require.NoError(t, err)
				rows[i] = m.Row()
				assert.Empty(t, m.Failures())
			})
		}
	})
	t.Logf("%d turns a cell, %s in all\n%s\n%s", turns, time.Since(began).Round(time.Second), TableHeader(), strings.Join(rows, "\n"))
}
