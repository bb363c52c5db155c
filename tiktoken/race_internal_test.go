//go:build race

package tiktoken

// underRace reports that the tests of package tiktoken run under the race detector (see
// raceEnabled, the same for package tiktoken_test).
const underRace = true
