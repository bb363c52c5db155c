//go:build race

package liveloop

// raceEnabled: the race detector runs the loop many times slower.
const raceEnabled = true
