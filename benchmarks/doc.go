// Package benchmarks compares crl's hot path with peers and measures retry
// amplification. It is its own module (replace ../) so that the peers are
// not dependencies of crl. Run:
//
//	cd benchmarks && go test -run '^$' -bench . -benchmem
//
// docs/benchmarks.md records a run and how to read it.
package benchmarks
