package connector

import (
	"context"
	"database/sql/driver"
	"errors"
	"sync/atomic"

	"github.com/crl-go/crl/internal/family"
)

// commitIgnoresContext reports whether the driver family's Tx.Commit and
// Tx.Rollback run without the transaction's context, so that a COMMIT
// stalled on the wire outlives the caller's deadline: go-sql-driver/mysql's
// do (database/sql gives a driver's Commit no context). go-mssqldb's and
// pgx's run under the context given to BeginTx, and need nothing more.
func commitIgnoresContext(fam family.Family) bool { return fam == family.MySQL }

// txContextConnector wraps the connector of a driver whose Commit and
// Rollback take no context, so that every connection's COMMIT and
// ROLLBACK run under the context of their transaction (BeginTx's).
type txContextConnector struct{ driver.Connector }

// Connect opens a connection whose transactions end under their context.
func (c *txContextConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &txContextConn{Conn: conn}, nil
}

// Close closes the wrapped connector when it can be closed.
func (c *txContextConnector) Close() error {
	if cl, ok := c.Connector.(interface{ Close() error }); ok {
		return cl.Close()
	}
	return nil
}

// txContextConn is a driver's connection whose transactions end under
// their context. It passes every optional interface database/sql looks
// for on to the driver's connection, and answers as database/sql would
// without it when the driver's connection lacks one.
type txContextConn struct {
	driver.Conn
	// broken is set when a COMMIT or ROLLBACK was cut off or refused for
	// its context: the connection may be inside a transaction, so it must
	// never go back to the pool (the server rolls back what it does not
	// commit when the connection closes).
	broken atomic.Bool
}

var (
	_ driver.ConnBeginTx        = (*txContextConn)(nil)
	_ driver.ConnPrepareContext = (*txContextConn)(nil)
	_ driver.ExecerContext      = (*txContextConn)(nil)
	_ driver.QueryerContext     = (*txContextConn)(nil)
	_ driver.Pinger             = (*txContextConn)(nil)
	_ driver.SessionResetter    = (*txContextConn)(nil)
	_ driver.Validator          = (*txContextConn)(nil)
	_ driver.NamedValueChecker  = (*txContextConn)(nil)
)

// driverConn returns the driver's connection, for Unwrap.
func (c *txContextConn) driverConn() driver.Conn { return c.Conn }

// BeginTx begins a transaction whose Commit and Rollback run under ctx.
func (c *txContextConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	var (
		tx  driver.Tx
		err error
	)
	if b, ok := c.Conn.(driver.ConnBeginTx); ok {
		tx, err = b.BeginTx(ctx, opts)
	} else {
		tx, err = c.Conn.Begin() //nolint:staticcheck // the fallback of a driver without ConnBeginTx, as database/sql's
	}
	if err != nil {
		return nil, err
	}
	return &txContextTx{ctx: ctx, conn: c, tx: tx}, nil
}

// PrepareContext prepares on the driver's connection.
func (c *txContextConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	if p, ok := c.Conn.(driver.ConnPrepareContext); ok {
		return p.PrepareContext(ctx, query)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return c.Conn.Prepare(query)
}

// ExecContext runs query on the driver's connection, or returns
// driver.ErrSkip (database/sql then prepares it) when it cannot.
func (c *txContextConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	if e, ok := c.Conn.(driver.ExecerContext); ok {
		return e.ExecContext(ctx, query, args)
	}
	return nil, driver.ErrSkip
}

// QueryContext runs query on the driver's connection, or returns
// driver.ErrSkip when it cannot.
func (c *txContextConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	if q, ok := c.Conn.(driver.QueryerContext); ok {
		return q.QueryContext(ctx, query, args)
	}
	return nil, driver.ErrSkip
}

// Ping pings the driver's connection, if it can be pinged.
func (c *txContextConn) Ping(ctx context.Context) error {
	if p, ok := c.Conn.(driver.Pinger); ok {
		return p.Ping(ctx)
	}
	return nil
}

// ResetSession refuses a broken connection, else resets the driver's.
func (c *txContextConn) ResetSession(ctx context.Context) error {
	if c.broken.Load() {
		return driver.ErrBadConn
	}
	if r, ok := c.Conn.(driver.SessionResetter); ok {
		return r.ResetSession(ctx)
	}
	return nil
}

// IsValid is false for a broken connection, else the driver's answer.
func (c *txContextConn) IsValid() bool {
	if c.broken.Load() {
		return false
	}
	if v, ok := c.Conn.(driver.Validator); ok {
		return v.IsValid()
	}
	return true
}

// CheckNamedValue is the driver's, or driver.ErrSkip (the default
// conversion) when it has none.
func (c *txContextConn) CheckNamedValue(nv *driver.NamedValue) error {
	if n, ok := c.Conn.(driver.NamedValueChecker); ok {
		return n.CheckNamedValue(nv)
	}
	return driver.ErrSkip
}

// txContextTx is a driver's transaction that ends under its context.
type txContextTx struct {
	ctx  context.Context
	conn *txContextConn
	tx   driver.Tx
}

// Commit commits under the transaction's context.
func (t *txContextTx) Commit() error { return t.end(true) }

// Rollback rolls back under the transaction's context.
func (t *txContextTx) Rollback() error { return t.end(false) }

// end runs COMMIT (commit) or ROLLBACK through the driver's
// context-aware ExecContext, whose own cancellation closes the connection
// when ctx ends, so a stall on the wire returns at the deadline with ctx's
// error: for COMMIT an outcome unknown (CommitOutcome), never a hang or a
// success it cannot know. A context that ends nothing, or a driver without
// ExecContext, takes the driver's own path.
func (t *txContextTx) end(commit bool) error {
	stmt, plain := "ROLLBACK", t.tx.Rollback
	if commit {
		stmt, plain = "COMMIT", t.tx.Commit
	}
	ex, ok := t.conn.Conn.(driver.ExecerContext)
	if t.ctx.Done() == nil || !ok {
		return plain()
	}
	if err := t.ctx.Err(); err != nil {
		// Too late to send anything: the connection closes, and the server
		// rolls the transaction back. For a COMMIT that is still no
		// success, and the error says it is a broken connection.
		t.conn.broken.Store(true)
		return errors.Join(driver.ErrBadConn, err)
	}
	_, err := ex.ExecContext(t.ctx, stmt, nil)
	if errors.Is(err, driver.ErrSkip) {
		return plain()
	}
	if err != nil && (t.ctx.Err() != nil || errors.Is(err, driver.ErrBadConn)) {
		t.conn.broken.Store(true)
	}
	return err
}
