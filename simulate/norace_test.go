//go:build !race

package simulate_test

// raceEnabled reports that the tests run under the race detector, which makes the longest
// tests run shorter versions of themselves.
const raceEnabled = false
