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
	"database/sql/driver"
	"time"

	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/internal/tables/family"
)

// Wrap returns inner with, outermost first, the driver layer and the
// connection loop of r (Connector), whose transactions end under their
// context for fam MySQL/MariaDB, and the execution cut-off when cutoff > 0
// (an error for a family that has none). owner is what the pool's Driver
// reports as its Owner (the pool's *config.Runtime). r must not be nil.
func Wrap(inner driver.Connector, fam family.Family, owner any, r *core.Retrier, cutoff time.Duration) (*Connector, error) {
	if cutoff > 0 {
		var err error
		if inner, err = withCutoff(fam, inner, cutoff); err != nil {
			return nil, err
		}
	}
	return newConnector(inner, r, owner, fam), nil
}
