package pgxcrl

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// lease is the connection one statement runs on, through its attempts:
// a connection of the pool, acquired at the first attempt and held
// during the rule's waits (as the database/sql layer holds its
// connection), replaced by a new one when it broke; or a Conn's own
// connection (held), never replaced nor released.
type lease struct {
	p    *Pool
	c    *pgxpool.Conn
	held *Conn // the Conn whose connection c is, nil for the pool's
}

// resends is how many times a statement that pgx never sent runs again on
// a new connection (database/sql's count for driver.ErrBadConn).
const resends = 2

// conn returns the connection of the next attempt: the one held, unless
// it broke, else a new one of the pool (under the connection loop). A
// broken connection goes back to the pool, which closes it.
func (l *lease) conn(ctx context.Context) (*pgx.Conn, error) {
	if l.c != nil {
		if cn := l.c.Conn(); l.held != nil || !cn.IsClosed() {
			return cn, nil
		}
		l.c.Release()
		l.c = nil
	}
	c, err := l.p.acquire(ctx)
	if err != nil {
		return nil, err
	}
	l.c = c
	return c.Conn(), nil
}

// release returns the pool's connection, if one is held.
func (l *lease) release() {
	if l.c != nil && l.held == nil {
		l.c.Release()
		l.c = nil
	}
}

// unsent reports whether err failed a statement that pgx never sent
// (pgconn.SafeToRetry) on a pool connection that is closed: such a
// statement runs again at once on a new connection, whatever it does,
// as database/sql re-runs one that failed with driver.ErrBadConn.
func (l *lease) unsent(err error) bool {
	return l.held == nil && l.c != nil && pgconn.SafeToRetry(err) && l.c.Conn().IsClosed()
}

// failed closes the pool's connection of a statement that failed with
// an error of the class failover (a primary demoted to read-only, a
// server shutting down): it would reach the same server again. The next
// attempt gets a new connection (conn), and the pool destroys a closed
// one when it is released, so it never hands this one out again. A
// Conn's own connection stays the caller's until its Release (held).
func (l *lease) failed(ctx context.Context, err error) {
	if err == nil || l.c == nil || !failover(l.p, err) {
		return
	}
	if l.held != nil {
		l.held.failover = true
		return
	}
	closeConn(ctx, l.c)
}

// closeConn closes c, telling the server when it can within ctx.
func closeConn(ctx context.Context, c *pgxpool.Conn) { _ = c.Conn().Close(ctx) }

// exec is one attempt of Exec.
func (l *lease) exec(ctx context.Context, sql string, args []any) (pgconn.CommandTag, error) {
	for n := 0; ; n++ {
		cn, err := l.conn(ctx)
		if err != nil {
			return pgconn.CommandTag{}, err
		}
		tag, err := cn.Exec(ctx, sql, args...)
		if err == nil || n == resends || !l.unsent(err) {
			l.failed(ctx, err)
			return tag, err
		}
	}
}
