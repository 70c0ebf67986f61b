package sqlxcrl

import (
	"context"
	"database/sql"
	"database/sql/driver"

	"github.com/jmoiron/sqlx"
)

// failingConnector is a connector whose every Connect fails with err: a
// handle built on it (NewDb's, given arguments it refuses) reports err
// on every statement and Ping instead of panicking or running without
// its rules.
type failingConnector struct{ err error }

func (c failingConnector) Connect(context.Context) (driver.Conn, error) { return nil, c.err }
func (c failingConnector) Driver() driver.Driver                        { return failingDriver(c) }

type failingDriver struct{ err error }

func (d failingDriver) Open(string) (driver.Conn, error) { return nil, d.err }

// refusedStmt returns a statement whose every execution fails with err,
// for what Tx.Stmtx and Tx.NamedStmt cannot make the transaction's own:
// a real *sqlx.Stmt, prepared on the one connection of a pool closed at
// once (the statement keeps that connection, and nothing else stays
// open), whose driver statement answers err. Each of sqlx's methods
// (Exec, QueryRowx, Get, Must…) then reports err as it reports a
// driver's error, and nothing reaches a server.
func refusedStmt(err error) *sqlx.Stmt {
	db := sqlx.NewDb(sql.OpenDB(refusingConn{err}), "")
	defer db.Close()
	ctx := context.Background()
	c, _ := db.Connx(ctx)              // cannot fail: refusingConn connects
	s, _ := c.PreparexContext(ctx, "") // cannot fail: refusingConn prepares
	return s
}

// refusingConn is the connector, connection and statement of refusedStmt:
// it connects and prepares, and every execution or transaction fails
// with err.
type refusingConn struct{ err error }

func (c refusingConn) Connect(context.Context) (driver.Conn, error) { return c, nil }
func (c refusingConn) Driver() driver.Driver                        { return failingDriver(c) }
func (c refusingConn) Prepare(string) (driver.Stmt, error)          { return c, nil }
func (c refusingConn) Begin() (driver.Tx, error)                    { return nil, c.err }
func (c refusingConn) Close() error                                 { return nil }
func (c refusingConn) NumInput() int                                { return -1 }
func (c refusingConn) Exec([]driver.Value) (driver.Result, error)   { return nil, c.err }
func (c refusingConn) Query([]driver.Value) (driver.Rows, error)    { return nil, c.err }
func (c refusingConn) ExecContext(context.Context, []driver.NamedValue) (driver.Result, error) {
	return nil, c.err
}
func (c refusingConn) QueryContext(context.Context, []driver.NamedValue) (driver.Rows, error) {
	return nil, c.err
}

// CheckNamedValue takes every argument, so that the statement answers
// err whatever it is given (database/sql would refuse a type the driver
// cannot convert first).
func (c refusingConn) CheckNamedValue(*driver.NamedValue) error { return nil }
