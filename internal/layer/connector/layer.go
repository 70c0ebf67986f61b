package connector

import (
	"context"
	"database/sql/driver"
	"errors"
	"io"

	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/internal/tables/family"
)

// The driver layer. Every pool crl opens (crl.Open, crl.OpenDB, a name
// from crl.Register, the adapters' Open and OpenDB, config.WrapConnector)
// has a Connector at the top of its connector chain. Its connections
// (conn) run every statement outside a transaction under the statement
// loop of the pool's Retrier, record the statements of a transaction or a
// unit (Unit) so that its retry checks the rule's filter against the one
// whose error ended it, and hand a query's rows back only once the first
// row (or the end) has been read, so that an error that comes before it
// is retried. Each optional interface of database/sql/driver is offered
// as the driver's connection offers it, or answered as database/sql
// answers without it (driver.ErrSkip, a default), so that database/sql
// does what it does with the driver alone.

// Connector is the top of the connector chain of a pool crl opened: the
// connection loop around every Connect of the connector below it, and
// the connections of the driver layer.
type Connector struct {
	inner   driver.Connector
	retrier *core.Retrier
	owner   any // the *config.Runtime of the pool (see Owner)
	drv     *Driver
	// commitUnderContext: the driver's Commit and Rollback take no
	// context, so the layer's transactions end under theirs (commit.go).
	commitUnderContext bool
	dialect            *txDialect // how the family's statement texts begin and end transactions (txscan.go)
}

var (
	_ driver.Connector = (*Connector)(nil)
	_ io.Closer        = (*Connector)(nil)
)

// newConnector returns the layer's connector over inner, a driver of
// family fam.
func newConnector(inner driver.Connector, r *core.Retrier, owner any, fam family.Family) *Connector {
	c := &Connector{inner: inner, retrier: r, owner: owner, commitUnderContext: commitIgnoresContext(fam), dialect: dialectOf(fam)}
	c.drv = &Driver{c: c}
	return c
}

// Connect opens one connection under the connection loop.
func (c *Connector) Connect(ctx context.Context) (driver.Conn, error) {
	inner, err := c.connectInner(ctx)
	if err != nil {
		return nil, err
	}
	return newConn(inner, c), nil
}

// connectInner opens a connection of the chain below under the
// connection loop. Its error never matches driver.ErrBadConn: database/sql
// would take it for a broken pooled connection and run the whole loop
// again (hideBadConn).
func (c *Connector) connectInner(ctx context.Context) (driver.Conn, error) {
	var conn driver.Conn
	err := c.retrier.Connect(ctx, func(ctx context.Context) error {
		var err error
		conn, err = c.inner.Connect(ctx)
		return err
	})
	if err != nil {
		return nil, hideBadConn(err)
	}
	return conn, nil
}

// Driver returns the layer's driver of this connector, whose Owner is the
// pool's: database/sql's DB.Driver returns it, which is how crl.RuntimeOf
// finds a pool's Runtime.
func (c *Connector) Driver() driver.Driver { return c.drv }

// Close closes the wrapped connector when it can be closed.
func (c *Connector) Close() error {
	if cl, ok := c.inner.(io.Closer); ok {
		return cl.Close()
	}
	return nil
}

// Retrier returns the Retrier of the pool's statements.
func (c *Connector) Retrier() *core.Retrier { return c.retrier }

// Driver is the driver.Driver of a pool crl opened (DB.Driver returns
// it). Open opens a connection of the driver below with that name, in
// the driver layer, under the pool's rules.
type Driver struct{ c *Connector }

var _ driver.Driver = (*Driver)(nil)

// Open opens a connection of the wrapped driver for name, under the
// connection loop and in the driver layer. database/sql does not call it
// for a pool opened from a connector; it is there for code that calls
// DB.Driver().Open itself.
func (d *Driver) Open(name string) (driver.Conn, error) {
	var conn driver.Conn
	err := d.c.retrier.Connect(context.Background(), func(context.Context) error {
		var err error
		conn, err = d.c.inner.Driver().Open(name)
		return err
	})
	if err != nil {
		return nil, hideBadConn(err)
	}
	return newConn(conn, d.c), nil
}

// Owner returns what the pool's opener attached to the connector: the
// pool's *config.Runtime.
func (d *Driver) Owner() any { return d.c.owner }

// Connector returns the pool's connector.
func (d *Driver) Connector() *Connector { return d.c }

// Unwrap returns the driver's own connection under a connection of the
// driver layer (what (*sql.Conn).Raw hands its function); any other value
// is returned unchanged.
func Unwrap(driverConn any) any {
	for {
		u, ok := driverConn.(interface{ driverConn() driver.Conn })
		if !ok {
			return driverConn
		}
		driverConn = u.driverConn()
	}
}

// errLoginBadConn stands for driver.ErrBadConn in the error of a
// connection loop that gave up.
var errLoginBadConn = errors.New("the connection broke during the login (driver: bad connection)")

// hideBadConn returns err with every driver.ErrBadConn in its chain
// replaced by errLoginBadConn, the rest of the chain (the driver's
// errors, a *core.RetryError and its reason) kept: a connection error that
// matches driver.ErrBadConn makes database/sql open a connection again,
// which runs the whole connection loop again.
func hideBadConn(err error) error {
	if err == nil || !errors.Is(err, driver.ErrBadConn) {
		return err
	}
	if err == driver.ErrBadConn {
		return errLoginBadConn
	}
	if re, ok := err.(*core.RetryError); ok {
		c := *re
		c.Err, c.CtxErr = hideBadConn(re.Err), hideBadConn(re.CtxErr)
		return &c
	}
	var below []error
	switch x := err.(type) {
	case interface{ Unwrap() []error }:
		below = x.Unwrap()
	case interface{ Unwrap() error }:
		below = []error{x.Unwrap()}
	}
	hidden := make([]error, 0, len(below))
	for _, e := range below {
		if e = hideBadConn(e); e != nil {
			hidden = append(hidden, e)
		}
	}
	return &badConnHidden{msg: err.Error(), below: hidden}
}

// badConnHidden is an error of a chain that matched driver.ErrBadConn,
// with its message, over its causes with driver.ErrBadConn hidden.
type badConnHidden struct {
	msg   string
	below []error
}

func (e *badConnHidden) Error() string   { return e.msg }
func (e *badConnHidden) Unwrap() []error { return e.below }
