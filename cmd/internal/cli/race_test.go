//go:build race

package cli

// raceEnabled reports that the tests run under the race detector, which makes the
// whole-corpus tests walk a sample.
const raceEnabled = true
