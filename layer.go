package crl

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"

	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/internal/text/redact"
)

// The driver layer. Every pool crl opens (Open, OpenDB, a name from
// Register, WrapConnector, the adapters' Open and OpenDB)
// has a layerConnector at the top of its connector chain. Its connections
// (conn) run every statement outside a transaction under the statement
// loop of the pool's Retrier, record the statements of a transaction or a
// unit (config.Unit) so that its retry checks the rule's filter against the one
// whose error ended it, and hand a query's rows back only once the first
// row (or the end) has been read, so that an error that comes before it
// is retried. Each optional interface of database/sql/driver is offered
// as the driver's connection offers it, or answered as database/sql
// answers without it (driver.ErrSkip, a default), so that database/sql
// does what it does with the driver alone.

// layerConnector is the top of the connector chain of a pool crl opened: the
// connection loop around every Connect of the connector below it, and
// the connections of the driver layer.
type layerConnector struct {
	inner   driver.Connector
	retrier *core.Retrier
	rt      *config.Runtime // the pool's, which RuntimeOf reports
	drv     *layerDriver
	readDSN func(dsn string) (poolSettings, string, error) // see poolSettings.ReadDSN
	// commitUnderContext: the driver's Commit and Rollback take no
	// context, so the layer's transactions end under theirs (commit.go).
	commitUnderContext bool
	dialect            *txDialect // how the family's statement texts begin and end transactions (txscan.go)
	// replayLimit is the statement limit of a transaction's replay
	// record (replay.go); zero: replay off. liveTx is the family's query
	// that tells a live transaction after a statement-only error.
	replayLimit int
	liveTx      string
}

var (
	_ driver.Connector = (*layerConnector)(nil)
	_ io.Closer        = (*layerConnector)(nil)
)

// newConnector returns the layer's connector over inner with p's settings
// (its cut-off is inner's business: see wrapConnector).
func newConnector(inner driver.Connector, p poolSettings) *layerConnector {
	c := &layerConnector{inner: inner, retrier: p.Retrier, rt: p.Runtime, readDSN: p.ReadDSN,
		commitUnderContext: commitIgnoresContext(p.Family), dialect: dialectOf(p.Family),
		replayLimit: p.TxReplayLimit, liveTx: p.Family.Profile().LiveTx}
	c.drv = &layerDriver{c: c}
	return c
}

// Connect opens one connection under the connection loop.
func (c *layerConnector) Connect(ctx context.Context) (driver.Conn, error) {
	inner, err := c.connectInner(ctx)
	if err != nil {
		return nil, err
	}
	return offer(newConn(inner, c)), nil
}

// connectInner opens a connection of the chain below under the
// connection loop. Its error never matches driver.ErrBadConn: database/sql
// would take it for a broken pooled connection and run the whole loop
// again (hideBadConn).
func (c *layerConnector) connectInner(ctx context.Context) (driver.Conn, error) {
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

// Driver returns the layer's driver of this connector, whose connector
// holds the pool's Runtime: database/sql's DB.Driver returns it, which is how crl.RuntimeOf
// finds a pool's Runtime.
func (c *layerConnector) Driver() driver.Driver { return c.drv }

// Close closes the wrapped connector when it can be closed.
func (c *layerConnector) Close() error {
	if cl, ok := c.inner.(io.Closer); ok {
		return cl.Close()
	}
	return nil
}

// layerDriver is the driver.Driver of a pool crl opened (DB.Driver returns
// it). Its Open and OpenConnector read the DSN they are given as the
// pool's opener reads one (poolSettings.ReadDSN): crl's keys never reach the
// driver below.
type layerDriver struct{ c *layerConnector }

var (
	_ driver.Driver        = (*layerDriver)(nil)
	_ driver.DriverContext = (*layerDriver)(nil)
)

// errNoDSN is the error of a Driver whose pool cannot read a DSN.
var errNoDSN = errors.New("crl: this pool's Driver opens no DSN (its connector was wrapped without a DSN reader)")

// Open opens one connection for name, as a connection of the pool that
// OpenConnector(name) returns: under that pool's connection loop, in the
// driver layer, with its settings. database/sql does not call it for a
// pool opened from a connector; it is there for code that calls
// DB.Driver().Open itself.
func (d *layerDriver) Open(name string) (driver.Conn, error) {
	c, err := d.OpenConnector(name)
	if err != nil {
		return nil, err
	}
	return c.Connect(context.Background())
}

// OpenConnector returns the connector of a new pool of the driver below
// for name, in the driver layer. name is read as the pool's opener reads
// a DSN (crl.Open, a name from crl.Register): the pool's options in code,
// then name's crl keys, the properties file, the defaults. The new pool
// has a Runtime of its own (its budget, breaker and rules), and the
// driver gets name without crl's keys. A near-miss of a crl key or a
// malformed value is an error naming the key.
func (d *layerDriver) OpenConnector(name string) (driver.Connector, error) {
	if d.c.readDSN == nil {
		return nil, errNoDSN
	}
	p, driverDSN, err := d.c.readDSN(name)
	if err != nil {
		return nil, fmt.Errorf("crl: %w", err)
	}
	inner, err := connectorOf(d.c.inner.Driver(), driverDSN)
	if err != nil {
		// The driver's error about a DSN it cannot read quotes the DSN.
		return nil, fmt.Errorf("crl: open a connector: %w", redact.Error(err))
	}
	c, err := wrapConnector(inner, p)
	if err != nil {
		return nil, fmt.Errorf("crl: %w", err)
	}
	return c, nil
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
