package pgxcrl

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Conn is a connection acquired from a Pool (Acquire, AcquireFunc). Its
// Exec, Query and QueryRow run under the pool's statement loop on this
// connection, held during the rule's waits, as pgxpool.Conn's methods
// run on it; a connection that broke is not replaced (the caller holds
// it), so only errors the server answered are retried on it. Its
// transactions are the pool's (Begin, BeginTx). Release it when done.
type Conn struct {
	c        *pgxpool.Conn
	p        *Pool
	failover bool // a statement met an error of the class failover: Release closes the connection
}

// Release returns the connection to the pool, as pgxpool.Conn.Release;
// after a statement of the Conn (or of a transaction begun on it) met an
// error of the class failover, it closes the connection first, so that
// the pool destroys it. Calls after the first do nothing.
func (c *Conn) Release() {
	if c.failover {
		closeConn(context.Background(), c.c)
	}
	c.c.Release()
}

// Conn returns the pgx connection underneath. Statements run on it
// directly are not retried.
func (c *Conn) Conn() *pgx.Conn { return c.c.Conn() }

// Exec runs sql under the statement loop on this connection.
func (c *Conn) Exec(ctx context.Context, sql string, arguments ...any) (pgconn.CommandTag, error) {
	l := lease{p: c.p, c: c.c, held: c}
	return execLoop(ctx, c.p.rt.Retrier(), &l, sql, arguments)
}

// Query runs sql under the statement loop on this connection; an attempt
// ends at the first row, as the Pool's Query.
func (c *Conn) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	rs := &rows{l: lease{p: c.p, c: c.c, held: c}, ctx: ctx, sql: sql}
	return rs.run(args)
}

// QueryRow is Query for at most one row; its errors come from Scan.
func (c *Conn) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	rs := &rows{l: lease{p: c.p, c: c.c, held: c}, ctx: ctx, sql: sql}
	_, _ = rs.run(args) // the error is Scan's
	return (*row)(rs)
}

// SendBatch sends b on this connection once, as the Pool's SendBatch.
func (c *Conn) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	bctx, cancel := batchContext(ctx, c.p.rt.Retrier())
	return &batchResults{inner: c.c.SendBatch(bctx, b), l: lease{p: c.p, c: c.c, held: c}, ctx: ctx, cancel: cancel}
}

// CopyFrom copies rowSrc into tableName on this connection once, as the
// Pool's CopyFrom.
func (c *Conn) CopyFrom(ctx context.Context, tableName pgx.Identifier, columnNames []string, rowSrc pgx.CopyFromSource) (int64, error) {
	l := lease{p: c.p, c: c.c, held: c}
	return l.copyFrom(ctx, tableName, columnNames, rowSrc)
}

// Ping pings the server on this connection.
func (c *Conn) Ping(ctx context.Context) error { return c.c.Ping(ctx) }

// Begin begins a transaction on this connection, as BeginTx with the
// default options.
func (c *Conn) Begin(ctx context.Context) (pgx.Tx, error) {
	return c.BeginTx(ctx, pgx.TxOptions{})
}

// BeginTx begins a transaction on this connection, as the Pool's BeginTx;
// the connection stays the caller's when it ends.
func (c *Conn) BeginTx(ctx context.Context, txOptions pgx.TxOptions) (pgx.Tx, error) {
	t, err := c.p.beginOn(ctx, c.c, false, txOptions)
	if err != nil {
		return nil, err
	}
	t.held = c
	return t, nil
}
