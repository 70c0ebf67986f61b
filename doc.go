// Package crl brings the Configurable Retry Logic of Microsoft's JDBC
// driver for SQL Server to every Go library built on database/sql, the
// way the JDBC driver does it for every Java library: inside the driver.
//
// A pool opened with Open (or OpenDB over a connector of your own, or
// sql.Open with a driver name from Register) is a plain *sql.DB whose
// driver connections run every statement outside a transaction under the
// retryExec rules, open every connection under the retryConn rules and
// the connectRetryCount/connectRetryInterval/loginTimeout loop, and bound
// every attempt by queryTimeout. sqlx, sqlc, ent, bun and GORM keep their
// own types over it:
//
//	db, err := crl.Open("sqlserver", "sqlserver://app@db?database=shop&retryExec={1205:3,2*2}")
//	dbx := sqlx.NewDb(db, "sqlserver")                    // sqlx
//	q := store.New(db)                                    // sqlc
//	drv := entsql.OpenDB(dialect.Postgres, db)            // ent
//	gdb, err := gorm.Open(sqlserver.New(sqlserver.Config{Conn: db}), &gorm.Config{}) // GORM
//
// A statement inside a transaction is never retried on its own (the
// server rolls a deadlock victim's whole transaction back). Whole
// transactions are retried by RunInTx on a *sql.Tx, and by Retry around
// any library's own transaction API (ent's client.Tx, bun's RunInTx,
// GORM's db.Transaction): both re-run the caller's function on a fresh
// transaction, and check the rule's query filter against the statement
// whose error ended it, which the driver layer records.
//
// See docs/databasesql.md for every library, and docs/semantics.md for
// what is retried when.
package crl
