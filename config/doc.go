// Package config reads the settings of the retry logic the way the
// Microsoft JDBC driver's users write them — in the connection string and
// in an mssql-jdbc.properties file — and builds the core objects of one
// database handle from them.
//
// Settings are read, in this order of precedence: options in code (the
// With… functions) > DSN parameters > the properties file > the JDBC
// defaults. The properties file is looked at again at most every
// retryRefresh (30 s by default), lazily, when a statement starts; when its
// content changed and ends with a line end (or is found unchanged at the
// next look, so that a write in progress never applies a prefix), its
// rules are swapped in atomically. A file that no longer parses keeps the
// last good rules and emits a core.RulesReloaded event naming the line.
// A DSN key that is a near miss of a setting's name is an error, never
// passed on to the driver.
//
// Every Runtime has its own state: two database handles in one process
// never see each other's rules (the JDBC driver keeps one JVM-wide set).
//
// config also holds what the driver layer (package crl) and the helpers
// above it (crl's, sqlxcrl's, gormcrl's) share, so that none of them
// imports another's internals: the Unit a helper puts in the context it
// begins a transaction with and the layer records into, the no-retry
// mark behind crl.WithoutRetry, a transaction attempt's end (RunTx) and
// the whole-transaction loop around it (RunInTx), the slice a whole read
// puts back before a re-run (Rewind), what an adapter does with the
// options given for a pool crl did not open (ForeignPool: settings
// refused, an observer told once that nothing there is retried), and the
// faults crltest injects into a pool's Runtime.
//
// See docs/configuration.md for every key, its default and its range.
package config
