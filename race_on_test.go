//go:build race

package crl

// raceEnabled: under the race detector the exhaustive tests run a
// sample (each case costs about 30 times as much).
const raceEnabled = true
