package pgxcrl

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/crl-go/crl/config"
)

// Pool is a pgxpool.Pool under crl's rules: every statement it runs
// outside a transaction is retried as its Runtime says, and every new
// connection it waits for is opened under the connection loop. It has
// pgxpool.Pool's methods with their signatures, so that sqlc's pgx/v5
// New(db DBTX) and other code written against *pgxpool.Pool's methods
// take it unchanged. It is safe for concurrent use.
type Pool struct {
	pool *pgxpool.Pool
	rt   *config.Runtime
}

// driverName is the name config reads a pgx connection string under: the
// PostgreSQL family's URL (postgres://, postgresql://) and key=value forms.
const driverName = "pgx"

// Open reads crl's keys (retryExec, retryConn, queryTimeout, …; see
// docs/pgx.md) from connString, removes them, and opens a pgxpool.Pool
// with the rest, as pgxpool.New does: pgx's own keys are untouched. Settings
// are layered as for crl.Open: opts > connString > the properties file >
// the defaults. An execution cut-off (executionCutoff) becomes the
// statement_timeout runtime parameter of every new connection. A
// malformed or misspelt crl key is an error naming it; pgx's errors about
// connString mask its password.
func Open(ctx context.Context, connString string, opts ...config.Option) (*Pool, error) {
	rt, pgxConnString, err := config.NewRuntime(driverName, connString, opts...)
	if err != nil {
		return nil, fmt.Errorf("pgxcrl: %w", err)
	}
	cfg, err := pgxpool.ParseConfig(pgxConnString)
	if err != nil {
		return nil, fmt.Errorf("pgxcrl: %w", config.MaskSecrets(err))
	}
	if d := rt.ExecutionCutoff(); d > 0 {
		cfg.ConnConfig.RuntimeParams["statement_timeout"] = millis(d)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("pgxcrl: %w", err)
	}
	return &Pool{pool: pool, rt: rt}, nil
}

// millis is d in whole milliseconds, at least 1 (0 would turn
// statement_timeout off).
func millis(d time.Duration) string { return strconv.FormatInt(max(d.Milliseconds(), 1), 10) }

// errNilPool is Wrap's error for a nil pool.
var errNilPool = errors.New("pgxcrl: Wrap: the pool is nil, expected a *pgxpool.Pool such as pgxpool.New's")

// Wrap returns pool under crl's rules, with the settings of opts, the
// properties file and the defaults (there is no connection string to
// read). Its connections are pool's: an execution cut-off cannot be set
// on them and is an error (set statement_timeout in the pool's
// ConnConfig.RuntimeParams, or use Open). Closing the returned Pool
// closes pool.
func Wrap(pool *pgxpool.Pool, opts ...config.Option) (*Pool, error) {
	if pool == nil {
		return nil, errNilPool
	}
	rt, _, err := config.NewRuntime(driverName, "", opts...)
	if err != nil {
		return nil, fmt.Errorf("pgxcrl: %w", err)
	}
	if rt.ExecutionCutoff() > 0 {
		return nil, errors.New("pgxcrl: Wrap: executionCutoff is set on the connections a pool opens, and this pool was opened already: " +
			"expected statement_timeout in its ConnConfig.RuntimeParams, or pgxcrl.Open")
	}
	return &Pool{pool: pool, rt: rt}, nil
}

// Runtime returns the pool's settings at run time: its Retrier (rules,
// budget), breaker and properties file, for hooks and Reload.
func (p *Pool) Runtime() *config.Runtime { return p.rt }

// Pgx returns the pgxpool.Pool underneath. Statements run on it directly
// are not retried.
func (p *Pool) Pgx() *pgxpool.Pool { return p.pool }

// Close closes the pool, as pgxpool.Pool.Close.
func (p *Pool) Close() { p.pool.Close() }

// Stat returns the pool's statistics, as pgxpool.Pool.Stat.
func (p *Pool) Stat() *pgxpool.Stat { return p.pool.Stat() }

