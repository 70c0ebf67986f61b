// Package adapter holds what the sqlxcrl and gormcrl adapters share: Open,
// whose pool runs the connection loop for every new pooled connection (and
// sets the execution cut-off), and the pieces of a whole-transaction
// attempt (Run, Finish, CommitOutcome).
package adapter

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"

	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/internal/layer/connector"
	"github.com/crl-go/crl/internal/text/redact"
)

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
	return connector.OfDriver(drv, dsn)
}

// Open opens a *sql.DB on the registered driver driverName with driverDSN
// (a DSN without the retry settings), whose every new connection gets rt's
// execution cut-off (for rt's family: its driver's, or the one
// config.WithDriverFamily names for a wrapped driver name), ends its
// transactions under their context (BeginTx's) where the driver does not
// (see internal/layer/connector), and runs the connection loop. It does not connect. Its errors carry no package
// prefix: the adapter that calls it adds its own.
func Open(driverName, driverDSN string, rt *config.Runtime) (*sql.DB, error) {
	inner, err := DriverConnector(driverName, driverDSN)
	if err != nil {
		// The driver's error about a DSN it cannot read quotes the DSN.
		return nil, fmt.Errorf("open %q: %w", driverName, redact.Error(err))
	}
	wrapped, err := rt.Connector(inner)
	if err != nil {
		return nil, err
	}
	return sql.OpenDB(wrapped), nil
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
