// Package connector is the connector that every crl handle's new
// connections go through: the JDBC connection loop around the driver's
// own Connect, the server-side execution cut-off, and COMMIT and ROLLBACK
// under their transaction's context for a driver whose Commit takes none.
// config.WrapConnector builds it for a user's own driver.Connector, and
// the adapters' Open for the connector of a DSN: one implementation.
package connector

import (
	"context"
	"database/sql/driver"
	"io"
	"time"

	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/internal/family"
)

// Wrap returns inner with, outermost first, the connection loop of r, the
// COMMIT and ROLLBACK deadlines of fam (MySQL/MariaDB), and the execution
// cut-off when cutoff > 0 (an error for a family that has none). r must
// not be nil.
func Wrap(inner driver.Connector, fam family.Family, r *core.Retrier, cutoff time.Duration) (driver.Connector, error) {
	if cutoff > 0 {
		var err error
		if inner, err = withCutoff(fam, inner, cutoff); err != nil {
			return nil, err
		}
	}
	if commitIgnoresContext(fam) {
		inner = &txContextConnector{Connector: inner}
	}
	return &loopConnector{inner: inner, retrier: r}, nil
}

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
