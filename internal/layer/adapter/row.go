package adapter

import (
	"context"
	"database/sql"

	"github.com/crl-go/crl/core"
)

// RetryRow runs a one-row query (QueryRow, QueryRowx) under the statement
// loop, with the row's deferred error as the attempt's error. It returns
// the last row even when the loop gives up: *sql.Row and *sqlx.Row carry
// their error themselves and cannot be built with another one, so after
// the last retry the row holds the last driver error; the second result is
// the loop's own error, for callers that can return it (Get). When no
// attempt ran (the circuit breaker refused the statement) the row is
// refused's, built to carry the loop's error (ErrorRow): never nil, whose
// Scan would panic.
func RetryRow[R interface{ Err() error }](ctx context.Context, r *core.Retrier, query string, run func(ctx context.Context) R, refused func(err error) R) (R, error) {
	var row R
	ran := false
	err := r.Run(ctx, &core.Op{Query: query, Rows: true}, func(ctx context.Context) error {
		row, ran = run(ctx), true
		return row.Err()
	})
	if !ran && err != nil {
		row = refused(err)
	}
	return row, err
}

// ErrorDB returns a handle whose every connection fails with err, for
// rows that must carry err: a *sql.Row or a *sqlx.Row cannot be built
// with an error outside its package, but built from this handle's answer
// (as QueryRowContext builds it) it carries err unchanged. The caller
// closes it with CloseErrorDB once the row is built.
func ErrorDB(err error) *sql.DB { return sql.OpenDB(FailingConnector(err)) }

// CloseErrorDB closes a handle from ErrorDB. Its Close cannot fail: it
// opened no connection, and its connector has nothing to close.
func CloseErrorDB(db *sql.DB) { _ = db.Close() }

// ErrorRow returns a *sql.Row whose Scan and Err return err: the row of a
// one-row query that never ran.
func ErrorRow(err error) *sql.Row {
	db := ErrorDB(err)
	defer CloseErrorDB(db)
	return db.QueryRowContext(context.Background(), "")
}
