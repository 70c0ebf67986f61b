package sqlxcrl

import (
	"context"

	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/core"
)

// read runs fn, a query together with the scan of its whole result into
// dest (Get, Select), as one attempt of r's statement loop: the driver
// layer retries a query whose error comes before its first row, but can
// only report one met later while the rows are read (the execution
// cut-off, a deadlock reported mid-stream); run whole, the read is retried
// by the rules like an error the query itself returned. Before a retry, a
// slice that Select appends to is cut back to its length before the first
// attempt. Each attempt runs in a unit (its own, or the one ctx carries),
// so that the driver layer runs the statement once. It runs fn once when
// r is nil (a pool crl did not open, a Tx's statement) and under
// crl.WithoutRetry.
func read(ctx context.Context, r *core.Retrier, query string, dest any, fn func(context.Context) error) error {
	if r == nil || config.NoRetry(ctx) {
		return fn(ctx)
	}
	if config.UnitOf(ctx) == nil {
		ctx, _ = config.NewUnitContext(ctx)
	}
	attempt, rewind := 0, config.RewindOf(dest)
	return r.Do(ctx, query, func(ctx context.Context) error {
		if attempt++; attempt > 1 {
			rewind.Reset()
		}
		return fn(ctx)
	})
}
