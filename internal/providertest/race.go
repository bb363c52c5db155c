//go:build race

package providertest

// raceEnabled makes [Corpus] walk a shorter corpus under the race detector, which runs
// Prepare many times slower.
const raceEnabled = true
