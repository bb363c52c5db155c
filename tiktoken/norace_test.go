//go:build !race

package tiktoken_test

// raceEnabled reports that the tests run under the race detector, which makes the corpus tests
// walk a sample of the corpus.
const raceEnabled = false
