package sqlxcrl

import (
	"context"

	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/internal/layer/adapter"
	"github.com/crl-go/crl/internal/layer/connector"
)

// retry runs fn under r's statement loop; once when r is nil (DB.loop).
func retry[T any](ctx context.Context, r *core.Retrier, query string, fn func(context.Context) (T, error)) (T, error) {
	if r == nil {
		return fn(ctx)
	}
	return core.Retry(ctx, r, query, fn)
}

// retryRows is retry for a query whose rows are read after it returns.
func retryRows[T any](ctx context.Context, r *core.Retrier, query string, fn func(context.Context) (T, error)) (T, error) {
	if r == nil {
		return fn(ctx)
	}
	return core.RetryRows(ctx, r, query, fn)
}

// retryRow is adapter.RetryRow; once when r is nil (DB.loop).
func retryRow[R interface{ Err() error }](ctx context.Context, r *core.Retrier, query string, run func(context.Context) R, refused func(error) R) (R, error) {
	if r == nil {
		row := run(ctx)
		return row, row.Err()
	}
	return adapter.RetryRow(ctx, r, query, run, refused)
}

// read runs fn, a query together with the scan of its whole result into
// dest (Get, Select), as one attempt. A DB's (rec nil) runs under the
// statement loop, so that an error met while the rows are read — the
// execution cut-off's MariaDB 1969, MySQL 3024, PostgreSQL 57014, a
// deadlock reported mid-stream — is classified, retried by the rules,
// charged to the retry budget and observed exactly like an error the
// query itself returned. Before a retry, a slice that Select appends to is
// cut back to its length before the first attempt, so the rows of a failed
// attempt are not kept; a struct or a value is scanned over. A Tx's runs
// once and its failure, a read's included, is recorded for RunInTx's
// filter. Over a pool crl opened (layered), each attempt runs in a unit of
// its own, so that the driver layer runs its statement once instead of
// retrying it again under the whole read's loop. Under crl.WithoutRetry
// it runs once.
func read(ctx context.Context, r *core.Retrier, layered bool, rec *adapter.Recorder, query string, dest any, fn func(context.Context) error) error {
	if rec != nil {
		err := fn(ctx)
		rec.Statement(query, err)
		return err
	}
	if connector.NoRetry(ctx) {
		return fn(ctx) // the driver layer runs it once, and its observer sees it
	}
	if layered && connector.UnitOf(ctx) == nil {
		ctx = connector.WithUnit(ctx, &connector.Unit{})
	}
	attempt, rewind := 0, adapter.RewindOf(dest)
	return r.Do(ctx, query, func(ctx context.Context) error {
		if attempt++; attempt > 1 {
			rewind.Reset()
		}
		return fn(ctx)
	})
}
