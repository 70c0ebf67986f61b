// Package pgxcrl brings crl's rules to pgx v5's own interface: a Pool
// with pgxpool.Pool's methods (sqlc's pgx/v5 DBTX among them) whose
// statements outside a transaction are retried under the same engine as
// a database/sql pool that crl opened — the retryExec rules and their
// query filter, the class tokens (deadlock, serialization, …),
// queryTimeout, the execution cut-off (statement_timeout), the retry
// budget, the circuit breaker, the observers, the properties file and its
// hot reload — and whose new connections are opened under the JDBC
// connection algorithm (retryConn, connectRetryCount,
// connectRetryInterval, loginTimeout).
//
// Adopting it changes the pool's constructor only:
//
//	pool, err := pgxcrl.Open(ctx, "postgres://app@db/app?retryExec={deadlock,serialization:3,100ms*2}")
//	queries := db.New(pool) // sqlc's generated code, unchanged
//
// A query's attempt ends at its first row: an error before it (a
// deadlock victim, a serialization failure, statement_timeout's 57014)
// is retried, one met while later rows are read is returned and never
// retried. A statement inside a transaction is never retried on its own;
// RunInTx re-runs a whole transaction. SendBatch and CopyFrom run once
// (see their docs). docs/pgx.md in the repository says more, and where
// it differs from the database/sql layer.
package pgxcrl
