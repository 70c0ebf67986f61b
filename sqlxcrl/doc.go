// Package sqlxcrl is sqlx with the Configurable Retry Logic of the JDBC
// driver for SQL Server: open the handle with sqlxcrl.Connect (or Open,
// ConnectContext, MustConnect, MustOpen, NewDb) instead of sqlx's, and
// every statement runs under
// the retryExec rules, every new pooled connection under the connection
// loop (retryConn, connectRetryCount, connectRetryInterval, loginTimeout),
// and RunInTx retries whole transactions.
//
//	db, err := sqlxcrl.Connect("sqlserver",
//		"sqlserver://app:secret@db?database=shop&retryExec={1205,1222:3,2*2:select,update}")
//
// *DB embeds *sqlx.DB, so every sqlx method is there, with the same
// signature, and *DB satisfies sqlx.Ext, sqlx.ExtContext, sqlx.Queryer and
// friends. The methods that run a statement are overridden so that each
// goes through the statement loop with its own SQL text as the query for
// the rule's filter.
//
// What changes from sqlx: *DB, *Tx, *Stmt and *NamedStmt are types of their
// own. Code that names *sqlx.DB, *sqlx.Tx or *sql.DB (a parameter, a field)
// does not compile with them; passing the embedded db.DB (or db.DB.DB)
// compiles and silently loses every retry, because its methods are sqlx's
// own. Make such code take sqlx.ExtContext (or sqlx.QueryerContext,
// sqlx.ExecerContext), which *DB and *Tx satisfy and sqlx's package
// functions (sqlx.GetContext, sqlx.SelectContext, …) accept: then a *DB
// retries each statement and a *Tx runs it in the transaction. The
// command crl vet (github.com/crl-go/crl/cmd/crl) reports the places that
// take db.DB out. See docs/sqlx.md.
//
// A handle's Mapper and Unsafe work as in sqlx: NamedExec and NamedQuery
// bind with the handle's Mapper, rows scan with its Mapper and Unsafe, and
// Tx.NamedStmt takes the NamedStmt that PrepareNamed returns (or a
// *sqlx.NamedStmt). sqlx's package functions sqlx.NamedExec,
// sqlx.NamedQuery and sqlx.Preparex (and their Context forms) find the
// Mapper and Unsafe with a type switch on sqlx's own types, so given a
// sqlxcrl handle they use sqlx's defaults (and sqlx.Preparex is not
// retried): call the handle's methods instead.
//
// What is not retried, and why:
//   - Statements inside a transaction (Tx) are never retried one by one:
//     SQL Server rolls back the whole transaction of a deadlock victim. Use
//     RunInTx, which re-runs the whole closure on a fresh transaction.
//   - An error that arrives while rows are being read (after Query or
//     Queryx returned) is not retried: rows were already delivered to the
//     caller. Select and Get retry the query, not the reading.
//   - Prepare and PrepareContext return a plain *sql.Stmt (their signature
//     is fixed by sqlx.Preparer); use Preparex or PrepareNamed for a
//     prepared statement whose executions are retried.
//   - Conn and Connx are bound to one connection, like database/sql, which
//     never retries them either.
//
// QueryRow and QueryRowx return the driver's *sql.Row / *sqlx.Row, whose
// error field cannot be set from outside: after the last retry they carry
// the last driver error itself, not the wrapping *core.RetryError. Get
// returns the wrapping error.
package sqlxcrl
