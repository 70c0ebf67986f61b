package sqlxcrl

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"

	"github.com/jmoiron/sqlx"

	"github.com/crl-go/crl"
	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/internal/tables/family"
)

// DB is a *sqlx.DB over a pool. Over a pool crl opened, its driver layer
// retries the statements and runs the connection loop for new
// connections, and RunInTx retries whole transactions; over a pool crl did
// not open, every statement and unit runs once, as with sqlx alone. It is
// safe for concurrent use.
type DB struct {
	*sqlx.DB
	retrier *core.Retrier   // nil over a pool crl did not open
	runtime *config.Runtime // nil over a pool crl did not open
}

// Compile-time checks: *DB is still usable wherever sqlx takes a handle.
var (
	_ sqlx.ExtContext     = (*DB)(nil)
	_ sqlx.Ext            = (*DB)(nil)
	_ sqlx.QueryerContext = (*DB)(nil)
	_ sqlx.Preparer       = (*DB)(nil)
)

// Open opens a database like sqlx.Open: driverName is a registered driver
// ("sqlserver", "mysql", "pgx"), dsn its DSN with the retry settings in it
// (retryExec, retryConn, connectRetryCount, …; they are removed before the
// driver sees the DSN). It does not connect.
func Open(driverName, dsn string, opts ...Option) (*DB, error) {
	rt, driverDSN, err := config.NewRuntime(driverName, dsn, opts...)
	if err != nil {
		return nil, fmt.Errorf("sqlxcrl: %w", err)
	}
	sqlDB, err := crl.OpenRuntime(driverName, driverDSN, rt)
	if err != nil {
		return nil, fmt.Errorf("sqlxcrl: %w", err)
	}
	return &DB{DB: sqlx.NewDb(sqlDB, bindName(driverName, rt)), retrier: rt.Retrier(), runtime: rt}, nil
}

// bindName is the driver name whose bind type (?, $1, @p1) sqlx uses for
// a handle: driverName, or for a name that sqlx does not know (azuresql,
// or sqlserver-otelsql-0 that config.WithDriverFamily names) of a family
// crl knows, the family's (family.Profile.BindDriver).
func bindName(driverName string, rt *config.Runtime) string {
	if f, ok := family.Parse(rt.DriverFamily()); ok && sqlx.BindType(driverName) == sqlx.UNKNOWN {
		return f.Profile().BindDriver
	}
	return driverName
}

// OpenDB opens a database over a driver.Connector of your own, like
// sql.OpenDB with sqlx on top, with crl: every new pooled connection runs
// the connection loop around c.Connect (crl.WrapConnector), and the
// statements and RunInTx run under the statement loops of the same
// handle (one budget, one breaker, one properties file). driverName names
// the driver's family (sqlserver, mysql, pgx, …; a wrapped name needs
// config.WithDriverFamily) and sets sqlx's bind type. There is no DSN:
// settings come from opts, the properties file and the defaults. It does
// not connect.
func OpenDB(c driver.Connector, driverName string, opts ...Option) (*DB, error) {
	wrapped, rt, err := crl.WrapConnector(c, driverName, opts...)
	if err != nil {
		return nil, fmt.Errorf("sqlxcrl: %w", err)
	}
	return &DB{DB: sqlx.NewDb(sql.OpenDB(wrapped), bindName(driverName, rt)), retrier: rt.Retrier(), runtime: rt}, nil
}

// Connect is Open and Ping; the ping runs the connection loop.
func Connect(driverName, dsn string, opts ...Option) (*DB, error) {
	return ConnectContext(context.Background(), driverName, dsn, opts...)
}

// ConnectContext is Open and PingContext.
func ConnectContext(ctx context.Context, driverName, dsn string, opts ...Option) (*DB, error) {
	db, err := Open(driverName, dsn, opts...)
	if err != nil {
		return nil, err
	}
	if err := db.PingContext(ctx); err != nil {
		if cerr := db.Close(); cerr != nil {
			return nil, fmt.Errorf("sqlxcrl: connect: %w (and close: %w)", err, cerr)
		}
		return nil, err
	}
	return db, nil
}

