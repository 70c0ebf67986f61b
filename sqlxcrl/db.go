package sqlxcrl

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"

	"github.com/jmoiron/sqlx"

	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/internal/layer/adapter"
	"github.com/crl-go/crl/internal/layer/connector"
	"github.com/crl-go/crl/internal/tables/family"
)

// DB is a *sqlx.DB whose statements run under the statement loop and whose
// new connections run under the connection loop. It is safe for
// concurrent use; its rules are its own.
type DB struct {
	*sqlx.DB
	retrier *core.Retrier
	runtime *config.Runtime
	layered bool // the pool is crl's: its driver layer runs the statement loop (see loop)
}

// loop returns the Retrier of the statement loop that DB's methods run
// their statements under, nil over a pool crl opened: its driver layer
// runs the loop, and a second one would retry each statement again.
func (db *DB) loop() *core.Retrier {
	if db.layered {
		return nil
	}
	return db.retrier
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
	sqlDB, err := adapter.Open(driverName, driverDSN, rt)
	if err != nil {
		return nil, fmt.Errorf("sqlxcrl: %w", err)
	}
	return &DB{DB: sqlx.NewDb(sqlDB, bindName(driverName, rt)), retrier: rt.Retrier(), runtime: rt, layered: true}, nil
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
// the connection loop around c.Connect (config.WrapConnector), and the
// statements and RunInTx run under the statement loops of the same
// handle (one budget, one breaker, one properties file). driverName names
// the driver's family (sqlserver, mysql, pgx, …; a wrapped name needs
// config.WithDriverFamily) and sets sqlx's bind type. There is no DSN:
// settings come from opts, the properties file and the defaults. It does
// not connect.
func OpenDB(c driver.Connector, driverName string, opts ...Option) (*DB, error) {
	wrapped, rt, err := config.WrapConnector(c, driverName, opts...)
	if err != nil {
		return nil, fmt.Errorf("sqlxcrl: %w", err)
	}
	return &DB{DB: sqlx.NewDb(sql.OpenDB(wrapped), bindName(driverName, rt)), retrier: rt.Retrier(), runtime: rt, layered: true}, nil
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
// sqlx's default Mapper, not unsafe. Statements get the statement loop
// with the settings from opts, the properties file and the defaults; those
// of a DSN the pool was opened with are not carried (a *sql.DB does not
// keep them): pass the same options. The connection loop applies only when
// the pool's connector is crl's (a pool that sqlxcrl opened); NewDb does
// not wrap it. Use Open or OpenDB for a new pool.
//
// sqlx's idiom for a second handle over a pool, sqlx.NewDb(db.DB, name),
// is sqlxcrl.NewDb(db.DB.DB, name, opts...) with a *sqlxcrl.DB: its DB
// field is the embedded *sqlx.DB, and NewDb takes the *sql.DB, as the
// contract (DESIGN.md) fixes it.
//
// NewDb cannot return an error (its signature is sqlx's) and does not
// panic: when an option or the properties file is invalid, or db is nil,
// every statement of the returned DB, and its Ping, fails with the error
// that names the problem. WrapDB returns that error instead.
func NewDb(db *sql.DB, driverName string, opts ...Option) *DB {
	out, err := WrapDB(db, driverName, opts...)
	if err != nil {
		r, _ := core.NewRetrier(core.Policy{}, core.Options{})
		return &DB{DB: sqlx.NewDb(sql.OpenDB(adapter.FailingConnector(err)), driverName), retrier: r}
	}
	return out
}

// WrapDB is NewDb that returns the error of an invalid option or
// properties file, or of a nil pool, instead of a DB whose every statement
// fails with it.
func WrapDB(db *sql.DB, driverName string, opts ...Option) (*DB, error) {
	rt, _, err := config.NewRuntime(driverName, "", opts...)
	if err != nil {
		return nil, fmt.Errorf("sqlxcrl: %w", err)
	}
	if db == nil {
		return nil, ErrNilPool
	}
	if d, ok := db.Driver().(*connector.Driver); ok {
		// A pool crl opened: its driver layer retries the statements
		// under the pool's rules; without options the DB is the pool's.
		if pool, ok := d.Owner().(*config.Runtime); ok && len(opts) == 0 {
			rt = pool
		}
		return &DB{DB: sqlx.NewDb(db, bindName(driverName, rt)), retrier: rt.Retrier(), runtime: rt, layered: true}, nil
	}
	return &DB{DB: sqlx.NewDb(db, bindName(driverName, rt)), retrier: rt.Retrier(), runtime: rt}, nil
}

// ErrNilPool is the error of NewDb and WrapDB given a nil *sql.DB (whose
// statements would otherwise panic).
var ErrNilPool = errors.New("sqlxcrl: the pool to wrap is nil")

// Retrier returns the retry engine of this DB.
func (db *DB) Retrier() *core.Retrier { return db.retrier }

// Runtime returns this DB's configuration at run time (nil when NewDb got
// an invalid option).
func (db *DB) Runtime() *config.Runtime { return db.runtime }

// Unsafe returns a DB that, like sqlx's, silently ignores columns with no
// destination field; it shares the retry engine.
func (db *DB) Unsafe() *DB {
	return &DB{DB: db.DB.Unsafe(), retrier: db.retrier, runtime: db.runtime, layered: db.layered}
}

// ExecContext runs a statement under the statement loop.
func (db *DB) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return retry(ctx, db.loop(), query, func(ctx context.Context) (sql.Result, error) {
		return db.DB.ExecContext(ctx, query, args...)
	})
}

// Exec is ExecContext with context.Background().
func (db *DB) Exec(query string, args ...any) (sql.Result, error) {
	return db.ExecContext(context.Background(), query, args...)
}

// QueryContext runs a query under the statement loop; an error while the
// rows are read is not retried.
func (db *DB) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	return retryRows(ctx, db.loop(), query, func(ctx context.Context) (*sql.Rows, error) {
		return db.DB.QueryContext(ctx, query, args...)
	})
}

