package mssqltest

import (
	"time"
)

// Reply is one scripted answer to a statement, built by Error, Rows,
// Affected, Hang, Delay or Drop and given to Server.Handle. A Reply holds
// no per-connection state, so one value may be used by any number of
// statements and connections.
type Reply interface {
	answer(x *exchange) error
}

// Error replies with SQL Server error number: an ERROR token, then a DONE
// with the error bit. The driver returns it as an mssql.Error with that
// Number. Numbers retry rules usually name get the class, state and message
// the real server sends, among them 1205 (deadlock victim, class 13, state
// 51), 1222 (lock request time out, 16/56), 2601 and 2627 (duplicate key,
// 14/1), 4060 (cannot open database, 11/1), 18456 (login failed, 14/1),
// 40197 (17), 40501 (service busy, 20), 40613 (database not available,
// 17), 10928, 10929, 49918, 49919 and 49920; any other number gets class
// 16, state 1 and the message "mssqltest: scripted error N".
//
// Inside a transaction, Error(1205) also ends the transaction the way SQL
// Server ends a deadlock victim's: the reply carries a rollback ENVCHANGE,
// the transaction is recorded as rolled back, and the driver's Tx can only
// be rolled back (a no-op) from then on. Other errors leave the transaction
// open. The connection stays open for every number, even class 20 ones.
//
// Error answers a transaction request (see Handle) without doing it, except
// that 1205 rolls the transaction back.
func Error(number int32) Reply { return errorReply{number: number} }

type errorReply struct{ number int32 }

func (r errorReply) answer(x *exchange) error {
	return x.fail(errorFor(r.number, x.c.session))
}

// Rows replies with a result set: COLMETADATA, one row token per row, and a
// DONE counting the rows. Each row must have one value per column. A
// column's SQL type follows the Go type of its first non-nil value:
//
//	int64, uint32, uint, uint64      bigint (scanned as int64)
//	int, int32, int16, int8, uint16,
//	uint8                            int, or bigint if a value needs it (int64)
//	bool                             bit (bool)
//	float64                          float (float64)
//	float32                          real (float64)
//	string                           nvarchar(4000), nvarchar(max) if longer (string)
//	[]byte                           varbinary(8000), varbinary(max) if longer ([]byte)
//	time.Time                        datetime2(7), sent in UTC (time.Time)
//	nil                              NULL; a column of only nils is nvarchar
//
// A driver.Valuer is replaced by its value first; any other type is sent
// as its fmt.Sprint text, and so is a column that mixes incompatible types
// (integer columns widen to bigint and float32 to float instead). Rows that
// do not match the column count make the reply an error 50000 that says
// so. Rows answers a transaction request by doing it.
func Rows(columns []string, rows ...[]any) Reply {
	rs, err := newResultSet(columns, rows)
	return rowsReply{rs: rs, err: err}
}

type rowsReply struct {
	rs  resultSet
	err error
}

func (r rowsReply) answer(x *exchange) error {
	if r.err != nil {
		return x.fail(serverError{number: 50000, class: 16, state: 1, message: r.err.Error(), server: serverName, line: 1})
	}
	return x.succeed(&r.rs, int64(len(r.rs.rows)), true)
}

// RowsThenError replies with a result set's columns and rows, then the
// error number, as SQL Server does when a statement fails after its first
// rows were sent (a deadlock victim chosen mid-stream, a time-out): the
// driver returns the rows, and the error from rows.Next or rows.Err. It
// answers a transaction request as Error does.
func RowsThenError(number int32, columns []string, rows ...[]any) Reply {
	rs, err := newResultSet(columns, rows)
	return rowsThenErrorReply{rows: rowsReply{rs: rs, err: err}, number: number}
}

type rowsThenErrorReply struct {
	rows   rowsReply
	number int32
}

func (r rowsThenErrorReply) answer(x *exchange) error {
	if r.rows.err != nil || x.req.kind == requestTransaction {
		return r.rows.answer(x)
	}
	return x.failAfter(&r.rows.rs, errorFor(r.number, x.c.session))
}

// Affected replies with success and a row count of n, which is what
// sql.Result.RowsAffected returns. Its DONE names the statement's command
// as SQL Server does (0xC5 for an UPDATE, for example), which is what
// makes mssql-jdbc report n as the update count of an INSERT, UPDATE,
// DELETE or MERGE. Affected answers a transaction request by doing it.
func Affected(n int64) Reply { return affectedReply{n: n} }

type affectedReply struct{ n int64 }

func (r affectedReply) answer(x *exchange) error {
	return x.succeed(nil, r.n, true)
}

// Hang never answers: the statement runs until the client cancels it (a
// context deadline or cancel makes go-mssqldb send an ATTENTION, and so
// does mssql-jdbc's queryTimeout). The server then answers as SQL Server
// does: the statement's response ends with a DONE whose error bit marks it
// interrupted, and a second message acknowledges the attention with a DONE
// carrying the attention bit. The driver returns the context's error.
// Closing the server also ends it.
func Hang() Reply { return delayReply{d: -1} }

// Delay waits d, then answers with r. If the client cancels first, the
// server answers the cancel as Hang describes and r is not sent.
func Delay(d time.Duration, r Reply) Reply {
	if d < 0 {
		d = 0
	}
	return delayReply{d: d, then: r}
}

type delayReply struct {
	d    time.Duration // < 0: until cancelled
	then Reply
}

func (r delayReply) answer(x *exchange) error {
	cancelled, err := x.wait(r.d)
	if err != nil || cancelled {
		return err
	}
	if r.then == nil {
		return defaultReply(x.req).answer(x)
	}
	return r.then.answer(x)
}

// Drop closes the connection instead of answering, as a failed network or
// a killed session would. The driver reports a connection error, marks
// the connection bad, and database/sql opens a new one for the next
// statement. A transaction open on the connection is recorded as rolled
// back.
func Drop() Reply { return dropReply{} }

type dropReply struct{}

func (dropReply) answer(*exchange) error { return errDropped }

// versionText is what SELECT @@VERSION returns when not scripted; it
// names the version PRELOGIN and LOGINACK report.
const versionText = "Microsoft SQL Server 2022 (RTM) - 16.0.1000.6 (X64) \n\tmssqltest stand-in for github.com/microsoft/go-mssqldb tests"

// defaultReply answers a statement that has no script: SELECT @@VERSION
// gets a plausible version row, a transaction request is carried out, and
// anything else gets an empty success (a DONE without a row count).
func defaultReply(req request) Reply {
	if statementKey(req.text) == "select @@version" {
		return Rows([]string{""}, []any{versionText})
	}
	return successReply{}
}

type successReply struct{}

func (successReply) answer(x *exchange) error { return x.succeed(nil, 0, false) }
