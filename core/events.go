package core

import (
	"context"
	"errors"
	"time"
)

// Observer receives the loops' events. Methods run on the goroutine that
// runs the operation, outside any lock, and must not block. A nil Observer
// costs nothing; embed NopObserver and write only the methods you need.
//
// Operation is told of every operation's start; the other events come
// only from an operation that fails: no event but Operation is emitted on
// the success path of a first attempt.
//
// An observer that also has a method OperationEnded(OperationEnded) (as
// NopObserver has, and so every observer that embeds it) is told of every
// operation's end there, and reads the time of operations: the Elapsed of
// events. The Retrier looks for the method once, when it is built
// (NewRetrier). An observer without it (a metrics hook that counts, it
// does not time, written without NopObserver) costs a statement's first
// attempt its Operation alone: the loops read no clock for it, and
// Elapsed is 0 in its events. With it, every operation runs through the
// whole loop: the cost on the success path is two clock reads and
// OperationEnded.
//
// OperationEnded is called once when the loop of an operation ends,
// whatever ended it: a success, an error, or a panic (or runtime.Goexit)
// in the operation's function, a hook or an observer, which then goes on.
// A hook that holds state per operation (an open span) releases it there,
// and a metrics hook times every operation with it. It covers the
// operations whose loop ran: a statement, a transaction unit and a
// connection. An operation the circuit breaker refused ends with its
// GaveUp (ErrCircuitOpen) instead, and an admitted Op that is Released
// never ran a loop.
//
// The events of one operation share its Context and its Op.
//
// Context is the context the caller gave the operation (Run, Do, DoTx,
// Connect), so that an observer can find the caller's trace span or
// request values; it is never nil in an event a Retrier emits.
//
// Op identifies one operation across its events: every event of a retried
// operation carries the same non-zero Op, and two operations carry different
// ones, also across Retriers (each Retrier numbers its operations from a
// random 64-bit base). It is drawn at the operation's first event, so an
// operation that emits none costs nothing.
//
// Query is the statement text for a statement; for a transaction, the text
// of the statement that failed last ("" when the failure was not a
// statement, such as BEGIN or the circuit breaker); "" for a connection.
type Observer interface {
	// Operation is called once at the start of every operation a Retrier
	// runs, whatever its outcome: a statement, a transaction unit (once
	// however many times it is re-run) and a connection (once however
	// many login attempts it takes). It is the denominator of a retry
	// ratio (database_total_requests_total in hooks/prometheus). It runs
	// on the success path of every statement: it must not block, lock or
	// allocate; one atomic add is the intended cost.
	Operation(Kind)
	// RetryScheduled is called before a loop waits for a retry: a
	// statement, a transaction or a connection (Kind says which).
	RetryScheduled(RetryScheduled)
	// RetryContext is called right after RetryScheduled, with the
	// operation's context and the same event, and returns the context
	// that the operation's wait, its later attempts and its later events
	// run under: a tracing hook returns ctx with the span it opened for
	// the retries, so that the driver's spans of the retried attempts nest
	// under it. It must return ctx or a context derived from it that ends
	// no earlier (values only), never nil.
	RetryContext(ctx context.Context, e RetryScheduled) context.Context
	// GaveUp is called when the loop returns an error after a retryable
	// failure: retries used up, or a retry refused (queryTimeout, budget,
	// deadline, loginTimeout, filter, a batch not retried on its own); for
	// a COMMIT of unknown outcome (ErrCommitUnknown); and for an operation
	// the circuit breaker refused (ErrCircuitOpen).
	GaveUp(GaveUp)
	// Succeeded is called when an operation succeeds after at least one
	// retry.
	Succeeded(Succeeded)
	// RulesReloaded is called when a hot reload of the rules succeeded or
	// failed (see the config package), and once when a handle is built
	// over a pool crl did not open (an empty Path; see RulesReloaded).
	RulesReloaded(RulesReloaded)
}

// observerEnds returns o as the receiver of OperationEnded, and true,
// when it has the method (see Observer).
func observerEnds(o Observer) (interface{ OperationEnded(OperationEnded) }, bool) {
	e, ok := o.(interface{ OperationEnded(OperationEnded) })
	return e, ok
}

// Kind says which loop an event comes from.
type Kind uint8

const (
	// KindStatement is one statement retried on its own.
	KindStatement Kind = iota
	// KindTransaction is a whole transaction retried by RunInTx-style helpers.
	KindTransaction
	// KindConnection is the connection (login) loop.
	KindConnection
)

// String returns statement, transaction or connection.
func (k Kind) String() string {
	switch k {
	case KindTransaction:
		return "transaction"
	case KindConnection:
		return "connection"
	}
	return "statement"
}