// Query is QueryContext with context.Background().
func (db *DB) Query(query string, args ...any) (*sql.Rows, error) {
	return db.QueryContext(context.Background(), query, args...)
}

// QueryxContext runs a query under the statement loop; an error while the
// rows are read is not retried.
func (db *DB) QueryxContext(ctx context.Context, query string, args ...any) (*sqlx.Rows, error) {
	return retryRows(ctx, db.loop(), query, func(ctx context.Context) (*sqlx.Rows, error) {
		return db.DB.QueryxContext(ctx, query, args...)
	})
}

// Queryx is QueryxContext with context.Background().
func (db *DB) Queryx(query string, args ...any) (*sqlx.Rows, error) {
	return db.QueryxContext(context.Background(), query, args...)
}

// QueryRowContext runs a one-row query under the statement loop. After the
// last retry the row carries the last driver error.
func (db *DB) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	row, _ := retryRow(ctx, db.loop(), query, func(ctx context.Context) *sql.Row {
		return db.DB.QueryRowContext(ctx, query, args...)
	}, adapter.ErrorRow)
	return row
}

// QueryRow is QueryRowContext with context.Background().
func (db *DB) QueryRow(query string, args ...any) *sql.Row {
	return db.QueryRowContext(context.Background(), query, args...)
}

// QueryRowxContext runs a one-row query under the statement loop. After
// the last retry the row carries the last driver error.
func (db *DB) QueryRowxContext(ctx context.Context, query string, args ...any) *sqlx.Row {
	row, _ := db.queryRowx(ctx, query, args)
	return row
}

// QueryRowx is QueryRowxContext with context.Background().
func (db *DB) QueryRowx(query string, args ...any) *sqlx.Row {
	return db.QueryRowxContext(context.Background(), query, args...)
}

func (db *DB) queryRowx(ctx context.Context, query string, args []any) (*sqlx.Row, error) {
	return retryRow(ctx, db.loop(), query, func(ctx context.Context) *sqlx.Row {
		return db.DB.QueryRowxContext(ctx, query, args...)
	}, errorRowx)
}

