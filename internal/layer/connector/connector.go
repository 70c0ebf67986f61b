// Package connector is the connector that every crl handle's connections
// come from: the driver layer (statements retried inside database/sql's
// driver interfaces, see layer.go), the JDBC connection loop around the
// driver's own Connect, the server-side execution cut-off, and COMMIT and
// ROLLBACK under their transaction's context for a driver whose Commit
// takes none.
// config.WrapConnector builds it for a user's own driver.Connector, and
// the adapters' Open for the connector of a DSN: one implementation.
package connector

import (
	"context"
	"database/sql/driver"
	"time"

	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/internal/tables/family"
)

// Pool is what the driver layer keeps of the settings of a pool.
type Pool struct {
	// Owner is what the pool's Driver reports as its Owner: the pool's
	// *config.Runtime.
	Owner any
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
	ReadDSN func(dsn string) (Pool, string, error)
}

// Wrap returns inner with, outermost first, the driver layer and the
// connection loop of p.Retrier (Connector), whose transactions end under
// their context where p.Family's driver ends them without it, and the
// execution cut-off when
// p.Cutoff > 0 (an error for a family that has none).
func Wrap(inner driver.Connector, p Pool) (*Connector, error) {
	if p.Cutoff > 0 {
		var err error
		if inner, err = withCutoff(p.Family, inner, p.Cutoff); err != nil {
			return nil, err
		}
	}
	return newConnector(inner, p), nil
}

// OfDriver returns drv's connector for dsn: its OpenConnector's when drv
// is a driver.DriverContext, else one whose Connect is drv.Open(dsn).
func OfDriver(drv driver.Driver, dsn string) (driver.Connector, error) {
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
