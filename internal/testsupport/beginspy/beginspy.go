// Package beginspy wraps a driver.Connector so that a test sees the
// context every transaction is begun with below crl's driver layer, as a
// driver or a tracing wrapper placed there (crl.OpenDB over it) sees it.
package beginspy

import (
	"context"
	"database/sql/driver"
	"sync"
)

// Connector is a driver.Connector whose connections call Seen with the
// context of every BeginTx before they begin the transaction below.
type Connector struct {
	driver.Connector
	mu   sync.Mutex
	seen func(ctx context.Context)
}

// New returns c with seen called for every BeginTx; seen runs under a
// lock, one call at a time.
func New(c driver.Connector, seen func(ctx context.Context)) *Connector {
	return &Connector{Connector: c, seen: seen}
}

// Connect opens a connection of the connector below, spied on.
func (s *Connector) Connect(ctx context.Context) (driver.Conn, error) {
	c, err := s.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return conn{Conn: c, spy: s}, nil
}

// conn is a connection below with BeginTx spied on; it prepares every
// statement (it offers no ExecerContext or QueryerContext) and resets
// its session as the one below does.
type conn struct {
	driver.Conn
	spy *Connector
}

// BeginTx tells the spy, then begins the transaction below.
func (c conn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	c.spy.mu.Lock()
	c.spy.seen(ctx)
	c.spy.mu.Unlock()
	if b, ok := c.Conn.(driver.ConnBeginTx); ok {
		return b.BeginTx(ctx, opts)
	}
	return c.Conn.Begin() //nolint:staticcheck // the driver's only form
}

// PrepareContext prepares on the connection below.
func (c conn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	if p, ok := c.Conn.(driver.ConnPrepareContext); ok {
		return p.PrepareContext(ctx, query)
	}
	return c.Conn.Prepare(query)
}

// ResetSession resets the connection below when it can be reset.
func (c conn) ResetSession(ctx context.Context) error {
	if r, ok := c.Conn.(driver.SessionResetter); ok {
		return r.ResetSession(ctx)
	}
	return nil
}
