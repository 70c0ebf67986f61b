//go:build race

package connector

// raceEnabled: under the race detector the exhaustive tests run a
// sample (each case costs about 30 times as much).
const raceEnabled = true
