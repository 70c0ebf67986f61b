package sqlxcrl

import (
	"context"

	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/internal/layer/adapter"
	"github.com/crl-go/crl/internal/layer/connector"
)

// read runs fn, a query together with the scan of its whole result into
// dest (Get, Select), as one attempt of r's statement loop: the driver
// layer retries a query whose error comes before its first row, but an
// error met later while the rows are read — the execution cut-off's
// MariaDB 1969, MySQL 3024, PostgreSQL 57014, a deadlock reported
// mid-stream — it can only report; run whole, the read is classified,
// retried by the rules, charged to the retry budget and observed like an
// error the query itself returned. Before a retry, a slice that Select
// appends to is cut back to its length before the first attempt, so the
// rows of a failed attempt are not kept; a struct or a value is scanned
// over. Each attempt runs in a unit (a unit of its own, or the one ctx
// carries), so that the driver layer runs its statement once instead of
// retrying it again under this loop. It runs fn once when r is nil (a
// pool crl did not open, a Tx's statement) and under crl.WithoutRetry.
func read(ctx context.Context, r *core.Retrier, query string, dest any, fn func(context.Context) error) error {
	if r == nil || connector.NoRetry(ctx) {
		return fn(ctx)
	}
	if connector.UnitOf(ctx) == nil {
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
