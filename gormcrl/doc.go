// Package gormcrl brings the Configurable Retry Logic of the JDBC driver
// for SQL Server to GORM, without ever turning a retry into a partial or
// duplicated write.
//
//	db, err := gorm.Open(gormcrl.Open(sqlserver.Open(
//		"sqlserver://app:secret@db?database=shop&retryExec={1205,1222:3,100ms*2}")),
//		&gorm.Config{})
//
// Open wraps the dialector: the retry settings come from the DSN (and from
// options in code and the mssql-jdbc.properties file), every new pooled
// connection runs the connection loop (retryConn, connectRetryCount,
// connectRetryInterval, loginTimeout), the open path included, and the
// plugin is registered. On a DB opened without Open, db.Use(gormcrl.New())
// registers the plugin alone.
//
// Which mechanism retries which statement — the one table of this
// package. "crl pool": a pool crl opened (Open, OpenDB, or GORM over
// crl.Open's *sql.DB); "other pool": db.Use over a pool crl did not open.
//
//	operation                              crl pool                           other pool
//	Raw/Exec/Row/Rows, outside a tx        the driver layer (internal/...)    retryPool (pool.go, ConnPool swapped)
//	First/Find/Take/Count/Pluck/Scan       whole read: attempt.go, the        whole read: attempt.go over retryPool
//	                                       layer runs each attempt once
//	Create/Update/Delete, implicit tx      whole unit: unit.go                whole unit: unit.go (txPool recorder)
//	Create/Update/Delete, no implicit tx   whole statement: attempt.go        whole statement: attempt.go
//	any statement inside a transaction     never alone; recorded by the       never alone; recorded by txPool
//	                                       layer's Tx for the tx's retry
//	Transaction(db, fn)                    transaction.go, GORM's own *sql.Tx transaction.go, txPool recorder
//	db.Connection (a *sql.Conn)            the driver layer, on that conn     not retried
//	NoRetry                                once (a Unit in the context)       once
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
// db.Begin, a hook's tx), because SQL Server rolls back the whole
// transaction of a deadlock victim and re-running one statement would run
// it outside any transaction; over a pool crl did not open, a statement
// on a *sql.Conn (db.Connection; over a crl pool the driver layer retries
// it on that connection); a COMMIT whose outcome is unknown (core.ErrCommitUnknown); an error that
// arrives while the caller reads rows GORM handed out (Rows, Row, Scan);
// an operation with db.Clauses(NoRetry). An error met while GORM itself
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
