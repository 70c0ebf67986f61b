package benchmarks

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"io"
)

// memDriver is an in-memory database/sql driver: every statement succeeds
// at once (Exec affects one row, id 7; Query returns the row id=7, name="pen"),
// with no network and nothing stored, so that what a wrapper costs on top
// of database/sql is what a benchmark sees. Its connection has the
// optional interfaces that go-sql-driver/mysql's and go-mssqldb's have
// (NamedValueChecker, SessionResetter, Validator), so that database/sql
// makes the calls it makes on them: one check per argument, a reset and
// a validation per return to the pool.
type memDriver struct{}

func init() { sql.Register("crlmem", memDriver{}) }

func (memDriver) Open(string) (driver.Conn, error) { return memConn{}, nil }

// memConnector is the in-memory driver's connector, for sql.OpenDB and
// the wrappers that take a connector (crl.OpenDB, otelsql.OpenDB), so
// that each of them wraps the very same driver.
type memConnector struct{}

func (memConnector) Connect(context.Context) (driver.Conn, error) { return memConn{}, nil }
func (memConnector) Driver() driver.Driver                        { return memDriver{} }

type memConn struct{}

var (
	_ driver.ExecerContext     = memConn{}
	_ driver.QueryerContext    = memConn{}
	_ driver.ConnBeginTx       = memConn{}
	_ driver.NamedValueChecker = memConn{}
	_ driver.SessionResetter   = memConn{}
	_ driver.Validator         = memConn{}
)

// CheckNamedValue leaves every argument to database/sql's default
// conversion.
func (memConn) CheckNamedValue(*driver.NamedValue) error { return driver.ErrSkip }
func (memConn) ResetSession(context.Context) error       { return nil }
func (memConn) IsValid() bool                            { return true }

func (memConn) Prepare(query string) (driver.Stmt, error) { return memStmt{}, nil }
func (memConn) Close() error                              { return nil }
func (memConn) Begin() (driver.Tx, error)                 { return memTx{}, nil }
func (memConn) BeginTx(context.Context, driver.TxOptions) (driver.Tx, error) {
	return memTx{}, nil
}
func (memConn) ExecContext(context.Context, string, []driver.NamedValue) (driver.Result, error) {
	return memResult{}, nil
}
func (memConn) QueryContext(context.Context, string, []driver.NamedValue) (driver.Rows, error) {
	return &memRows{}, nil
}

type memStmt struct{}

func (memStmt) Close() error                               { return nil }
func (memStmt) NumInput() int                              { return -1 }
func (memStmt) Exec([]driver.Value) (driver.Result, error) { return memResult{}, nil }
func (memStmt) Query([]driver.Value) (driver.Rows, error)  { return &memRows{}, nil }

// memResult is the result of every Exec: one row affected, whose id is 7.
type memResult struct{}

func (memResult) LastInsertId() (int64, error) { return 7, nil }
func (memResult) RowsAffected() (int64, error) { return 1, nil }

type memTx struct{}

func (memTx) Commit() error   { return nil }
func (memTx) Rollback() error { return nil }

type memRows struct{ done bool }

var memColumns = []string{"id", "name"}

func (*memRows) Columns() []string { return memColumns }
func (*memRows) Close() error      { return nil }
func (r *memRows) Next(dest []driver.Value) error {
	if r.done {
		return io.EOF
	}
	r.done = true
	dest[0], dest[1] = int64(7), "pen"
	return nil
}
