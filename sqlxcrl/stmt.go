package sqlxcrl

import (
	"context"
	"database/sql"

	"github.com/jmoiron/sqlx"

	"github.com/crl-go/crl/core"
)

// Stmt is a prepared *sqlx.Stmt. A DB's (DB.Preparex) executions are
// retried by the driver layer of a pool crl opened, and its whole reads
// (Get, Select) as DB's are. A Tx's (Tx.Preparex, or Tx.Stmtx of a DB's)
// executions run once, as every statement in a transaction.
type Stmt struct {
	*sqlx.Stmt
	query   string
	retrier *core.Retrier // a DB's over a pool crl opened: its whole reads' loop
	err     error         // Tx.Stmtx's refusal: every execution returns it (Stmt is nil)
}

// QueryString returns the SQL text the statement was prepared with, the
// query that the rules' filter sees.
func (s *Stmt) QueryString() string { return s.query }

// Unsafe returns a Stmt that ignores columns with no destination field.
func (s *Stmt) Unsafe() *Stmt {
	if s.err != nil {
		return s
	}
	return &Stmt{Stmt: s.Stmt.Unsafe(), query: s.query, retrier: s.retrier}
}

// Close closes the statement (nothing, for one that Tx.Stmtx refused).
func (s *Stmt) Close() error {
	if s.err != nil {
		return nil
	}
	return s.Stmt.Close()
}

// ExecContext executes the statement.
func (s *Stmt) ExecContext(ctx context.Context, args ...any) (sql.Result, error) {
	if s.err != nil {
		return nil, s.err
	}
	return s.Stmt.ExecContext(ctx, args...)
}

// Exec is ExecContext with context.Background().
func (s *Stmt) Exec(args ...any) (sql.Result, error) {
	return s.ExecContext(context.Background(), args...)
}

// MustExecContext is ExecContext that panics on error, like sqlx's.
func (s *Stmt) MustExecContext(ctx context.Context, args ...any) sql.Result {
	return must(s.ExecContext(ctx, args...))
}

// MustExec is MustExecContext with context.Background().
func (s *Stmt) MustExec(args ...any) sql.Result {
	return s.MustExecContext(context.Background(), args...)
}

// QueryContext runs the statement as a query.
func (s *Stmt) QueryContext(ctx context.Context, args ...any) (*sql.Rows, error) {
	if s.err != nil {
		return nil, s.err
	}
	return s.Stmt.QueryContext(ctx, args...)
}

// Query is QueryContext with context.Background().
func (s *Stmt) Query(args ...any) (*sql.Rows, error) {
	return s.QueryContext(context.Background(), args...)
}

// QueryxContext runs the statement as a query.
func (s *Stmt) QueryxContext(ctx context.Context, args ...any) (*sqlx.Rows, error) {
	if s.err != nil {
		return nil, s.err
	}
	return s.Stmt.QueryxContext(ctx, args...)
}

// Queryx is QueryxContext with context.Background().
func (s *Stmt) Queryx(args ...any) (*sqlx.Rows, error) {
	return s.QueryxContext(context.Background(), args...)
}

// QueryRowContext runs the statement as a one-row query.
func (s *Stmt) QueryRowContext(ctx context.Context, args ...any) *sql.Row {
	if s.err != nil {
		return errorRow(s.err)
	}
	return s.Stmt.QueryRowContext(ctx, args...)
}

// QueryRow is QueryRowContext with context.Background().
func (s *Stmt) QueryRow(args ...any) *sql.Row {
	return s.QueryRowContext(context.Background(), args...)
}

// QueryRowxContext runs the statement as a one-row query.
func (s *Stmt) QueryRowxContext(ctx context.Context, args ...any) *sqlx.Row {
	if s.err != nil {
		return errorRowx(s.err)
	}
	return s.Stmt.QueryRowxContext(ctx, args...)
}

// QueryRowx is QueryRowxContext with context.Background().
func (s *Stmt) QueryRowx(args ...any) *sqlx.Row {
	return s.QueryRowxContext(context.Background(), args...)
}

// GetContext runs the statement as a one-row query and scans the row
// into dest, as one whole read (see DB.GetContext); a Tx's runs once.
func (s *Stmt) GetContext(ctx context.Context, dest any, args ...any) error {
	if s.err != nil {
		return s.err
	}
	return read(ctx, s.retrier, s.query, dest, func(ctx context.Context) error {
		return s.Stmt.GetContext(ctx, dest, args...)
	})
}

// Get is GetContext with context.Background().
func (s *Stmt) Get(dest any, args ...any) error {
	return s.GetContext(context.Background(), dest, args...)
}

// SelectContext runs the statement as a query and scans every row into
// dest, as one whole read (see DB.SelectContext); a Tx's runs once.
func (s *Stmt) SelectContext(ctx context.Context, dest any, args ...any) error {
	if s.err != nil {
		return s.err
	}
	return read(ctx, s.retrier, s.query, dest, func(ctx context.Context) error {
		return s.Stmt.SelectContext(ctx, dest, args...)
	})
}

// Select is SelectContext with context.Background().
func (s *Stmt) Select(dest any, args ...any) error {
	return s.SelectContext(context.Background(), dest, args...)
}

