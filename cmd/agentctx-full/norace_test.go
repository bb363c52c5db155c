//go:build !race

package main

// raceEnabled reports that the tests run under the race detector, which makes the
// whole-corpus tests walk a sample.
const raceEnabled = false
