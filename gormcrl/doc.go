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
//	operation                              handled by
//	Raw/Exec/Row/Rows, outside a tx        the driver layer
//	First/Find/…, Create/… without the     whole read or write: attempt.go (the
//	implicit tx                            layer runs each attempt once)
//	Create/Update/Delete, implicit tx      the driver layer's replay, then the
//	                                       whole unit: unit.go, snapshot.go
//	Transaction(db, fn)                    transaction.go
//
// What the plugin retries, under the retryExec rules:
//   - First, Find, Take, Count, Pluck, Scan, Row, Rows, Raw and Exec (the
//     query, row and raw processors): each statement on its own, when it
//     runs outside any transaction. The rule's query filter is checked
//     against the statement's text.
//   - Create, Update, Save and Delete under GORM's implicit transaction
//     (the default): the whole unit, on a fresh transaction (BEGIN, before
//     hooks, associations, the statement, after hooks, COMMIT), with the
//     value put back as the caller passed it first; or, when that cannot be
//     done safely (GORM would save associations with it, or it is of a
//     shape this package does not snapshot), not at all. With
//     SkipDefaultTransaction each statement commits on its own and is
//     retried on its own, the scan of the rows it returns (INSERT …
//     RETURNING, OUTPUT INSERTED) included.
//   - Transaction retries a whole closure on a fresh transaction.
//
// What is never retried: a statement inside a transaction (db.Transaction,
// db.Begin, a hook's tx) on its own, because SQL Server rolls back the
// whole transaction of a deadlock victim and re-running one statement
// would run it outside any transaction (the driver layer replays the
// transaction instead); anything on a pool crl did not open; a COMMIT
// whose outcome is unknown (core.ErrCommitUnknown); an error that arrives
// while the caller reads rows GORM handed out (Rows, Row, Scan); an
// operation with db.Clauses(NoRetry). An error met while GORM itself
// reads a statement's rows (Find, First, a write's RETURNING) is retried
// with the statement.
//
// GORM's db.Transaction cannot be made to retry (nothing a plugin hooks
// sees its closure): use Transaction. crl vet (module
// github.com/crl-go/crl/crlvet) reports the code that calls GORM's.
//
// Hooks run again on each attempt of a retried unit, as the closure of
// Transaction does: they must not do anything outside the transaction
// that they cannot repeat. See docs/gorm.md.
package gormcrl
