package adapter

import (
	"database/sql"
	"errors"
	"fmt"

	"github.com/crl-go/crl/core"
)

// Finish ends a transaction attempt whose statements r recorded: it rolls
// back when fnErr is not nil and commits otherwise, and returns what the
// transaction loop needs: when fnErr is not nil, the statement that failed
// (read before the rollback, which closes rows left open with an error
// that is not theirs) and fnErr; for a failed COMMIT, what CommitOutcome
// returns. A rollback that fails after fnErr is reported with it, fnErr
// first. name is the adapter's package, which starts the messages of the
// errors Finish makes.
func (r *Recorder) Finish(name string, fnErr error, rollback, commit func() error) (failed string, err error) {
	if fnErr != nil {
		failed = r.FailedQuery()
		if rbErr := rollback(); rbErr != nil && !errors.Is(rbErr, sql.ErrTxDone) && !core.IsBadConn(rbErr) {
			// The server may already have rolled the transaction back (a
			// deadlock victim's is); report both, the closure's first.
			return failed, errors.Join(fnErr, fmt.Errorf("%s: rollback after the error above: %w", name, rbErr))
		}
		return failed, fnErr
	}
	if err := commit(); err != nil {
		return CommitOutcome(name, err)
	}
	return "", nil
}

// CommitOutcome classifies a failed COMMIT for the transaction loop. A
// COMMIT that failed because the connection broke or the context ended has
// an unknown outcome: the error then matches core.ErrCommitUnknown and is
// never retried. A COMMIT refused by the server (an error number, a
// SQLSTATE, or PostgreSQL's ROLLBACK answer that pgx reports as
// ErrTxCommitRollback) did not commit and is reported as the failed
// statement "COMMIT", for the rule's query filter. name is the adapter's
// package, which starts the message of the error of an unknown outcome.
func CommitOutcome(name string, err error) (failed string, _ error) {
	if outcomeUnknown(err) {
		return "", fmt.Errorf("%s: COMMIT failed and its outcome is unknown, so the transaction was not retried: %w: %w", name, core.ErrCommitUnknown, err)
	}
	return "COMMIT", err
}

// outcomeUnknown reports whether a failed COMMIT may have been applied:
// unless the server answered with an error (a number that is not a mapped
// socket error, or a SQLSTATE), or answered ROLLBACK, it may have been.
func outcomeUnknown(err error) bool {
	if rolledBack(err) {
		return false
	}
	if n, ok := core.ErrorNumber(err); ok {
		return core.IsSocketError(n)
	}
	_, answered := core.SQLState(err)
	return !answered
}

// commitRolledBack is the text of pgx's ErrTxCommitRollback: PostgreSQL
// answered COMMIT with ROLLBACK (the transaction had already failed, or a
// deferred check failed), so nothing of it was applied. It is recognised
// by its text so that no adapter imports pgx.
const commitRolledBack = "commit unexpectedly resulted in rollback"

// rolledBack reports whether err, or an error it wraps, is pgx's
// ErrTxCommitRollback.
func rolledBack(err error) bool {
	for err != nil {
		if err.Error() == commitRolledBack {
			return true
		}
		switch e := err.(type) {
		case interface{ Unwrap() []error }:
			for _, inner := range e.Unwrap() {
				if rolledBack(inner) {
					return true
				}
			}
			return false
		case interface{ Unwrap() error }:
			err = e.Unwrap()
		default:
			return false
		}
	}
	return false
}

// Run runs one transaction attempt whose statements r records: fn, then
// Finish with its error. A transaction whose closure does not return, as
// when it panics or calls runtime.Goexit (t.FailNow does), is rolled back
// before the panic or the goroutine's end goes on; what the caller must see
// then is the panic, so the rollback's own error is dropped. Both adapters
// end every attempt that began a transaction through Run, so no path leaves
// the transaction, and its pooled connection, open.
func (r *Recorder) Run(name string, fn func() error, rollback, commit func() error) (failed string, err error) {
	ended := false
	defer func() {
		if !ended {
			_ = rollback() // the panic, or the goroutine's end, is what the caller sees
		}
	}()
	failed, err = r.Finish(name, fn(), rollback, commit)
	ended = true
	return failed, err
}
