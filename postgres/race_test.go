//go:build race

package postgres_test

// raceEnabled makes the tests smaller under the race detector, which runs them many times
// slower: a sixteenth of the corpus, fewer appends by the concurrent writers.
const raceEnabled = true
