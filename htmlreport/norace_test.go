//go:build !race

package htmlreport

// raceEnabled reports that the tests run under the race detector, which makes the longest
// tests skip.
const raceEnabled = false
