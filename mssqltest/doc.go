// Package mssqltest is a scriptable SQL Server stand-in for tests: a TCP
// server that speaks enough of the TDS 7.4 protocol for the real
// github.com/microsoft/go-mssqldb driver to log in, run statements and
// transactions, and get the replies a test scripted, so retry logic can be
// tested against deadlocks, lock timeouts, failovers, hung statements and
// dropped connections without a database. Where a client can tell, its
// replies are the bytes SQL Server sends (the command in every DONE, the
// two-message answer to an ATTENTION), and Microsoft's JDBC driver reads
// them as go-mssqldb does; docs/testing.md says how both are tested.
//
// Start a server, script replies per statement, connect with its DSN:
//
//	srv := mssqltest.NewServer(t) // closed when the test ends
//	srv.Handle("UPDATE t SET n = n + 1", mssqltest.Error(1205), mssqltest.Affected(1))
//	db, _ := sql.Open("sqlserver", srv.DSN())
//	_, err := db.Exec("UPDATE t SET n = n + 1") // mssql.Error{Number: 1205, Class: 13, State: 51}
//	_, err = db.Exec("UPDATE t SET n = n + 1")  // nil, RowsAffected 1
//	n := srv.Count("UPDATE t SET n = n + 1")    // 2
//
// A statement is matched by the text the driver sends, after trimming
// surrounding white space and trailing semicolons, case-insensitively: the
// batch text, or for a statement with arguments the SQL text with its @p1
// placeholders. Replies are used in order and the last one repeats. A
// statement without a script gets an empty success.
//
// FailLogin makes the next logins fail with an error number, DropLogins
// makes them end with a closed connection.
//
// The server records what it received: Count per statement, Logins,
// Statements, and the statements of every committed and rolled-back
// transaction (Committed, RolledBack).
//
// Limits: no TLS (the DSN says encrypt=disable; encrypt=true or strict
// fails), no authentication (any user and password log in), no SQL: the
// server never parses statements, it only matches their text. See
// docs/testing.md for the full guide.
package mssqltest
