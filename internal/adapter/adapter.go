// Package adapter holds what the sqlxcrl and gormcrl adapters share: the
// connector that runs the connection loop for every new pooled connection,
// and the whole-transaction loop.
package adapter

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"

	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/core"
)

// Connector runs the connection loop around every Connect of the driver's
// connector, so every new pooled connection gets it, not only the first.
type Connector struct {
	inner   driver.Connector
	retrier *core.Retrier
}

var (
	_ driver.Connector = (*Connector)(nil)
	_ io.Closer        = (*Connector)(nil)
)

// NewConnector wraps inner.
func NewConnector(inner driver.Connector, r *core.Retrier) *Connector {
	return &Connector{inner: inner, retrier: r}
}

// Connect opens one connection under the connection loop.
func (c *Connector) Connect(ctx context.Context) (driver.Conn, error) {
	var conn driver.Conn
	err := c.retrier.Connect(ctx, func(ctx context.Context) error {
		var err error
		conn, err = c.inner.Connect(ctx)
		return err
	})
	if err != nil {
		return nil, err
	}
	return conn, nil
}

// Driver returns the wrapped driver.
func (c *Connector) Driver() driver.Driver { return c.inner.Driver() }

// Close closes the wrapped connector when it can be closed.
func (c *Connector) Close() error {
	if cl, ok := c.inner.(io.Closer); ok {
		return cl.Close()
	}
	return nil
}

// dsnConnector is the connector of a driver without driver.DriverContext.
type dsnConnector struct {
	dsn string
	drv driver.Driver
}

func (c dsnConnector) Connect(context.Context) (driver.Conn, error) { return c.drv.Open(c.dsn) }
func (c dsnConnector) Driver() driver.Driver                        { return c.drv }

// DriverConnector returns the connector of a registered driver for dsn.
func DriverConnector(driverName, dsn string) (driver.Connector, error) {
	probe, err := sql.Open(driverName, dsn)
	if err != nil {
		return nil, err
	}
	drv := probe.Driver()
	if err := probe.Close(); err != nil {
		return nil, err
	}
	if dc, ok := drv.(driver.DriverContext); ok {
		return dc.OpenConnector(dsn)
	}
	return dsnConnector{dsn: dsn, drv: drv}, nil
}

// OpenDB builds the Runtime of a new handle from the options and the DSN,
// and opens a *sql.DB whose every new connection runs the connection loop.
// It does not connect.
func OpenDB(pkg, driverName, dsn string, opts ...config.Option) (*sql.DB, *config.Runtime, error) {
	rt, driverDSN, err := config.New(driverName, dsn, opts...)
	if err != nil {
		return nil, nil, err
	}
	db, err := OpenDriver(pkg, driverName, driverName, driverDSN, rt)
	if err != nil {
		return nil, nil, err
	}
	return db, rt, nil
}

// OpenDriver opens a *sql.DB on the registered driver driverName with
// driverDSN (a DSN without the retry settings), whose connections get rt's
// execution cut-off (for the DSN format: sqlserver, mysql or pgx) and the
// connection loop. It does not connect.
func OpenDriver(pkg, format, driverName, driverDSN string, rt *config.Runtime) (*sql.DB, error) {
	inner, err := DriverConnector(driverName, driverDSN)
	if err != nil {
		return nil, fmt.Errorf("%s: open %q: %w", pkg, driverName, err)
	}
	return OpenConnector(pkg, format, inner, rt)
}

// OpenConnector opens a *sql.DB over inner, whose connections get rt's
// execution cut-off and the connection loop. It does not connect.
func OpenConnector(pkg, format string, inner driver.Connector, rt *config.Runtime) (*sql.DB, error) {
	conn, err := Wrap(pkg, format, inner, rt)
	if err != nil {
		return nil, err
	}
	return sql.OpenDB(conn), nil
}