// NamedStmt is a prepared *sqlx.NamedStmt, whose executions are retried
// as Stmt's are.
type NamedStmt struct {
	*sqlx.NamedStmt
	retrier *core.Retrier // a DB's over a pool crl opened: its whole reads' loop
	err     error         // Tx.NamedStmt's refusal: every execution returns it (NamedStmt is nil)
}

// Unsafe returns a NamedStmt that ignores columns with no destination
// field. Like sqlx's, it marks the statement it was called on unsafe too
// (sqlx's NamedStmt.Unsafe sets the flag on the *sqlx.Stmt both share).
func (n *NamedStmt) Unsafe() *NamedStmt {
	if n.err != nil {
		return n
	}
	return &NamedStmt{NamedStmt: n.NamedStmt.Unsafe(), retrier: n.retrier}
}

// Close closes the statement (nothing, for one that Tx.NamedStmt refused).
func (n *NamedStmt) Close() error {
	if n.err != nil {
		return nil
	}
	return n.NamedStmt.Close()
}

// ExecContext binds arg and executes the statement.
func (n *NamedStmt) ExecContext(ctx context.Context, arg any) (sql.Result, error) {
	if n.err != nil {
		return nil, n.err
	}
	return n.NamedStmt.ExecContext(ctx, arg)
}

// Exec is ExecContext with context.Background().
func (n *NamedStmt) Exec(arg any) (sql.Result, error) {
	return n.ExecContext(context.Background(), arg)
}

// MustExecContext is ExecContext that panics on error, like sqlx's.
func (n *NamedStmt) MustExecContext(ctx context.Context, arg any) sql.Result {
	return must(n.ExecContext(ctx, arg))
}

// MustExec is MustExecContext with context.Background().
func (n *NamedStmt) MustExec(arg any) sql.Result { return n.MustExecContext(context.Background(), arg) }

// QueryContext binds arg and runs the query.
func (n *NamedStmt) QueryContext(ctx context.Context, arg any) (*sql.Rows, error) {
	if n.err != nil {
		return nil, n.err
	}
	return n.NamedStmt.QueryContext(ctx, arg)
}

// Query is QueryContext with context.Background().
func (n *NamedStmt) Query(arg any) (*sql.Rows, error) {
	return n.QueryContext(context.Background(), arg)
}

// QueryxContext binds arg and runs the query.
func (n *NamedStmt) QueryxContext(ctx context.Context, arg any) (*sqlx.Rows, error) {
	if n.err != nil {
		return nil, n.err
	}
	return n.NamedStmt.QueryxContext(ctx, arg)
}

// Queryx is QueryxContext with context.Background().
func (n *NamedStmt) Queryx(arg any) (*sqlx.Rows, error) {
	return n.QueryxContext(context.Background(), arg)
}

// QueryRowxContext runs the statement as a one-row query.
func (n *NamedStmt) QueryRowxContext(ctx context.Context, arg any) *sqlx.Row {
	if n.err != nil {
		return errorRowx(n.err)
	}
	return n.NamedStmt.QueryRowxContext(ctx, arg)
}

// QueryRowx is QueryRowxContext with context.Background().
func (n *NamedStmt) QueryRowx(arg any) *sqlx.Row {
	return n.QueryRowxContext(context.Background(), arg)
}

// QueryRowContext is QueryRowxContext (sqlx's NamedStmt returns a *sqlx.Row here too).
func (n *NamedStmt) QueryRowContext(ctx context.Context, arg any) *sqlx.Row {
	return n.QueryRowxContext(ctx, arg)
}

// QueryRow is QueryRowContext with context.Background().
func (n *NamedStmt) QueryRow(arg any) *sqlx.Row { return n.QueryRowContext(context.Background(), arg) }

// GetContext binds arg, runs a one-row query and scans the row into dest,
// as one whole read (see DB.GetContext); a Tx's runs once.
func (n *NamedStmt) GetContext(ctx context.Context, dest any, arg any) error {
	if n.err != nil {
		return n.err
	}
	return read(ctx, n.retrier, n.QueryString, dest, func(ctx context.Context) error {
		return n.NamedStmt.GetContext(ctx, dest, arg)
	})
}

// Get is GetContext with context.Background().
func (n *NamedStmt) Get(dest any, arg any) error {
	return n.GetContext(context.Background(), dest, arg)
}

// SelectContext binds arg, runs the query and scans every row into dest,
// as one whole read (see DB.SelectContext); a Tx's runs once.
func (n *NamedStmt) SelectContext(ctx context.Context, dest any, arg any) error {
	if n.err != nil {
		return n.err
	}
	return read(ctx, n.retrier, n.QueryString, dest, func(ctx context.Context) error {
		return n.NamedStmt.SelectContext(ctx, dest, arg)
	})
}

// Select is SelectContext with context.Background().
func (n *NamedStmt) Select(dest any, arg any) error {
	return n.SelectContext(context.Background(), dest, arg)
}

// must is the result of a Must method: res, or a panic with err, like
// sqlx's.
func must(res sql.Result, err error) sql.Result {
	if err != nil {
		panic(err)
	}
	return res
}

// errorRowx returns a *sqlx.Row whose Scan and Err return err: the row of
// a one-row query that never ran (see errorDB).
func errorRowx(err error) *sqlx.Row {
	db := errorDB(err)
	defer closeErrorDB(db)
	return sqlx.NewDb(db, "").QueryRowxContext(context.Background(), "")
}
