//go:build race

package benchmarks

// raceEnabled: the race detector changes allocation counts (sync.Pool
// drops objects at random under it), so counting tests skip.
const raceEnabled = true
