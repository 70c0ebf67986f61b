package core

import (
	"errors"
	"fmt"
	"strconv"
)

// Sentinel errors. Every error that core returns for one of these reasons
// matches it with errors.Is; errors that come from a failed statement also
// unwrap to the driver's error, so errors.As(err, &mssql.Error{}) holds too.
var (
	// ErrInvalidParameterNumber reports a token of a rule that is not a valid
	// number: an error number, a retry count above 255, a time or a factor
	// (the JDBC driver's R_invalidParameterNumber).
	ErrInvalidParameterNumber = errors.New("core: invalid parameter number")

	// ErrInvalidRuleFormat reports a rule of the wrong shape: too many
	// sections, a statement rule without timings, a connection rule with
	// timings (the JDBC driver's R_InvalidRuleFormat).
	ErrInvalidRuleFormat = errors.New("core: invalid rule format")

	// ErrInvalidRetryInterval reports a statement retry refused because its
	// wait is longer than queryTimeout (the JDBC driver's
	// R_InvalidRetryInterval). Unlike the JDBC driver, the error still
	// unwraps to the driver's error.
	ErrInvalidRetryInterval = errors.New("core: retry wait exceeds queryTimeout")

	// ErrRetryBudgetExceeded reports a retry refused by the retry budget. The
	// error still unwraps to the driver's error.
	ErrRetryBudgetExceeded = errors.New("core: retry budget exceeded")

	// ErrRetriesExhausted reports that every retry a rule allows has run and
	// the last attempt failed too.
	ErrRetriesExhausted = errors.New("core: retries exhausted")

	// ErrDeadline reports a retry that was not attempted because the
	// context's deadline would pass during the wait, or because the
	// context ended during the wait (the error then also matches
	// context.Canceled or context.DeadlineExceeded).
	ErrDeadline = errors.New("core: context deadline leaves no time to retry")

	// ErrNotRetryable reports that, after at least one retry, an attempt
	// failed with an error that no rule retries (or whose rule's query
	// filter does not match, or that a loop under this one already gave
	// up on). A first attempt that fails so is returned unchanged, not
	// wrapped.
	ErrNotRetryable = errors.New("core: error not retryable")

	// ErrLoginTimeout reports a connection retry that was not attempted
	// because elapsed time plus connectRetryInterval reaches loginTimeout,
	// or a connection attempt that loginTimeout ended.
	ErrLoginTimeout = errors.New("core: loginTimeout leaves no time to retry the connection")

	// ErrBatchNotRetried reports a retryable error of a statement text that
	// is not retried on its own because part of it may have committed: a
	// batch of several statements that is not only reads, or a procedure
	// call whose rule's filter does not name it. Run it in a transaction
	// (sqlxcrl.DB.RunInTx, gormcrl.Transaction) to retry it as a whole.
	// The error still unwraps to the driver's error.
	ErrBatchNotRetried = errors.New("core: not retried on its own, part of it may have committed; run it in a transaction (sqlxcrl.DB.RunInTx, gormcrl.Transaction) to retry it")

	// ErrCommitUnknown marks a failed COMMIT whose outcome is unknown: the
	// transaction may or may not have been applied, so it is never retried.
	// Adapters wrap such failures with it.
	ErrCommitUnknown = errors.New("core: commit outcome unknown, the transaction was not retried")

	// ErrAfterFirstRow is the Reason of the GaveUp event of a query whose
	// error came after its first row was handed to the caller (see
	// Retrier.Unretried): the caller may have read that row, so the query
	// is not run again.
	ErrAfterFirstRow = errors.New("core: error after the query's first row, not retried")

	// errNoOp is what Admit returns given no Op to admit.
	errNoOp = errors.New("core: Retrier.Admit needs an Op to admit")

	// ErrCircuitOpen reports an operation refused at once because the
	// circuit breaker is open: the last operations all failed with
	// retryable errors. Nothing of the operation ran. The error still
	// unwraps to the driver error that opened the breaker (an earlier
	// operation's, not this one's).
	ErrCircuitOpen = errors.New("core: circuit breaker open")

	// ErrReplayDiverged is joined with the original driver error when a
	// transaction replay stopped after it ran: an answer the caller had seen
	// came back different, a re-sent statement failed where the caller had
	// seen it succeed, or the connection broke. Nothing of the transaction is
	// left on the server. A helper that re-runs its closure (crl.RunInTx,
	// sqlxcrl.RunInTxx, gormcrl.Transaction, crl.Retry) runs it again then.
	ErrReplayDiverged = errors.New("core: transaction replay diverged: an answer the caller saw came back different")
)

// RuleError is a parse error of a rule string: it names the rule and the
// offending token, and matches ErrInvalidParameterNumber or
// ErrInvalidRuleFormat with errors.Is.
type RuleError struct {
	Rule   string // the rule as written, braces included
	Token  string // the offending token ("" when the whole rule is at fault)
	Reason string // what is wrong and what was expected
	Err    error  // ErrInvalidParameterNumber or ErrInvalidRuleFormat
}

// Error implements error: core: rule "{1205:3,2AND2}": "2AND2" is not a number.
func (e *RuleError) Error() string {
	return "core: rule " + strconv.Quote(e.Rule) + ": " + e.Reason
}

// Unwrap returns the sentinel.
func (e *RuleError) Unwrap() error { return e.Err }

// RetryError is returned when a loop stops after at least one retry, or
// refuses a retry for a reason of its own (queryTimeout, budget, deadline,
// loginTimeout). It unwraps both to its reason (a sentinel such as
// ErrRetriesExhausted) and to the last error of the attempt, so errors.Is
// and errors.As see both.
type RetryError struct {
	Attempts int   // attempts that ran, the first one included
	Reason   error // a sentinel: ErrRetriesExhausted, ErrInvalidRetryInterval, ...
	Err      error // the last attempt's error, as the driver returned it
	CtxErr   error // the context's error when the context ended the loop, else nil
	Detail   string

	final bool // a statement or transaction loop gave up: no loop above retries it (see retriedBelow)
}

// Error implements error. When no attempt ran (an open circuit breaker),
// the error it carries is the one of the earlier operation that opened the
// breaker, and the message says so.
func (e *RetryError) Error() string {
	msg := e.Reason.Error()
	if e.Detail != "" {
		msg += " (" + e.Detail + ")"
	}
	if e.Attempts == 0 {
		if e.Err == nil {
			return msg + ": nothing ran"
		}
		return fmt.Sprintf("%s: nothing ran; the error that opened it: %v", msg, e.Err)
	}
	return fmt.Sprintf("%s after %d %s: %v", msg, e.Attempts, plural(e.Attempts, "attempt", "attempts"), e.Err)
}

// Unwrap returns the reason, the driver's error and CtxErr when set.
func (e *RetryError) Unwrap() []error {
	if e.CtxErr != nil {
		return []error{e.Reason, e.Err, e.CtxErr}
	}
	return []error{e.Reason, e.Err}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
