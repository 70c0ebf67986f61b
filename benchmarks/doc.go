// Package benchmarks compares crl's hot path with peers (failsafe-go,
// retry-go, backoff) and plain sqlx and GORM on an in-memory driver, and
// measures retry storms: a deterministic simulator (Storm, driven by the
// real core.Retrier on a virtual clock) and the same storm on a real
// MariaDB. It is its own module (replace ../) so that the peers, the plot
// library and the MySQL driver are not dependencies of crl. Run:
//
//	cd benchmarks && go test -run '^$' -bench . -benchmem
//
// docs/benchmarks.md records a run and how to read it; BenchmarkStorm
// -storm.plot=path draws its picture.
package benchmarks
