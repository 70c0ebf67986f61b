package sqlxcrl

import (
	"context"
	"database/sql"
	"database/sql/driver"
)

// errorDB returns a handle whose every connection fails with err, for
// rows that must carry err: a *sql.Row or a *sqlx.Row cannot be built
// with an error outside its package, but built from this handle's answer
// (as QueryRowContext builds it) it carries err unchanged. The caller
// closes it with closeErrorDB once the row is built.
func errorDB(err error) *sql.DB { return sql.OpenDB(failingConnector{err}) }

// closeErrorDB closes a handle from errorDB. Its Close cannot fail: it
// opened no connection, and its connector has nothing to close.
func closeErrorDB(db *sql.DB) { _ = db.Close() }

// errorRow returns a *sql.Row whose Scan and Err return err: the row of a
// one-row query that never ran.
func errorRow(err error) *sql.Row {
	db := errorDB(err)
	defer closeErrorDB(db)
	return db.QueryRowContext(context.Background(), "")
}

// failingConnector is a connector whose every Connect fails with err: a
// handle built on it reports a configuration error on every statement
// instead of panicking or running without its rules.
type failingConnector struct{ err error }

func (c failingConnector) Connect(context.Context) (driver.Conn, error) { return nil, c.err }
func (c failingConnector) Driver() driver.Driver                        { return failingDriver(c) }

type failingDriver struct{ err error }

func (d failingDriver) Open(string) (driver.Conn, error) { return nil, d.err }
