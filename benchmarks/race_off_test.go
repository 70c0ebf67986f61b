//go:build !race

package benchmarks

// raceEnabled: see race_on_test.go.
const raceEnabled = false
