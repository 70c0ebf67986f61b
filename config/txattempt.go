package config

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/crl-go/crl/core"
)

// finish ends a transaction attempt: it rolls back when fnErr is not nil
// and commits otherwise, and returns what the transaction loop needs: when
// fnErr is not nil, the statement that failed (failedQuery, read before
// the rollback, which closes rows left open with an error that is not
// theirs) and fnErr; for a failed COMMIT, what CommitOutcome returns. A
// rollback that fails after fnErr is reported with it, fnErr first. name
// is the adapter's package, which starts the messages of the errors finish
// makes.
func finish(name string, failedQuery func() string, fnErr error, rollback, commit func() error) (failed string, err error) {
	if fnErr != nil {
		failed = failedQuery()
		if rbErr := rollback(); rbErr != nil && !errors.Is(rbErr, sql.ErrTxDone) && !core.IsBadConn(rbErr) {
			// The server may already have rolled the transaction back (a
			// deadlock victim's is); report both, the closure's first.
			return failed, errors.Join(fnErr, fmt.Errorf("%s: rollback after the error above: %w", name, rbErr))
		}
		return failed, fnErr
	}
	if err := commit(); err != nil {
		if errors.Is(err, sql.ErrTxDone) {
			// Nothing was sent: the closure ended the transaction itself.
			return "", fmt.Errorf("%s: %w: %w", name, ErrClosureEndedTx, err)
		}
		return CommitOutcome(name, err)
	}
	return "", nil
}

// ErrClosureEndedTx is the error of a transaction attempt whose closure
// committed or rolled back the transaction itself: the helper commits
// when the closure returns nil and rolls back when it returns an error,
// so the closure must do neither. It is never retried.
var ErrClosureEndedTx = errors.New("the closure committed or rolled back the transaction itself " +
	"(return nil to commit, an error to roll back)")

// CommitOutcome is what the transaction loop gets of a failed COMMIT, as
// core.CommitFailed decides it: a COMMIT whose outcome is unknown is that
// error (matching core.ErrCommitUnknown, never retried), prefixed with
// name, the adapter's package; a COMMIT the server refused did not commit
// and is reported as the failed statement "COMMIT", for the rule's query
// filter.
func CommitOutcome(name string, err error) (failed string, _ error) {
	if cerr := core.CommitFailed(err); errors.Is(cerr, core.ErrCommitUnknown) {
		return "", fmt.Errorf("%s: %w", name, cerr)
	}
	return "COMMIT", err
}

// RunTx runs one transaction attempt: fn, then finish with its error
// (failedQuery returns the statement that failed). A transaction whose
// closure does not return, as when it panics or calls runtime.Goexit
// (t.FailNow does), is rolled back before the panic or the goroutine's end
// goes on; what the caller must see then is the panic, so the rollback's
// own error is dropped. Every helper ends every attempt that began a
// transaction through RunTx, so no path leaves the transaction, and its
// pooled connection, open.
func RunTx(name string, failedQuery func() string, fn func() error, rollback, commit func() error) (failed string, err error) {
	ended := false
	defer func() {
		if !ended {
			_ = rollback() // the panic, or the goroutine's end, is what the caller sees
		}
	}()
	failed, err = finish(name, failedQuery, fn(), rollback, commit)
	ended = true
	return failed, err
}

// RunInTx is the loop of the whole-transaction helpers over database/sql's
// and sqlx's types (crl.RunInTx, sqlxcrl.RunInTxx, sqlxcrl's DB.RunInTx):
// fn in a transaction that begin begins, ended by RunTx, and run again
// whole on a fresh transaction under r's transaction loop when the
// attempt failed with an error the rules retry, the rule's query filter
// checked against the statement that the driver layer recorded in the
// Unit of the context begin gets. It runs fn once, and returns its error
// as it is, when r is nil (a pool crl did not open), under
// NoRetryContext, and in a unit that ctx already carries (the enclosing
// unit is the one retried). name is the helper's package, which starts
// the messages of the errors it makes.
func RunInTx[T endable](ctx context.Context, name string, r *core.Retrier, begin func(context.Context) (T, error), fn func(T) error) error {
	if fn == nil {
		return fmt.Errorf("%s: the function to run is nil", name)
	}
	if r == nil || NoRetry(ctx) {
		_, err := runAttempt(ctx, name, nil, begin, fn)
		return err
	}
	if u := UnitOf(ctx); u != nil {
		_, err := runAttempt(ctx, name, u, begin, fn)
		return err
	}
	u := &Unit{} // in the loop's context too: its events carry the attempt
	return r.DoTx(UnitContext(ctx, u), func(ctx context.Context) (string, error) {
		u.Start()
		return runAttempt(UnitContext(ctx, u), name, u, begin, fn)
	})
}

// endable is a transaction that RunInTx ends: *sql.Tx, *sqlx.Tx, a Tx of
// sqlxcrl.
type endable interface {
	Commit() error
	Rollback() error
}

// runAttempt is one attempt of RunInTx, begun with ctx, its statements
// recorded in u (nil: in none, run once).
func runAttempt[T endable](ctx context.Context, name string, u *Unit, begin func(context.Context) (T, error), fn func(T) error) (string, error) {
	tx, err := begin(ctx)
	if err != nil {
		return "", err
	}
	return RunTx(name, u.FailedQuery, func() error { return fn(tx) }, tx.Rollback, tx.Commit)
}
