// Package benchmarks compares crl's hot path with peers (failsafe-go,
// retry-go, backoff) and plain sqlx and GORM on an in-memory driver, and
// a statement through crl's driver layer (crl.OpenDB) with database/sql
// alone and with otelsql's wrapper on the same in-memory connector, and
// measures retry storms and contention: deterministic simulators (Storm, a
// capacity drop, and Contention, deadlock victims on a healthy database,
// both driven by the real core.Retrier on a virtual clock) and the storm
// on a real MariaDB (BenchmarkStormMariaDB; CRL_STORM_FULL=1 for the
// post-mortem's whole table). It is its own module (replace ../) so that
// the peers, the plot library and the MySQL driver are not dependencies of
// crl. Run:
//
//	cd benchmarks && go test -run '^$' -bench . -benchmem
//
// docs/benchmarks.md records a run and how to read it; BenchmarkStorm
// -storm.plot=path and BenchmarkStormMariaDB -storm.mariadb.plot=prefix
// draw its pictures.
package benchmarks