// Config returns a copy of the pool's configuration, as
// pgxpool.Pool.Config (crl's keys are not in it).
func (p *Pool) Config() *pgxpool.Config { return p.pool.Config() }

// Reset closes every connection of the pool, as pgxpool.Pool.Reset.
func (p *Pool) Reset() { p.pool.Reset() }

// Acquire returns a connection of the pool, opened under the connection
// loop when the pool has to open one. Its statements run under the
// pool's rules. Release it when done.
func (p *Pool) Acquire(ctx context.Context) (*Conn, error) {
	c, err := p.acquire(ctx)
	if err != nil {
		return nil, err
	}
	return &Conn{c: c, p: p}, nil
}

// AcquireFunc acquires a connection, calls f with it and releases it
// when f returns, as pgxpool.Pool.AcquireFunc.
func (p *Pool) AcquireFunc(ctx context.Context, f func(*Conn) error) error {
	c, err := p.Acquire(ctx)
	if err != nil {
		return err
	}
	defer c.Release()
	return f(c)
}

// Ping acquires a connection and pings the server with it. The
// connection, when the pool opens one, is opened under the connection
// loop; the ping itself is not retried (it answers whether the database
// can be reached now).
func (p *Pool) Ping(ctx context.Context) error {
	c, err := p.acquire(ctx)
	if err != nil {
		return err
	}
	defer c.Release()
	return c.Ping(ctx)
}

// Exec runs sql outside a transaction under the statement loop, as
// pgxpool.Pool.Exec: on one connection of the pool, held during the
// rule's waits, or on a new one when it broke (a statement a rule
// retries after its connection broke is run again only when it reads).
func (p *Pool) Exec(ctx context.Context, sql string, arguments ...any) (pgconn.CommandTag, error) {
	l := lease{p: p}
	tag, err := execLoop(ctx, p.rt.Retrier(), &l, sql, arguments)
	l.release()
	return tag, err
}

// Query runs sql outside a transaction under the statement loop, as
// pgxpool.Pool.Query. An attempt ends at the query's first row (or its
// end): an error before it is retried as the rules say, one met while
// the later rows are read is returned by the rows' Err and never
// retried. The connection returns to the pool when the rows are closed
// or read to the end.
func (p *Pool) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	rs := &rows{l: lease{p: p}, ctx: ctx, sql: sql}
	return rs.run(args)
}

// QueryRow is Query for at most one row, as pgxpool.Pool.QueryRow: its
// errors, retried as Query's, come from the row's Scan.
func (p *Pool) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	rs := &rows{l: lease{p: p}, ctx: ctx, sql: sql}
	_, _ = rs.run(args) // the error is Scan's
	return (*row)(rs)
}

// acquire returns a connection of the pool. When the pool fails to open
// a new one for it (pgx's ConnectError: the dial, TLS or the startup
// exchange failed), the connection loop runs from that failure: each
// later attempt is another Acquire, which makes the pool log in again.
func (p *Pool) acquire(ctx context.Context) (*pgxpool.Conn, error) {
	c, err := p.pool.Acquire(ctx)
	if err == nil || !loginFailed(ctx, err) {
		return c, err
	}
	return p.reacquire(ctx, err)
}

// reacquire is acquire's connection loop after a first login failed with
// first. (Apart from acquire, so that a connection that the pool has
// does not escape to the loop's closure.)
func (p *Pool) reacquire(ctx context.Context, first error) (*pgxpool.Conn, error) {
	var c *pgxpool.Conn
	err := connectLoop(ctx, p.rt.Retrier(), first, func(actx context.Context) error {
		var err error
		c, err = p.pool.Acquire(actx)
		return err
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// loginFailed reports whether err, from Acquire, is a failed login while
// ctx is alive.
func loginFailed(ctx context.Context, err error) bool {
	var ce *pgconn.ConnectError
	return ctx.Err() == nil && errors.As(err, &ce)
}
