package liveloop

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A run is a function of its scenario: the same seed gives the same turns, requests,
// compactions and errors.
func TestRunDeterministic(t *testing.T) {
	sc := corpusScenario(AdapterAnthropic, 32_000, SummarizerModel, 80)
	a, err := Run(t.Context(), sc)
	require.NoError(t, err)
	b, err := Run(t.Context(), sc)
	require.NoError(t, err)
	for _, m := range []*Metrics{a, b} {
		m.Prepare, m.Wall, m.PeakHeap = nil, 0, 0
	}
	assert.Equal(t, a, b)
	assert.Positive(t, a.Compactions, "a 32k window compacts within 80 turns")
}

// The session can be written to a file through an Appender, with a FileStore for the
// replaced results; the run is the same as in memory.
func TestRunPersist(t *testing.T) {
	sc := corpusScenario(AdapterAnthropic, 32_000, SummarizerExtractive, 60)
	mem, err := Run(t.Context(), sc)
	require.NoError(t, err)
	sc.Persist = true
	file, err := Run(t.Context(), sc)
	require.NoError(t, err)
	assert.Equal(t, mem.Turns, file.Turns)
	assert.Equal(t, mem.Compactions, file.Compactions)
	assert.Equal(t, mem.Terminal, file.Terminal)
	assert.Equal(t, mem.Requests, file.Requests)
}

// The scripted events happen: an answer cut at max_tokens (re-sent with the raised cap,
// streaming), the screenshots, the 300 KB
// outputs, the tools in the corpus's proportions.
func TestRunEvents(t *testing.T) {
	sc := corpusScenario(AdapterAnthropic, 200_000, SummarizerExtractive, 50)
	sc.Screenshots, sc.BigRate = 3, 0.1
	m, err := Run(t.Context(), sc)
	require.NoError(t, err)
	assert.Equal(t, 1, m.Truncations)
	assert.Equal(t, 1, m.TruncationsRecovered)
	assert.GreaterOrEqual(t, m.Calls[ImageTool], 3)
	assert.Positive(t, m.BigOutputs)
	assert.Greater(t, m.Calls["Bash"], m.Calls["Glob"])
	assert.Greater(t, m.Calls["Read"], m.Calls["Grep"])

}
