//go:build race

package postgres_test

// raceEnabled makes the corpus test walk a fixed quarter of the sessions under the race
// detector, which runs Prepare many times slower.
const raceEnabled = true