// MustOpen is Open that panics on error, like sqlx.MustOpen.
func MustOpen(driverName, dsn string, opts ...Option) *DB {
	db, err := Open(driverName, dsn, opts...)
	if err != nil {
		panic(err)
	}
	return db
}

// MustConnect is Connect that panics on error, like sqlx.MustConnect.
func MustConnect(driverName, dsn string, opts ...Option) *DB {
	db, err := Connect(driverName, dsn, opts...)
	if err != nil {
		panic(err)
	}
	return db
}

// NewDb wraps an existing *sql.DB, like sqlx.NewDb: a new handle with
// sqlx's default Mapper, not unsafe. sqlx's idiom for a second handle over
// a pool, sqlx.NewDb(db.DB, name), is sqlxcrl.NewDb(db.DB.DB, name).
//
// Over a pool crl opened, its driver layer retries the statements under
// the pool's rules; opts, when given, set those of the handle's RunInTx
// and whole reads. Over a pool crl did not open (sql.Open's), every
// statement, whole read and RunInTx runs once, as with sqlx alone, and
// the handle has no Runtime and no Retrier. There, settings given in opts
// are refused with ErrForeignPoolSettings, which names crl.OpenDB; an
// observer alone (config.WithObserver) is accepted and told once, here,
// that nothing on the pool is retried (config.ForeignPool).
//
// NewDb cannot return an error (its signature is sqlx's) and does not
// panic: given an invalid option or properties file, settings for a pool
// crl did not open, or a nil db, every use of the returned DB (statement,
// Ping, RunInTx) fails with the error that names the problem. WrapDB
// returns that error instead.
func NewDb(db *sql.DB, driverName string, opts ...Option) *DB {
	out, err := WrapDB(db, driverName, opts...)
	if err != nil {
		return &DB{DB: sqlx.NewDb(sql.OpenDB(failingConnector{err}), driverName)}
	}
	return out
}

// WrapDB is NewDb that returns the error of an invalid option or
// properties file, of settings given for a pool crl did not open
// (ErrForeignPoolSettings), or of a nil pool, instead of a DB whose every
// statement fails with it.
func WrapDB(db *sql.DB, driverName string, opts ...Option) (*DB, error) {
	rt, crlPool := crl.RuntimeOf(db)
	if db != nil && !crlPool {
		if err := config.ForeignPool("sqlxcrl", fmt.Sprintf("the *sql.DB of driver %q", driverName), opts...); err != nil {
			return nil, err
		}
		return &DB{DB: sqlx.NewDb(db, driverName)}, nil
	}
	if len(opts) > 0 {
		var err error
		if rt, _, err = config.NewRuntime(driverName, "", opts...); err != nil {
			return nil, fmt.Errorf("sqlxcrl: %w", err)
		}
	}
	if db == nil {
		return nil, ErrNilPool
	}
	return &DB{DB: sqlx.NewDb(db, bindName(driverName, rt)), retrier: rt.Retrier(), runtime: rt}, nil
}

// ErrForeignPoolSettings is the error of WrapDB, and of every use of the
// DB that NewDb returns, given settings for a *sql.DB that crl did not
// open: its driver has no crl layer to apply them. It is
// config.ErrForeignPoolSettings, which gormcrl's refusal wraps too.
var ErrForeignPoolSettings = config.ErrForeignPoolSettings

// ErrNilPool is the error of NewDb and WrapDB given a nil *sql.DB (whose
// statements would otherwise panic).
var ErrNilPool = errors.New("sqlxcrl: the pool to wrap is nil")

// Retrier returns the retry engine of this DB's whole transactions and
// whole reads (nil over a pool crl did not open, or when NewDb refused its
// arguments).
func (db *DB) Retrier() *core.Retrier { return db.retrier }

// Runtime returns this DB's configuration at run time (nil over a pool crl
// did not open, or when NewDb refused its arguments).
func (db *DB) Runtime() *config.Runtime { return db.runtime }

// Unsafe returns a DB that, like sqlx's, silently ignores columns with no
// destination field; it shares the retry engine.
func (db *DB) Unsafe() *DB {
	return &DB{DB: db.DB.Unsafe(), retrier: db.retrier, runtime: db.runtime}
}

