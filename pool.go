package crl

import (
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"

	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/internal/text/redact"
)

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
	return connectorOf(drv, dsn)
}

// OpenRuntime opens a pool like Open, on the registered driver
// driverName with driverDSN, a DSN without crl's keys, under rt, the
// Runtime that config.NewRuntime read from the DSN with them: for an
// adapter that reads a DSN itself (gormcrl reads a dialector's). Every new
// connection gets rt's execution cut-off (for rt's family: its driver's,
// or the one config.WithDriverFamily names), ends its transactions under
// their context (BeginTx's) where the driver does not, and runs the
// connection loop; RuntimeOf reports rt. It does not connect.
func OpenRuntime(driverName, driverDSN string, rt *config.Runtime) (*sql.DB, error) {
	if rt == nil {
		return nil, errNilRuntime
	}
	inner, err := driverConnector(driverName, driverDSN)
	if err != nil {
		// The driver's error about a DSN it cannot read quotes the DSN.
		return nil, fmt.Errorf("crl: open %q: %w", driverName, redact.Error(err))
	}
	wrapped, err := wrapRuntime(inner, rt)
	if err != nil {
		return nil, fmt.Errorf("crl: %w", err)
	}
	return sql.OpenDB(wrapped), nil
}

// errNilRuntime is OpenRuntime's error given no Runtime.
var errNilRuntime = errors.New("crl: OpenRuntime: the Runtime is nil, expected one from config.NewRuntime")
