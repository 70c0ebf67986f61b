package sqlxcrl

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/jmoiron/sqlx"

	"github.com/crl-go/crl/internal/layer/adapter"
)

// Tx is a *sqlx.Tx whose statements are never retried one by one: SQL
// Server rolls back the whole transaction of a deadlock victim, so
// re-running one statement would run it outside the transaction. It
// remembers the statement whose error ended the transaction (the last one
// that failed, an error met while reading its rows, a failed PREPARE and a
// failed execution of a Stmt or NamedStmt prepared in it included), so
// that RunInTx checks the rule's query filter against it.
type Tx struct {
	*sqlx.Tx
	rec *adapter.Recorder // shared with the Tx that Unsafe returns
}

var (
	_ sqlx.ExtContext = (*Tx)(nil)
	_ sqlx.Ext        = (*Tx)(nil)
)

func newTx(tx *sqlx.Tx) *Tx { return &Tx{Tx: tx, rec: &adapter.Recorder{}} }

// FailedQuery returns the text of the last statement that failed in this
// transaction ("" when none did).
func (tx *Tx) FailedQuery() string { return tx.rec.FailedQuery() }

// run runs fn and commits, or rolls back on error, on panic and when fn
// ends its goroutine (runtime.Goexit).
func (tx *Tx) run(fn func(*Tx) error) (string, error) {
	return tx.rec.Run("sqlxcrl", func() error { return fn(tx) }, tx.Rollback, tx.Commit)
}

// Unsafe returns a Tx that ignores columns with no destination field. It
// is the same transaction: its failures are recorded for RunInTx too.
func (tx *Tx) Unsafe() *Tx { return &Tx{Tx: tx.Tx.Unsafe(), rec: tx.rec} }

// ExecContext runs a statement in the transaction, once.
func (tx *Tx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	res, err := tx.Tx.ExecContext(ctx, query, args...)
	tx.rec.Statement(query, err)
	return res, err
}

// Exec is ExecContext with context.Background().
func (tx *Tx) Exec(query string, args ...any) (sql.Result, error) {
	return tx.ExecContext(context.Background(), query, args...)
}

// QueryContext runs a query in the transaction, once.
func (tx *Tx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	rows, err := tx.Tx.QueryContext(ctx, query, args...)
	tx.rec.Statement(query, err)
	tx.rec.Rows(query, rows)
	return rows, err
}

// Query is QueryContext with context.Background().
func (tx *Tx) Query(query string, args ...any) (*sql.Rows, error) {
	return tx.QueryContext(context.Background(), query, args...)
}

// QueryxContext runs a query in the transaction, once.
func (tx *Tx) QueryxContext(ctx context.Context, query string, args ...any) (*sqlx.Rows, error) {
	rows, err := tx.Tx.QueryxContext(ctx, query, args...)
	tx.rec.Statement(query, err)
	if rows != nil {
		tx.rec.Rows(query, rows.Rows)
	}
	return rows, err
}

// Queryx is QueryxContext with context.Background().
func (tx *Tx) Queryx(query string, args ...any) (*sqlx.Rows, error) {
	return tx.QueryxContext(context.Background(), query, args...)
}

// QueryRowContext runs a one-row query in the transaction, once.
func (tx *Tx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	row := tx.Tx.QueryRowContext(ctx, query, args...)
	tx.rec.Statement(query, row.Err())
	return row
}

// QueryRow is QueryRowContext with context.Background().
func (tx *Tx) QueryRow(query string, args ...any) *sql.Row {
	return tx.QueryRowContext(context.Background(), query, args...)
}

// QueryRowxContext runs a one-row query in the transaction, once.
func (tx *Tx) QueryRowxContext(ctx context.Context, query string, args ...any) *sqlx.Row {
	row := tx.Tx.QueryRowxContext(ctx, query, args...)
	tx.rec.Statement(query, row.Err())
	return row
}

// QueryRowx is QueryRowxContext with context.Background().
func (tx *Tx) QueryRowx(query string, args ...any) *sqlx.Row {
	return tx.QueryRowxContext(context.Background(), query, args...)
}

// GetContext runs a one-row query in the transaction and scans it, once;
// a failure, one met while the row is read included, is recorded.
func (tx *Tx) GetContext(ctx context.Context, dest any, query string, args ...any) error {
	return read(ctx, nil, false, tx.rec, query, dest, func(ctx context.Context) error {
		return sqlx.GetContext(ctx, tx.Tx, dest, query, args...)
	})
}

// Get is GetContext with context.Background().
func (tx *Tx) Get(dest any, query string, args ...any) error {
	return tx.GetContext(context.Background(), dest, query, args...)
}

