// Package adapter holds what the sqlxcrl and gormcrl adapters share: Open,
// whose pool runs the connection loop for every new pooled connection (and
// sets the execution cut-off), and the pieces of a whole-transaction
// attempt (Recorder, Finish, CommitOutcome, Recover).
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

// loopConnector runs the connection loop around every Connect of the
// driver's connector, so every new pooled connection gets it, not only the
// first.
type loopConnector struct {
	inner   driver.Connector
	retrier *core.Retrier
}

var (
	_ driver.Connector = (*loopConnector)(nil)
	_ io.Closer        = (*loopConnector)(nil)
)

// Connect opens one connection under the connection loop.
func (c *loopConnector) Connect(ctx context.Context) (driver.Conn, error) {
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
func (c *loopConnector) Driver() driver.Driver { return c.inner.Driver() }

// Close closes the wrapped connector when it can be closed.
func (c *loopConnector) Close() error {
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

// driverConnector returns the connector of a registered driver for dsn.
func driverConnector(driverName, dsn string) (driver.Connector, error) {
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

// Open opens a *sql.DB on the registered driver driverName with driverDSN
// (a DSN without the retry settings), whose every new connection gets rt's
// execution cut-off (for the DSN form: sqlserver, mysql or pgx) and runs
// the connection loop. It does not connect. Its errors carry no package
// prefix: the adapter that calls it adds its own.
func Open(form, driverName, driverDSN string, rt *config.Runtime) (*sql.DB, error) {
	inner, err := driverConnector(driverName, driverDSN)
	if err != nil {
		return nil, fmt.Errorf("open %q: %w", driverName, err)
	}
	if cutoff := rt.ExecutionCutoff(); cutoff > 0 {
		if inner, err = withCutoff(form, inner, cutoff); err != nil {
			return nil, err
		}
	}
	return sql.OpenDB(&loopConnector{inner: inner, retrier: rt.Retrier()}), nil
}

// Finish ends a transaction attempt: it rolls back when fnErr is not nil
// and commits otherwise, and returns what the transaction loop needs (see
// CommitOutcome for a failed COMMIT). A rollback that fails after fnErr is
// reported with it, fnErr first. name is the adapter's package, which
// starts the messages of the errors Finish makes.
func Finish(name string, fnErr error, rollback, commit func() error) (failed string, err error) {
	if fnErr != nil {
		if rbErr := rollback(); rbErr != nil && !errors.Is(rbErr, sql.ErrTxDone) && !core.IsBadConn(rbErr) {
			// The server may already have rolled the transaction back (a
			// deadlock victim's is); report both, the closure's first.
			return "", errors.Join(fnErr, fmt.Errorf("%s: rollback after the error above: %w", name, rbErr))
		}
		return "", fnErr
	}
	if err := commit(); err != nil {
		return CommitOutcome(name, err)
	}
	return "", nil
}

// CommitOutcome classifies a failed COMMIT for the transaction loop. A
// COMMIT that failed because the connection broke or the context ended has
// an unknown outcome: the error then matches core.ErrCommitUnknown and is
// never retried. A COMMIT refused by the server (an error number, a
// SQLSTATE, or PostgreSQL's ROLLBACK answer that pgx reports as
// ErrTxCommitRollback) did not commit and is reported as the failed
// statement "COMMIT", for the rule's query filter. name is the adapter's
// package, which starts the message of the error of an unknown outcome.
func CommitOutcome(name string, err error) (failed string, _ error) {
	if outcomeUnknown(err) {
		return "", fmt.Errorf("%s: COMMIT failed and its outcome is unknown, so the transaction was not retried: %w: %w", name, core.ErrCommitUnknown, err)
	}
	return "COMMIT", err
}

// outcomeUnknown reports whether a failed COMMIT may have been applied:
// unless the server answered with an error (a number that is not a mapped
// socket error, or a SQLSTATE), or answered ROLLBACK, it may have been.
func outcomeUnknown(err error) bool {
	if rolledBack(err) {
		return false
	}
	if n, ok := core.ErrorNumber(err); ok {
		return core.IsSocketError(n)
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