// GetContext runs a one-row query and scans it into dest, like
// sqlx.GetContext, the query and the scan together under the statement
// loop: an error met while the row is read is retried by the rules too.
// sql.ErrNoRows is returned unchanged.
func (db *DB) GetContext(ctx context.Context, dest any, query string, args ...any) error {
	return read(ctx, db.retrier, query, dest, func(ctx context.Context) error {
		return sqlx.GetContext(ctx, db.DB, dest, query, args...)
	})
}

// Get is GetContext with context.Background().
func (db *DB) Get(dest any, query string, args ...any) error {
	return db.GetContext(context.Background(), dest, query, args...)
}

// SelectContext runs a query and scans every row into dest, like
// sqlx.SelectContext, the query and the whole read together under the
// statement loop: an error met while the rows are read is retried by the
// rules too, after the rows of the failed attempt are dropped from dest.
func (db *DB) SelectContext(ctx context.Context, dest any, query string, args ...any) error {
	return read(ctx, db.retrier, query, dest, func(ctx context.Context) error {
		return sqlx.SelectContext(ctx, db.DB, dest, query, args...)
	})
}

// Select is SelectContext with context.Background().
func (db *DB) Select(dest any, query string, args ...any) error {
	return db.SelectContext(context.Background(), dest, query, args...)
}

// PreparexContext prepares a statement whose whole reads (Get, Select)
// are retried as DB's are; over a pool crl opened, its driver layer
// retries the PREPARE and the other executions.
func (db *DB) PreparexContext(ctx context.Context, query string) (*Stmt, error) {
	s, err := db.DB.PreparexContext(ctx, query)
	if err != nil {
		return nil, err
	}
	return &Stmt{Stmt: s, query: query, retrier: db.retrier}, nil
}

// Preparex is PreparexContext with context.Background().
func (db *DB) Preparex(query string) (*Stmt, error) {
	return db.PreparexContext(context.Background(), query)
}

// PrepareNamedContext prepares a named statement whose whole reads are
// retried as DB's are (see PreparexContext).
func (db *DB) PrepareNamedContext(ctx context.Context, query string) (*NamedStmt, error) {
	s, err := db.DB.PrepareNamedContext(ctx, query)
	if err != nil {
		return nil, err
	}
	return &NamedStmt{NamedStmt: s, retrier: db.retrier}, nil
}

// PrepareNamed is PrepareNamedContext with context.Background().
func (db *DB) PrepareNamed(query string) (*NamedStmt, error) {
	return db.PrepareNamedContext(context.Background(), query)
}

// BeginTxx begins a transaction whose statements are never retried one by
// one (see RunInTx).
func (db *DB) BeginTxx(ctx context.Context, opts *sql.TxOptions) (*Tx, error) {
	tx, err := db.DB.BeginTxx(ctx, opts)
	if err != nil {
		return nil, err
	}
	return &Tx{Tx: tx, unit: config.UnitOf(ctx)}, nil
}

// Beginx is BeginTxx with context.Background() and default options.
func (db *DB) Beginx() (*Tx, error) { return db.BeginTxx(context.Background(), nil) }

// MustBeginTx is BeginTxx that panics on error, like sqlx's.
func (db *DB) MustBeginTx(ctx context.Context, opts *sql.TxOptions) *Tx {
	tx, err := db.BeginTxx(ctx, opts)
	if err != nil {
		panic(err)
	}
	return tx
}

// MustBegin is MustBeginTx with context.Background() and default options.
func (db *DB) MustBegin() *Tx { return db.MustBeginTx(context.Background(), nil) }

// RunInTx is RunInTxx on sqlxcrl's types: it runs fn in a transaction and
// commits it, and over a pool crl opened runs it again on a fresh
// transaction when it failed with an error the rules retry; over a pool
// crl did not open, or with a context given crl.WithoutRetry, it runs fn
// once and returns its error as it is (see RunInTxx).
func (db *DB) RunInTx(ctx context.Context, opts *sql.TxOptions, fn func(tx *Tx) error) error {
	return config.RunInTx(ctx, "sqlxcrl", db.retrier, func(ctx context.Context) (*Tx, error) { return db.BeginTxx(ctx, opts) }, fn)
}
