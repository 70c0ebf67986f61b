package adapter

import (
	"context"

	"github.com/crl-go/crl/core"
)

// RetryRow runs a one-row query (QueryRow, QueryRowx) under the statement
// loop, with the row's deferred error as the attempt's error. It returns
// the last row even when the loop gives up: *sql.Row and *sqlx.Row carry
// their error themselves and cannot be built with another one, so after
// the last retry the row holds the last driver error; the second result is
// the loop's own error, for callers that can return it (Get).
func RetryRow[R interface{ Err() error }](ctx context.Context, r *core.Retrier, query string, run func(ctx context.Context) R) (R, error) {
	var row R
	err := r.DoRows(ctx, query, func(ctx context.Context) error {
		row = run(ctx)
		return row.Err()
	})
	return row, err
}
