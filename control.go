package crl

import (
	"context"

	"github.com/crl-go/crl/config"
)

// WithoutRetry returns a context under which crl retries nothing: a
// statement run with it (or with a context derived from it) on a pool crl
// opened runs once, and its error is the driver's own value, unchanged;
// a transaction begun with it is not replayed; and a unit given it
// (RunInTx, Retry, sqlxcrl.RunInTxx, (*sqlxcrl.DB).RunInTx,
// gormcrl.Transaction) runs its function once. No rule applies, the
// default rule included: for code that knows better for one call, such
// as a report query that must fail fast, or a write whose caller retries
// it itself. gormcrl.NoRetry is the same for one GORM operation.
//
// A statement run once this way is still an operation of its pool: the
// observer counts it and is told its end, the circuit breaker is asked
// before it runs (an open breaker refuses it), a positive queryTimeout
// bounds it, and its success earns the retry budget; its failure is no
// GaveUp and costs the budget nothing, as an error that no rule names.
// New connections still run the connection loop (retryConn).
//
// Inside a unit that crl re-runs (the context Retry hands its function,
// the one a helper's transaction was begun with), a statement always runs
// once and ends the unit when it fails, and the unit is then re-run
// whole: giving such a statement WithoutRetry changes nothing. To run the
// unit once, give WithoutRetry to the context the unit starts with.
func WithoutRetry(ctx context.Context) context.Context { return config.NoRetryContext(ctx) }

// Attempt returns which run of a unit that crl re-runs is running: 1 for
// the first run, 2 for the first re-run, and so on; 0 for a context of no
// such unit. It reads ctx as the unit's code has it: the context Retry
// hands its function, tx.Statement.Context inside gormcrl.Transaction, and
// the context RunInTx, sqlxcrl.RunInTxx and (*sqlxcrl.DB).RunInTx begin
// their transaction with (a driver, a connector or a hook below crl sees
// it). Their closures get only the transaction, whose context database/sql
// does not hand out: to read the attempt in such a closure, run the
// helper inside Retry with Retry's context; Retry is the unit re-run then,
// and the closure's captured context reports its attempt:
//
//	err := crl.Retry(ctx, func(ctx context.Context) error {
//		return crl.RunInTx(ctx, db, nil, func(tx *sql.Tx) error {
//			slog.InfoContext(ctx, "transfer", "attempt", crl.Attempt(ctx))
//			…
//		})
//	})
//
// A unit run without retries (WithoutRetry) is not re-run: its attempt
// is that of the unit around it, 0 when there is none. The number belongs
// to the unit, not to the process: two units running at once have their
// own.
func Attempt(ctx context.Context) int { return config.Attempt(ctx) }
