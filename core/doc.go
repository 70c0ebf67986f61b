// Package core is the Configurable Retry Logic (CRL) engine of crl: the rule
// language of the Microsoft JDBC driver for SQL Server (retryExec and
// retryConn), error classification, the statement, transaction and
// connection retry loops, the wait schedule and its jitter, the retry budget
// and the events the loops emit.
//
// core imports no ORM and no database driver. It recognises errors through
// small interfaces: go-mssqldb's SQLErrorNumber() int32, pgx's
// SQLState() string, the MySQL driver's error number, and the standard
// library's network and connection errors. The adapters (sqlxcrl, gormcrl)
// and the config package depend on core, never the reverse.
//
// Parse once, decide fast: ParseStatementRules and ParseConnectionRules
// compile a rule string to an immutable value; a Retrier holds the current
// Policy behind an atomic pointer so that a hot reload swaps it without
// locks, and the success path of Retrier.Run neither allocates nor locks.
//
// The semantics follow the JDBC driver exactly where it is right, and diverge
// where it is wrong or unsafe; docs/semantics.md lists every divergence.
package core