// RetryScheduled describes a retry about to wait.
type RetryScheduled struct {
	Context context.Context
	Op      uint64
	Kind    Kind
	Query   string        // see above: for a transaction, the statement that failed
	Attempt int           // the attempt that failed, 1-based
	Wait    time.Duration // the wait before the next attempt, jitter applied; for a connection 0 for the first retry, connectRetryInterval after
	Elapsed time.Duration // since the first attempt started (0 for an Observer without OperationEnded)
	Token   string        // the error token whose rule fired; "" for a connection
	Err     error         // the attempt's error
	Replay  bool          // a transaction replay of the driver layer (Retrier.Replay), not a unit's re-run
}

// GaveUp describes an error returned after a retryable failure, or an
// operation the circuit breaker refused (Reason ErrCircuitOpen, Attempts 0).
type GaveUp struct {
	Context  context.Context
	Op       uint64
	Kind     Kind
	Query    string
	Attempts int   // attempts that ran
	Reason   error // a sentinel: ErrRetriesExhausted, ErrRetryBudgetExceeded, ...
	Err      error // the last attempt's error
	// Replay marks a transaction replay (Retrier.Replay) that stopped
	// (Reason ErrReplayDiverged) or did not run (Detail says why:
	// rows_open, limit, batch).
	Replay bool
	// Detail says more about Reason, as RetryError's Detail; for a
	// replay, its stop code: diverged, broken, rows_open, limit, batch,
	// answer (the failed statement ran again and failed on its own).
	Detail string
}

// Succeeded describes an operation that succeeded after retries.
type Succeeded struct {
	Context  context.Context
	Op       uint64
	Kind     Kind
	Query    string        // for a transaction, the statement that failed last
	Attempts int           // attempts that ran, the successful one included (≥ 2)
	Elapsed  time.Duration // from the start of the first attempt to the end of the last (0 as in RetryScheduled)
	Replay   bool          // a transaction replay of the driver layer (Retrier.Replay) that succeeded
}

// RulesReloaded describes a reload of a properties file. With no Path, it
// says what a handle's configuration is when the handle is built: an
// adapter over a pool crl did not open emits one, once per handle, whose
// Err says that nothing on that pool is retried (config.ForeignPool).
type RulesReloaded struct {
	Path string
	Line int   // the offending line (1-based) when Err is a parse error
	Err  error // nil when the new rules took effect
}

// NopObserver implements Observer, and OperationEnded, and does nothing;
// embed it to implement only the methods you need. An observer that
// embeds it has OperationEnded, so it is timed (see Observer).
type NopObserver struct{}

// Operation does nothing.
func (NopObserver) Operation(Kind) {}

// RetryScheduled does nothing.
func (NopObserver) RetryScheduled(RetryScheduled) {}

// RetryContext returns ctx.
func (NopObserver) RetryContext(ctx context.Context, _ RetryScheduled) context.Context { return ctx }

// GaveUp does nothing.
func (NopObserver) GaveUp(GaveUp) {}

// Succeeded does nothing.
func (NopObserver) Succeeded(Succeeded) {}

// OperationEnded does nothing. Having it, an observer that embeds
// NopObserver gets Elapsed in its events.
func (NopObserver) OperationEnded(OperationEnded) {}

// RulesReloaded does nothing.
func (NopObserver) RulesReloaded(RulesReloaded) {}

// OperationEnded describes how one operation ended.
type OperationEnded struct {
	Context context.Context
	Op      uint64 // the Op of the operation's other events; 0 when it emitted none
	Kind    Kind
	Query   string        // as in GaveUp: for a transaction, the statement that failed last
	Elapsed time.Duration // from the start of the operation to its end (0 as in RetryScheduled)
	Err     error         // the error the operation returned; nil for a success and for a panic
	// Panicked is true when a panic or runtime.Goexit ended the operation;
	// after OperationEnded returns, the panic goes on with the same value.
	Panicked bool
	// Panic is the value the operation panicked with; nil when it did not
	// panic or ended with runtime.Goexit.
	Panic any
}

// errRunning is the error of a loop that OperationEnded watches until the
// loop returns: still in place when ended runs, it means a panic (or
// runtime.Goexit) ended the loop.
var errRunning = errors.New("core: the operation is running")

// ended emits OperationEnded for o, whose loop returned *err. The loops
// defer it (it is the deferred function, so recover works in it): when
// *err is still errRunning, a panic or runtime.Goexit ended the loop, and
// ended recovers the panic to tell the observer, then panics again with
// the same value (a Goexit goes on by itself).
func (r *Retrier) ended(o *operation, err *error) {
	e := OperationEnded{Context: o.ctx, Op: o.id, Kind: o.kind, Query: o.query, Elapsed: r.elapsed(o), Err: *err}
	if *err != errRunning {
		r.ender.OperationEnded(e)
		return
	}
	e.Err, e.Panicked, e.Panic = nil, true, recover()
	if e.Panic != nil {
		defer panic(e.Panic) // also when the observer itself panics: the operation's panic is the one that goes on
	}
	r.ender.OperationEnded(e)
}
