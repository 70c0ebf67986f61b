package crl

// The connector that every crl pool's connections come from: the driver
// layer (statements retried inside database/sql's driver interfaces, see
// layer.go), the JDBC connection loop around the driver's own Connect,
// the server-side execution cut-off, and COMMIT and ROLLBACK under their
// transaction's context for a driver whose Commit takes none.
// WrapConnector builds it for a user's own driver.Connector, and
// openRuntime for the connector of a DSN: one implementation.

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"time"

	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/internal/tables/family"
)

// WrapConnector returns c under crl's driver layer and connection loop,
// for plain database/sql (sql.OpenDB; OpenDB does both), sqlc, ent, bun
// and every other user of a driver.Connector, with the handle's Runtime:
// one budget, one breaker, one properties file. Every Connect of the
// returned connector — every new pooled connection — runs the JDBC
// connection algorithm around c.Connect (both loops, loginTimeout, the
// retry budget, the events), sets the execution cut-off when one is
// configured, and, for MySQL/MariaDB, ends COMMIT and ROLLBACK under their
// transaction's context; its connections run every statement outside a
// transaction under the Runtime's statement loop (docs/databasesql.md).
//
// driverName names the family (sqlserver, mssql, azuresql, mysql, pgx,
// postgres, …; docs/families.md); a wrapped name (sqlserver-otel) needs
// config.WithDriverFamily. Settings come from opts, the properties file
// and the defaults (there is no DSN to read). A driver of no known family
// gets the connection loop too, with its errors classified by their
// shape; an execution cut-off is then an error.
func WrapConnector(c driver.Connector, driverName string, opts ...Option) (driver.Connector, *config.Runtime, error) {
	if isNil(c) {
		// A nil pointer in a non-nil interface would panic at the first
		// Connect, far from here.
		if c == nil {
			return nil, nil, errors.New("crl: WrapConnector: the connector is nil, expected a driver.Connector such as mssql.NewConnector's")
		}
		return nil, nil, fmt.Errorf("crl: WrapConnector: the connector is a nil %T, expected a driver.Connector such as mssql.NewConnector's", c)
	}
	rt, _, err := config.NewRuntime(driverName, "", opts...)
	if err != nil {
		return nil, nil, fmt.Errorf("crl: %w", err)
	}
	wrapped, err := wrapRuntime(c, rt)
	if err != nil {
		return nil, nil, fmt.Errorf("crl: WrapConnector: %w", err)
	}
	return wrapped, rt, nil
}

// wrapRuntime returns c under the driver layer and connection loop with
// rt's settings: the connector of a pool whose Runtime is rt (RuntimeOf
// reports it). Open, OpenDB, a Register name and the adapters build their
// pools with it. It sets the execution cut-off on every new connection
// when rt has one, and for MySQL/MariaDB ends COMMIT and ROLLBACK under
// their transaction's context.
//
// The pool's Driver (DB.Driver) reads a DSN it is given (Open,
// OpenConnector) as config.NewRuntime does, with rt's driver name and
// options in code (config.Runtime.ForDSN): that DSN's keys over the
// properties file and the defaults, each such DSN a Runtime of its own,
// and the driver below gets the DSN without crl's keys.
func wrapRuntime(c driver.Connector, rt *config.Runtime) (*layerConnector, error) {
	return wrapConnector(c, settingsOf(rt))
}

// settingsOf returns what the driver layer keeps of rt.
func settingsOf(rt *config.Runtime) poolSettings {
	return poolSettings{Runtime: rt, Retrier: rt.Retrier(), Family: family.Of(rt.DriverFamily()),
		Cutoff: rt.ExecutionCutoff(), TxReplayLimit: rt.TxReplayLimit(), ReadDSN: func(dsn string) (poolSettings, string, error) {
			other, driverDSN, err := rt.ForDSN(dsn)
			if err != nil {
				return poolSettings{}, "", err
			}
			return settingsOf(other), driverDSN, nil
		}}
}

// poolSettings is what the driver layer keeps of the settings of a pool.
type poolSettings struct {
	// Runtime is the pool's, which RuntimeOf reports; nil only in the
	// layer's own tests.
	Runtime *config.Runtime
	// Retrier runs the pool's statements and connections. It must not be
	// nil.
	Retrier *core.Retrier
	// Family is the pool's database family: its Profile says whether
	// its transactions end under their context, how its statement texts
	// begin and end transactions, and how to set the execution cut-off.
	Family family.Family
	// Cutoff is the execution cut-off of every new connection; zero: none.
	Cutoff time.Duration
	// TxReplayLimit is how many statements a transaction records for its
	// replay (a longer one is not replayed); zero: transactions are not
	// recorded nor replayed (txReplay=off).
	TxReplayLimit int
	// ReadDSN reads a DSN given to the pool's Driver (Open,
	// OpenConnector) as the pool's opener reads its own: it returns the
	// settings of a new pool and the DSN without crl's keys, for the
	// driver. nil: the Driver refuses every DSN.
	ReadDSN func(dsn string) (poolSettings, string, error)
}

// wrapConnector returns inner with, outermost first, the driver layer and the
// connection loop of p.Retrier (layerConnector), whose transactions end under
// their context where p.Family's driver ends them without it, and the
// execution cut-off when
// p.Cutoff > 0 (an error for a family that has none).
func wrapConnector(inner driver.Connector, p poolSettings) (*layerConnector, error) {
	if p.Cutoff > 0 {
		var err error
		if inner, err = withCutoff(p.Family, inner, p.Cutoff); err != nil {
			return nil, err
		}
	}
	return newConnector(inner, p), nil
}

// connectorOf returns drv's connector for dsn: its OpenConnector's when drv
// is a driver.DriverContext, else one whose Connect is drv.Open(dsn).
func connectorOf(drv driver.Driver, dsn string) (driver.Connector, error) {
	if dc, ok := drv.(driver.DriverContext); ok {
		return dc.OpenConnector(dsn)
	}
	return dsnConnector{dsn: dsn, drv: drv}, nil
}

// dsnConnector is the connector of a driver without driver.DriverContext.
type dsnConnector struct {
	dsn string
	drv driver.Driver
}

func (c dsnConnector) Connect(context.Context) (driver.Conn, error) { return c.drv.Open(c.dsn) }
func (c dsnConnector) Driver() driver.Driver                        { return c.drv }