// SelectContext runs a query in the transaction and scans every row,
// once; a failure, one met while the rows are read included, is recorded.
func (tx *Tx) SelectContext(ctx context.Context, dest any, query string, args ...any) error {
	return read(ctx, nil, false, tx.rec, query, dest, func(ctx context.Context) error {
		return sqlx.SelectContext(ctx, tx.Tx, dest, query, args...)
	})
}

// Select is SelectContext with context.Background().
func (tx *Tx) Select(dest any, query string, args ...any) error {
	return tx.SelectContext(context.Background(), dest, query, args...)
}

// NamedExecContext binds arg with the transaction's Mapper, as sqlx's
// does, and runs the statement in the transaction, once.
func (tx *Tx) NamedExecContext(ctx context.Context, query string, arg any) (sql.Result, error) {
	// sqlx.NamedExecContext(ctx, tx, …) would bind with sqlx's default
	// mapper: its mapperFor knows only sqlx's own handles.
	q, args, err := tx.Tx.BindNamed(query, arg)
	if err != nil {
		return nil, err
	}
	return tx.ExecContext(ctx, q, args...)
}

// NamedExec is NamedExecContext with context.Background().
func (tx *Tx) NamedExec(query string, arg any) (sql.Result, error) {
	return tx.NamedExecContext(context.Background(), query, arg)
}

// NamedQueryContext binds arg with the transaction's Mapper and runs the
// query in the transaction, once; the rows scan with its Mapper and
// Unsafe. sqlx's Tx has no such method: this one makes
// sqlx.NamedQueryContext(ctx, tx, …), which binds with sqlx's default
// mapper when given a wrapper, unnecessary.
func (tx *Tx) NamedQueryContext(ctx context.Context, query string, arg any) (*sqlx.Rows, error) {
	q, args, err := tx.Tx.BindNamed(query, arg)
	if err != nil {
		return nil, err
	}
	return tx.QueryxContext(ctx, q, args...)
}

// NamedQuery is NamedQueryContext with context.Background().
func (tx *Tx) NamedQuery(query string, arg any) (*sqlx.Rows, error) {
	return tx.NamedQueryContext(context.Background(), query, arg)
}

// MustExecContext is ExecContext that panics on error, like sqlx's.
func (tx *Tx) MustExecContext(ctx context.Context, query string, args ...any) sql.Result {
	return sqlx.MustExecContext(ctx, tx, query, args...)
}

// MustExec is MustExecContext with context.Background().
func (tx *Tx) MustExec(query string, args ...any) sql.Result {
	return tx.MustExecContext(context.Background(), query, args...)
}

// PrepareContext prepares a statement in the transaction; a failed PREPARE
// is recorded as the failed statement. It keeps the *sql.Stmt of
// sqlx.Preparer, whose executions cannot be seen from outside and so are
// not recorded: use PreparexContext, whose Stmt records them.
func (tx *Tx) PrepareContext(ctx context.Context, query string) (*sql.Stmt, error) {
	st, err := tx.Tx.PrepareContext(ctx, query)
	tx.rec.Statement(query, err)
	return st, err
}

// Prepare is PrepareContext with context.Background().
func (tx *Tx) Prepare(query string) (*sql.Stmt, error) {
	return tx.PrepareContext(context.Background(), query)
}

// PreparexContext prepares a statement in the transaction. A failed
// PREPARE is recorded as the failed statement, and so is a failed
// execution of the returned Stmt, with the prepared text; neither is
// retried on its own.
func (tx *Tx) PreparexContext(ctx context.Context, query string) (*Stmt, error) {
	s, err := tx.Tx.PreparexContext(ctx, query)
	tx.rec.Statement(query, err)
	if err != nil {
		return nil, err
	}
	return &Stmt{Stmt: s, query: query, rec: tx.rec}, nil
}

// Preparex is PreparexContext with context.Background().
func (tx *Tx) Preparex(query string) (*Stmt, error) {
	return tx.PreparexContext(context.Background(), query)
}

// PrepareNamedContext prepares a named statement in the transaction. A
// failed PREPARE is recorded as the failed statement, and so is a failed
// execution of the returned NamedStmt; neither is retried on its own.
func (tx *Tx) PrepareNamedContext(ctx context.Context, query string) (*NamedStmt, error) {
	s, err := tx.Tx.PrepareNamedContext(ctx, query)
	tx.rec.Statement(query, err)
	if err != nil {
		return nil, err
	}
	return &NamedStmt{NamedStmt: s, rec: tx.rec}, nil
}

// PrepareNamed is PrepareNamedContext with context.Background().
func (tx *Tx) PrepareNamed(query string) (*NamedStmt, error) {
	return tx.PrepareNamedContext(context.Background(), query)
}

