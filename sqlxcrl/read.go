package sqlxcrl

import (
	"context"

	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/internal/adapter"
)

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
// filter.
func read(ctx context.Context, r *core.Retrier, rec *adapter.Recorder, query string, dest any, fn func(context.Context) error) error {
	if rec != nil {
		err := fn(ctx)
		rec.Statement(query, err)
		return err
	}
	attempt, rewind := 0, adapter.RewindOf(dest)
	return r.Do(ctx, query, func(ctx context.Context) error {
		if attempt++; attempt > 1 {
			rewind.Reset()
		}
		return fn(ctx)
	})
}