// GetContext runs a one-row query and scans it into dest, like
// sqlx.GetContext, the query and the scan together under the statement
// loop: an error met while the row is read is retried by the rules too.
// sql.ErrNoRows is returned unchanged.
func (db *DB) GetContext(ctx context.Context, dest any, query string, args ...any) error {
	return read(ctx, db.retrier, db.layered, nil, query, dest, func(ctx context.Context) error {
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
	return read(ctx, db.retrier, db.layered, nil, query, dest, func(ctx context.Context) error {
		return sqlx.SelectContext(ctx, db.DB, dest, query, args...)
	})
}

// Select is SelectContext with context.Background().
func (db *DB) Select(dest any, query string, args ...any) error {
	return db.SelectContext(context.Background(), dest, query, args...)
}

// NamedExecContext binds arg with the DB's Mapper, as sqlx's does, and
// runs the statement under the statement loop.
func (db *DB) NamedExecContext(ctx context.Context, query string, arg any) (sql.Result, error) {
	// sqlx.NamedExecContext(ctx, db, …) would bind with sqlx's default
	// mapper: its mapperFor knows only sqlx's own handles.
	q, args, err := db.DB.BindNamed(query, arg)
	if err != nil {
		return nil, err
	}
	return db.ExecContext(ctx, q, args...)
}

// NamedExec is NamedExecContext with context.Background().
func (db *DB) NamedExec(query string, arg any) (sql.Result, error) {
	return db.NamedExecContext(context.Background(), query, arg)
}

// NamedQueryContext binds arg with the DB's Mapper, as sqlx's does, and
// runs the query under the statement loop; the rows scan with the DB's
// Mapper and Unsafe.
func (db *DB) NamedQueryContext(ctx context.Context, query string, arg any) (*sqlx.Rows, error) {
	q, args, err := db.DB.BindNamed(query, arg)
	if err != nil {
		return nil, err
	}
	return db.QueryxContext(ctx, q, args...)
}

// NamedQuery is NamedQueryContext with context.Background().
func (db *DB) NamedQuery(query string, arg any) (*sqlx.Rows, error) {
	return db.NamedQueryContext(context.Background(), query, arg)
}

// MustExecContext is ExecContext that panics on error, like sqlx's.
func (db *DB) MustExecContext(ctx context.Context, query string, args ...any) sql.Result {
	return sqlx.MustExecContext(ctx, db, query, args...)
}

// MustExec is MustExecContext with context.Background().
func (db *DB) MustExec(query string, args ...any) sql.Result {
	return db.MustExecContext(context.Background(), query, args...)
}

// PreparexContext prepares a statement (the PREPARE itself under the
// statement loop) whose executions run under the statement loop.
func (db *DB) PreparexContext(ctx context.Context, query string) (*Stmt, error) {
	s, err := retry(ctx, db.loop(), query, func(ctx context.Context) (*sqlx.Stmt, error) {
		return db.DB.PreparexContext(ctx, query)
	})
	if err != nil {
		return nil, err
	}
	return &Stmt{Stmt: s, query: query, retrier: db.retrier, layered: db.layered}, nil
}

// Preparex is PreparexContext with context.Background().
func (db *DB) Preparex(query string) (*Stmt, error) {
	return db.PreparexContext(context.Background(), query)
}

// PrepareNamedContext prepares a named statement whose executions run
// under the statement loop.
func (db *DB) PrepareNamedContext(ctx context.Context, query string) (*NamedStmt, error) {
	s, err := retry(ctx, db.loop(), query, func(ctx context.Context) (*sqlx.NamedStmt, error) {
		return db.DB.PrepareNamedContext(ctx, query)
	})
	if err != nil {
		return nil, err
	}
	return &NamedStmt{NamedStmt: s, retrier: db.retrier, layered: db.layered}, nil
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
	return newTx(tx), nil
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

// RunInTx runs fn in a transaction and commits it; when fn or the commit
// fails with an error that the statement rules retry (the rule's filter
// checked against the statement that failed), it waits as the rule says
// and runs fn again on a fresh transaction. fn must do nothing outside the
// transaction that it cannot repeat. The transaction is rolled back when fn
// returns an error or panics (the panic goes on). A COMMIT whose outcome is
// unknown is never retried: the error matches core.ErrCommitUnknown.
// Nested in another unit it does what crl.RunInTx does: once with a
// context that carries the unit, its own loop otherwise, a statement run
// at most 1 + retryCount times. With a context given crl.WithoutRetry it
// runs fn once; crl.Attempt reads the run on the context the transaction
// is begun with (see crl.Attempt).
func (db *DB) RunInTx(ctx context.Context, opts *sql.TxOptions, fn func(tx *Tx) error) error {
	if connector.NoRetry(ctx) {
		_, err := db.runTxOnce(ctx, opts, fn)
		return err
	}
	if !db.layered {
		return db.retrier.DoTx(ctx, func(ctx context.Context) (string, error) {
			tx, err := db.BeginTxx(ctx, opts)
			if err != nil {
				return "", err
			}
			return tx.run(fn)
		})
	}
	// Over a pool crl opened, the driver layer records every statement of
	// the transaction, the embedded *sqlx.Tx's included, in the unit.
	if u := connector.UnitOf(ctx); u != nil {
		_, err := db.runUnitTx(ctx, u, opts, fn) // an enclosing unit is the one retried
		return err
	}
	u := &connector.Unit{} // in the loop's context too: its events carry the attempt
	return db.retrier.DoTx(connector.WithUnit(ctx, u), func(ctx context.Context) (string, error) {
		u.Start()
		return db.runUnitTx(connector.WithUnit(ctx, u), u, opts, fn)
	})
}

// runUnitTx is one attempt of RunInTx over a pool crl opened, begun with
// ctx, its statements recorded in u.
func (db *DB) runUnitTx(ctx context.Context, u *connector.Unit, opts *sql.TxOptions, fn func(tx *Tx) error) (string, error) {
	tx, err := db.BeginTxx(ctx, opts)
	if err != nil {
		return "", err
	}
	return adapter.Run("sqlxcrl", u.FailedQuery, func() error { return fn(tx) }, tx.Rollback, tx.Commit)
}

// runTxOnce is RunInTx under crl.WithoutRetry: one attempt, nothing
// recorded.
func (db *DB) runTxOnce(ctx context.Context, opts *sql.TxOptions, fn func(tx *Tx) error) (string, error) {
	tx, err := db.BeginTxx(ctx, opts)
	if err != nil {
		return "", err
	}
	return tx.run(fn)
}

// errorRowx returns a *sqlx.Row whose Scan and Err return err: the row of
// a one-row query that never ran (see adapter.ErrorDB).
func errorRowx(err error) *sqlx.Row {
	db := adapter.ErrorDB(err)
	defer adapter.CloseErrorDB(db)
	return sqlx.NewDb(db, "").QueryRowxContext(context.Background(), "")
}
