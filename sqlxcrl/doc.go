// Package sqlxcrl is sqlx with the Configurable Retry Logic of the JDBC
// driver for SQL Server: open the handle with sqlxcrl.Connect (or Open,
// ConnectContext, MustConnect, MustOpen, OpenDB) instead of sqlx's, and
// its pool runs crl's driver layer: every statement outside a
// transaction runs under the retryExec rules, every new pooled connection
// under the connection loop (retryConn, connectRetryCount,
// connectRetryInterval, loginTimeout), and RunInTx retries whole
// transactions.
//
//	db, err := sqlxcrl.Connect("sqlserver",
//		"sqlserver://app:secret@db?database=shop&retryExec={1205,1222:3,2*2:select,update}")
//
// *DB embeds *sqlx.DB, so every sqlx method is there, with the same
// signature, and *DB satisfies sqlx.Ext, sqlx.ExtContext, sqlx.Queryer and
// friends. Statements are retried in one place, the driver layer; sqlxcrl
// adds only what sqlx alone cannot have: Get and Select (on DB, Stmt and
// NamedStmt) run the query and the read of its whole result as one
// attempt, so an error met mid-stream is retried too, and RunInTx re-runs
// a closure on a fresh transaction. Beginx, Preparex and PrepareNamed
// return sqlxcrl's Tx, Stmt and NamedStmt for those.
//
// A pool crl did not open (NewDb or WrapDB of a sql.Open pool) is run as
// sqlx would run it: every statement, read and RunInTx runs once, so a
// helper shared with such a handle keeps working. Settings given for it
// are refused with ErrForeignPoolSettings, which names crl.OpenDB; an
// observer given alone (config.WithObserver) is told once, when the
// handle is built, that nothing on the pool is retried
// (config.ForeignPool).
//
// A handle's Mapper and Unsafe work as in sqlx. sqlx's package functions
// sqlx.NamedExec, sqlx.NamedQuery and sqlx.Preparex (and their Context
// forms) find the Mapper and Unsafe with a type switch on sqlx's own
// types, so given a sqlxcrl handle they use sqlx's defaults: call the
// handle's methods instead. See docs/sqlx.md.
//
// What is not retried, and why:
//   - Statements inside a transaction (Tx) are never retried one by one by
//     sqlxcrl: SQL Server rolls back the whole transaction of a deadlock
//     victim. Use RunInTx, which re-runs the whole closure on a fresh
//     transaction (and the driver layer's transaction replay).
//   - An error that arrives while rows are being read after Query or
//     Queryx handed the first row over is not retried: rows were already
//     delivered to the caller. Select and Get retry the whole read.
//   - Conn and Connx are bound to one connection, like database/sql.
package sqlxcrl