// Wrap returns inner with rt's execution cut-off (for the DSN format:
// sqlserver, mysql or pgx) and the connection loop around every Connect.
func Wrap(pkg, format string, inner driver.Connector, rt *config.Runtime) (driver.Connector, error) {
	if cutoff := rt.ExecutionCutoff(); cutoff > 0 {
		var err error
		if inner, err = CutoffConnector(pkg, format, inner, cutoff); err != nil {
			return nil, err
		}
	}
	return NewConnector(inner, rt.Retrier()), nil
}

// Finish ends a transaction attempt: it rolls back when fnErr is not nil
// and commits otherwise. failed is the statement that failed, for the
// rule's query filter. A COMMIT that fails because the connection broke or
// the context ended has an unknown outcome: the error then matches
// core.ErrCommitUnknown and is never retried. A COMMIT refused by the
// server (an error number, a SQLSTATE, or PostgreSQL's ROLLBACK answer that
// pgx reports as ErrTxCommitRollback) did not commit and is reported as the
// failed statement "COMMIT".
func Finish(pkg string, fnErr error, rollback, commit func() error) (string, error) {
	if fnErr != nil {
		if rbErr := rollback(); rbErr != nil && !errors.Is(rbErr, sql.ErrTxDone) && !core.IsBadConn(rbErr) {
			// The server may already have rolled the transaction back (a
			// deadlock victim's is); report both, the closure's first.
			return "", errors.Join(fnErr, fmt.Errorf("%s: rollback after the error above: %w", pkg, rbErr))
		}
		return "", fnErr
	}
	if err := commit(); err != nil {
		if outcomeUnknown(err) {
			return "", fmt.Errorf("%s: COMMIT failed and its outcome is unknown, so the transaction was not retried: %w: %w", pkg, core.ErrCommitUnknown, err)
		}
		return "COMMIT", err
	}
	return "", nil
}

// outcomeUnknown reports whether a failed COMMIT may have been applied:
// unless the server answered with an error (a number that is not a mapped
// socket error, or a SQLSTATE), or answered ROLLBACK, it may have been.
func outcomeUnknown(err error) bool {
	if rolledBack(err) {
		return false
	}
	if n, ok := core.ErrorNumber(err); ok {
		switch n {
		case 10053, 10054, 10060, 10061: // socket errors: no answer
			return true
		}
		return false
	}
	_, answered := core.SQLState(err)
	return !answered
}

// commitRolledBack is the text of pgx's ErrTxCommitRollback: PostgreSQL
// answered COMMIT with ROLLBACK (the transaction had already failed, or a
// deferred check failed), so nothing of it was applied. It is recognised
// by its text so that no adapter imports pgx.
const commitRolledBack = "commit unexpectedly resulted in rollback"

// rolledBack reports whether err, or an error it wraps, is pgx's
// ErrTxCommitRollback.
func rolledBack(err error) bool {
	for err != nil {
		if err.Error() == commitRolledBack {
			return true
		}
		switch e := err.(type) {
		case interface{ Unwrap() []error }:
			for _, inner := range e.Unwrap() {
				if rolledBack(inner) {
					return true
				}
			}
			return false
		case interface{ Unwrap() error }:
			err = e.Unwrap()
		default:
			return false
		}
	}
	return false
}

// Recover rolls back and re-panics when the closure panicked. Use it as
// defer adapter.Recover(rollback).
func Recover(rollback func() error) {
	if p := recover(); p != nil {
		_ = rollback() // the panic is what the caller must see
		panic(p)
	}
}

// FailingConnector returns a connector whose every Connect fails with err:
// a handle built on it reports a configuration error on every statement
// instead of panicking or running without its rules.
func FailingConnector(err error) driver.Connector { return failingConnector{err} }

type failingConnector struct{ err error }

func (c failingConnector) Connect(context.Context) (driver.Conn, error) { return nil, c.err }
func (c failingConnector) Driver() driver.Driver                        { return failingDriver(c) }

type failingDriver struct{ err error }

func (d failingDriver) Open(string) (driver.Conn, error) { return nil, d.err }
