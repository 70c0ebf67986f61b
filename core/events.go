package core

import "time"

// Observer receives the loops' events. Methods run on the goroutine that
// runs the statement, outside any lock, and must not block. A nil Observer
// costs nothing; embed NopObserver to implement only some methods.
//
// No event is emitted on the success path of a first attempt.
type Observer interface {
	// RetryScheduled is called before the loop waits for a retry.
	RetryScheduled(RetryScheduled)
	// GaveUp is called when the loop returns an error after a retryable
	// failure: retries used up, or a retry refused (queryTimeout, budget,
	// deadline, loginTimeout, filter, a batch not retried on its own); for
	// a COMMIT of unknown outcome (ErrCommitUnknown); and for an operation
	// the circuit breaker refused (ErrCircuitOpen).
	GaveUp(GaveUp)
	// Succeeded is called when an operation succeeds after at least one
	// retry.
	Succeeded(Succeeded)
	// ConnectionRetry is called before the connection loop waits for a
	// retry.
	ConnectionRetry(ConnectionRetry)
	// RulesReloaded is called when a hot reload of the rules succeeded or
	// failed (see the config package).
	RulesReloaded(RulesReloaded)
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
	Kind    Kind
	Query   string        // the statement text ("" for a connection)
	Attempt int           // the attempt that failed, 1-based
	Wait    time.Duration // the wait before the next attempt, jitter applied
	Token   string        // the error token whose rule fired
	Err     error         // the attempt's error
}

// GaveUp describes an error returned after a retryable failure.
type GaveUp struct {
	Kind     Kind
	Query    string
	Attempts int   // attempts that ran
	Reason   error // a sentinel: ErrRetriesExhausted, ErrRetryBudgetExceeded, ...
	Err      error // the last attempt's error
}

// Succeeded describes an operation that succeeded after retries.
type Succeeded struct {
	Kind     Kind
	Query    string
	Attempts int // attempts that ran, the successful one included (≥ 2)
	Elapsed  time.Duration
}

// ConnectionRetry describes a connection retry about to wait.
type ConnectionRetry struct {
	Attempt int           // the attempt that failed, 1-based
	Wait    time.Duration // 0 for the first retry, connectRetryInterval after
	Elapsed time.Duration // since the first attempt started
	Err     error
}

// RulesReloaded describes a reload of a properties file.
type RulesReloaded struct {
	Path string
	Line int   // the offending line (1-based) when Err is a parse error
	Err  error // nil when the new rules took effect
}

// NopObserver implements Observer and does nothing; embed it to implement
// only the methods you need.
type NopObserver struct{}

// RetryScheduled does nothing.
func (NopObserver) RetryScheduled(RetryScheduled) {}

// GaveUp does nothing.
func (NopObserver) GaveUp(GaveUp) {}

// Succeeded does nothing.
func (NopObserver) Succeeded(Succeeded) {}

// ConnectionRetry does nothing.
func (NopObserver) ConnectionRetry(ConnectionRetry) {}

// RulesReloaded does nothing.
func (NopObserver) RulesReloaded(RulesReloaded) {}
