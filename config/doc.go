// Package config reads the settings of the retry logic the way the
// Microsoft JDBC driver's users write them — in the connection string and
// in an mssql-jdbc.properties file — and builds the core objects of one
// database handle from them.
//
// Settings are read, in this order of precedence: options in code (the
// With… functions) > DSN parameters > the properties file > the JDBC
// defaults. The properties file is looked at again at most every
// retryRefresh (30 s by default), lazily, when a statement starts; when its
// modification time changed, its rules are swapped in atomically. A file
// that no longer parses keeps the last good rules and emits a
// core.RulesReloaded event naming the line.
//
// Every Runtime has its own state: two database handles in one process
// never see each other's rules (the JDBC driver keeps one JVM-wide set).
//
// See docs/configuration.md for every key, its default and its range.
package config
