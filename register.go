package crl

import (
	"context"
	"crypto/rand"
	"database/sql"
	"database/sql/driver"
	"encoding/hex"
	"fmt"
	"slices"

	"github.com/crl-go/crl/config"
)

// Register registers, with database/sql, a driver that is driverName's
// driver under crl, and returns its name ("crl-sqlserver-1f0c…"): code
// that opens its pool by name — sqlx.Connect(name, dsn), a GORM
// dialector's DriverName, a framework's configuration — opens it with crl
// inside. Each pool opened with the name has its own rules, read from
// opts, its DSN (crl's keys are removed before the driver sees it), the
// properties file and the defaults.
//
// sqlx binds parameters by driver name: for a name Register returned, tell
// it the bind type of the driver below, as sqlxcrl does by itself:
//
//	sqlx.BindDriver(name, sqlx.BindType("sqlserver"))
//
// An unknown driverName or an invalid option is an error.
func Register(driverName string, opts ...Option) (string, error) {
	if !slices.Contains(sql.Drivers(), driverName) {
		return "", fmt.Errorf("crl: Register: no database/sql driver is registered as %q (expected one of %q; import the driver's package)", driverName, sql.Drivers())
	}
	if _, _, err := config.NewRuntime(driverName, "", opts...); err != nil {
		return "", fmt.Errorf("crl: Register: %w", err)
	}
	var suffix [6]byte
	if _, err := rand.Read(suffix[:]); err != nil {
		return "", fmt.Errorf("crl: Register: %w", err)
	}
	name := "crl-" + driverName + "-" + hex.EncodeToString(suffix[:])
	sql.Register(name, &registered{driverName: driverName, opts: slices.Clone(opts)})
	return name, nil
}

// registered is the driver of a name Register returned.
type registered struct {
	driverName string
	opts       []Option
}

var (
	_ driver.Driver        = (*registered)(nil)
	_ driver.DriverContext = (*registered)(nil)
)

// Open opens one connection for dsn; database/sql uses OpenConnector.
func (d *registered) Open(dsn string) (driver.Conn, error) {
	c, err := d.OpenConnector(dsn)
	if err != nil {
		return nil, err
	}
	return c.Connect(context.Background())
}

// OpenConnector returns the connector of one pool: its own Runtime from
// the options, dsn, the properties file and the defaults.
func (d *registered) OpenConnector(dsn string) (driver.Connector, error) {
	rt, driverDSN, err := config.NewRuntime(d.driverName, dsn, d.opts...)
	if err != nil {
		return nil, fmt.Errorf("crl: %w", err)
	}
	inner, err := driverConnector(d.driverName, driverDSN)
	if err != nil {
		return nil, fmt.Errorf("crl: open %q: %w", d.driverName, err)
	}
	c, err := wrapRuntime(inner, rt)
	if err != nil {
		return nil, fmt.Errorf("crl: %w", err)
	}
	return c, nil
}
