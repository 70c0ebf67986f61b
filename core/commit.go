package core

import "fmt"

// CommitFailed is the one place that decides what a failed COMMIT means,
// for every adapter's transaction loop. It returns nil for nil. A COMMIT
// the server answered — with an error (a number that is not a mapped
// socket error, or a SQLSTATE), or with ROLLBACK (pgx's "commit
// unexpectedly resulted in rollback") — did not commit: err is returned
// unchanged, and the loop treats it as the failed statement "COMMIT",
// for the rule's query filter. Any other failure (the connection broke,
// the context ended, the deadline passed) may have committed: the error
// returned matches ErrCommitUnknown and wraps err, and is never retried.
func CommitFailed(err error) error {
	if err == nil || !commitOutcomeUnknown(err) {
		return err
	}
	return fmt.Errorf("COMMIT failed and its outcome is unknown, so the transaction was not retried: %w: %w", ErrCommitUnknown, err)
}

// commitOutcomeUnknown reports whether a failed COMMIT may have been
// applied: unless the server answered with an error, or answered
// ROLLBACK, it may have been.
func commitOutcomeUnknown(err error) bool {
	if walk(err, func(e error) bool { return e.Error() == commitRolledBack }) {
		return false
	}
	if n, ok := ErrorNumber(err); ok {
		return isSocketError(n)
	}
	_, answered := sqlState(err)
	return !answered
}

// commitRolledBack is the text of pgx's ErrTxCommitRollback: PostgreSQL
// answered COMMIT with ROLLBACK (the transaction had already failed, or a
// deferred check failed), so nothing of it was applied. It is recognised
// by its text so that core imports no driver.
const commitRolledBack = "commit unexpectedly resulted in rollback"

// isSocketError reports whether n is one of the Windows socket error
// numbers that ErrorNumber gives a network failure (10053, 10054, 10060,
// 10061): the client heard no answer from the server, so the outcome of
// what it sent is unknown.
func isSocketError(n int32) bool {
	switch n {
	case wsaConnAborted, wsaConnReset, wsaTimedOut, wsaConnRefused:
		return true
	}
	return false
}
