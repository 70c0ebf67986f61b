// Package gormcrl brings the Configurable Retry Logic of the JDBC driver
// for SQL Server to GORM, without ever turning a retry into a partial or
// duplicated write.
//
//	db, err := gorm.Open(gormcrl.Open(sqlserver.Open(
//		"sqlserver://app:secret@db?database=shop&retryExec={1205,1222:3,100ms*2}")),
//		&gorm.Config{})
//
// Open wraps the dialector: the retry settings come from the DSN (and from
// options in code and the mssql-jdbc.properties file), the pool is opened
// through crl's database/sql driver layer, where every retry lives (the
// statement loop, transaction replay, the connection loop of every new
// pooled connection, the open path included), and the plugin is
// registered. On a DB opened without Open, db.Use(gormcrl.New()) over a
// dialector that opened its pool from a DSN opens that pool again through
// the driver layer and puts it in place of GORM's.
//
// Over a pool crl did not open (a dialector given a Conn of the user's,
// SQLite, …) the plugin and Transaction run every statement and unit once,
// exactly as GORM without crl, and settings given for such a pool are
// refused with an error naming crl.OpenDB.
//
// Which code handles which operation over a pool crl opened:
//
//	operation                                  handled by
//	First/Find/Raw/Exec/Row/…, Create/… alone  the driver layer (the statement)
//	Create/Update/Delete, implicit tx          the driver layer's replay, then
//	                                           the whole unit: unit.go, snapshot.go
//	Transaction(db, fn)                        transaction.go
//
// A statement outside a transaction (every read, and a write with
// SkipDefaultTransaction) is retried by the driver layer alone, under the
// retryExec rules, its query filter checked against the statement's text:
// the attempt of a query ends at its first row, so an error before it (a
// deadlock, a lock wait, the execution cut-off's 1969 or 57014, a write's
// INSERT … RETURNING that failed before its first returned row) is
// retried, and an error after it surfaces as it would with database/sql
// alone (MariaDB's lock wait on the second row of a multi-row INSERT …
// RETURNING). Create, Update, Save and Delete under GORM's implicit
// transaction (the default) run in a unit: the driver layer replays the
// transaction first; when the replay cannot hide the error (it diverged,
// replay is off, COMMIT failed) the whole operation runs again on a fresh
// transaction (BEGIN, before hooks, the statement, after hooks, COMMIT)
// from the value as the caller passed it, or, when the value cannot be put
// back simply (GORM would save associations with it, or it holds a map or
// slice a hook may change in place; see snapshot.go), not at all.
// Transaction re-runs a whole closure on a fresh transaction.
//
// What is never retried: a statement inside a transaction (db.Transaction,
// db.Begin, a hook's tx) on its own, because SQL Server rolls back the
// whole transaction of a deadlock victim and re-running one statement
// would run it outside any transaction (the driver layer replays the
// transaction instead); anything on a pool crl did not open; a COMMIT
// whose outcome is unknown (core.ErrCommitUnknown); an error after a
// query's first row; an operation with db.Clauses(NoRetry).
//
// GORM's db.Transaction cannot be made to retry (nothing a plugin hooks
// sees its closure): use Transaction. crl vet (module
// github.com/crl-go/crl/crlvet) reports the code that calls GORM's.
//
// Hooks run again on each attempt of a retried unit, as the closure of
// Transaction does: they must not do anything outside the transaction
// that they cannot repeat. See docs/gorm.md.
package gormcrl
