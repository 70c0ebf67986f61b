package sqlxcrl

import (
	"context"
	"database/sql"

	"github.com/jmoiron/sqlx"

	"github.com/crl-go/crl/internal/adapter"
)

// Tx is a *sqlx.Tx whose statements are never retried one by one: SQL
// Server rolls back the whole transaction of a deadlock victim, so
// re-running one statement would run it outside the transaction. It
// remembers the statement whose error ended the transaction (the last one
// that failed, an error met while reading its rows included), so that
// RunInTx checks the rule's query filter against it.
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

// GetContext runs a one-row query in the transaction and scans it.
func (tx *Tx) GetContext(ctx context.Context, dest any, query string, args ...any) error {
	return sqlx.GetContext(ctx, tx, dest, query, args...)
}

// Get is GetContext with context.Background().
func (tx *Tx) Get(dest any, query string, args ...any) error {
	return tx.GetContext(context.Background(), dest, query, args...)
}

// SelectContext runs a query in the transaction and scans every row.
func (tx *Tx) SelectContext(ctx context.Context, dest any, query string, args ...any) error {
	return sqlx.SelectContext(ctx, tx, dest, query, args...)
}

// Select is SelectContext with context.Background().
func (tx *Tx) Select(dest any, query string, args ...any) error {
	return tx.SelectContext(context.Background(), dest, query, args...)
}

// NamedExecContext binds arg and runs the statement in the transaction.
func (tx *Tx) NamedExecContext(ctx context.Context, query string, arg any) (sql.Result, error) {
	return sqlx.NamedExecContext(ctx, tx, query, arg)
}

// NamedExec is NamedExecContext with context.Background().
func (tx *Tx) NamedExec(query string, arg any) (sql.Result, error) {
	return tx.NamedExecContext(context.Background(), query, arg)
}

// NamedQuery binds arg and runs the query in the transaction.
func (tx *Tx) NamedQuery(query string, arg any) (*sqlx.Rows, error) {
	return sqlx.NamedQueryContext(context.Background(), tx, query, arg)
}

// MustExecContext is ExecContext that panics on error, like sqlx's.
func (tx *Tx) MustExecContext(ctx context.Context, query string, args ...any) sql.Result {
	return sqlx.MustExecContext(ctx, tx, query, args...)
}

// MustExec is MustExecContext with context.Background().
func (tx *Tx) MustExec(query string, args ...any) sql.Result {
	return tx.MustExecContext(context.Background(), query, args...)
}
