// Package crltest is test support for code that runs on a pool crl
// opened: it proves that your code survives a deadlock, a serialization
// failure, a lock time-out, a failover, throttling or the execution
// cut-off against your real database, with the errors your driver returns.
//
// Deadlock and its siblings (Serialization, LockTimeout, Failover,
// Throttle, Cutoff) return the driver's own error value for a database
// family: go-mssqldb's mssql.Error, go-sql-driver/mysql's
// *mysql.MySQLError, pgx's *pgconn.PgError, with the number, state and
// message the server sends. Inject makes the next statements of a pool
// that a Fault matches (by text, by how they run, inside transactions
// only, at COMMIT, a number of times) fail with such an error in crl's
// driver layer, before they reach the server, so the retry is crl's real
// one: rules, loops, budget, breaker and events as for the server's own
// error, and the data is the database's.
//
//	db, _ := crl.Open("mysql", dsn+"&retryExec={1213:3,10ms}")
//	undo := crltest.Inject(db, crltest.Fault{
//		Err:   crltest.Deadlock("mysql"),
//		Match: "UPDATE accounts SET balance = balance +",
//		Times: 1,
//		T:     t,
//	})
//	defer undo()
//	err := transfer(ctx, db, from, to, 10) // crl.RunInTx: the deadlock is retried
//
// It imports the three drivers' error types; import it from tests only.
// docs/testing.md ("Testing your code's retry-safety") has the whole
// story.
package crltest