// StmtxContext returns the transaction's own version of a prepared
// statement, whose failed executions are recorded: a *Stmt of a DB, with
// its text, or what sqlx.Tx.StmtxContext takes (*sql.Stmt, sqlx.Stmt,
// *sqlx.Stmt), whose text cannot be known: a failure of theirs is recorded
// with an empty text, which no query filter matches (a rule without a
// filter still retries it), so that an earlier statement is not taken for
// the one that failed. For anything else (or a nil statement), on which
// sqlx's panics, every execution of the returned Stmt fails with
// ErrNotStmt.
func (tx *Tx) StmtxContext(ctx context.Context, stmt any) *Stmt {
	switch v := stmt.(type) {
	case *Stmt:
		if v != nil && v.Stmt != nil && v.Stmt.Stmt != nil {
			return &Stmt{Stmt: tx.Tx.StmtxContext(ctx, v.Stmt), query: v.query, rec: tx.rec}
		}
	case *sqlx.Stmt:
		if v != nil && v.Stmt != nil {
			return &Stmt{Stmt: tx.Tx.StmtxContext(ctx, v), rec: tx.rec}
		}
	case sqlx.Stmt:
		if v.Stmt != nil {
			return &Stmt{Stmt: tx.Tx.StmtxContext(ctx, v), rec: tx.rec}
		}
	case *sql.Stmt:
		if v != nil {
			return &Stmt{Stmt: tx.Tx.StmtxContext(ctx, v), rec: tx.rec}
		}
	}
	return &Stmt{rec: tx.rec, err: fmt.Errorf("%w: %T", ErrNotStmt, stmt)}
}

// ErrNotStmt is the error of every execution of the statement that
// Tx.Stmtx returns for a value that is not a prepared statement (or a nil
// one).
var ErrNotStmt = errors.New("sqlxcrl: Tx.Stmtx: not a prepared statement (*sqlxcrl.Stmt, *sqlx.Stmt, sqlx.Stmt or *sql.Stmt)")

// Stmtx is StmtxContext with context.Background().
func (tx *Tx) Stmtx(stmt any) *Stmt { return tx.StmtxContext(context.Background(), stmt) }

// NamedStatement is a named prepared statement that Tx.NamedStmt makes
// the transaction's own: the *NamedStmt that DB.PrepareNamed returns, or a
// *sqlx.NamedStmt. Both have these methods; sqlx's NamedStmt takes only
// its own type, and a method cannot take two, so Tx.NamedStmt takes what
// the two share. Another implementation is refused (see Tx.NamedStmt).
type NamedStatement interface {
	Close() error
	ExecContext(ctx context.Context, arg any) (sql.Result, error)
	QueryxContext(ctx context.Context, arg any) (*sqlx.Rows, error)
	QueryRowxContext(ctx context.Context, arg any) *sqlx.Row
	SelectContext(ctx context.Context, dest any, arg any) error
	GetContext(ctx context.Context, dest any, arg any) error
}

// NamedStmtContext returns the transaction's own version of a named
// statement, as sqlx's does (with the transaction's Mapper), whose failed
// executions are recorded with its text. stmt is a *NamedStmt (what
// DB.PrepareNamed returns) or a *sqlx.NamedStmt; for any other
// implementation of NamedStatement, which cannot be moved into the
// transaction, every execution of the returned statement fails with
// ErrNotNamedStmt (sqlx's Tx.Stmtx panics on a statement it does not know;
// sqlxcrl's do not).
func (tx *Tx) NamedStmtContext(ctx context.Context, stmt NamedStatement) *NamedStmt {
	var s *sqlx.NamedStmt
	switch v := stmt.(type) {
	case *NamedStmt:
		if v != nil {
			s = v.NamedStmt
		}
	case *sqlx.NamedStmt:
		s = v
	}
	if s == nil || s.Stmt == nil || s.Stmt.Stmt == nil {
		return &NamedStmt{rec: tx.rec, err: fmt.Errorf("%w: %T", ErrNotNamedStmt, stmt)}
	}
	return &NamedStmt{NamedStmt: tx.Tx.NamedStmtContext(ctx, s), rec: tx.rec}
}

// NamedStmt is NamedStmtContext with context.Background().
func (tx *Tx) NamedStmt(stmt NamedStatement) *NamedStmt {
	return tx.NamedStmtContext(context.Background(), stmt)
}

// ErrNotNamedStmt is the error of every execution of the statement that
// Tx.NamedStmt returns for a statement that is neither a *NamedStmt nor a
// *sqlx.NamedStmt (or a nil one).
var ErrNotNamedStmt = errors.New("sqlxcrl: Tx.NamedStmt: not a *sqlxcrl.NamedStmt or *sqlx.NamedStmt")

// Compile-time checks: the two statements Tx.NamedStmt takes.
var (
	_ NamedStatement = (*NamedStmt)(nil)
	_ NamedStatement = (*sqlx.NamedStmt)(nil)
)
