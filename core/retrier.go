package core

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync/atomic"
	"time"
)

// Options are the collaborators of a Retrier. The zero value is valid.
type Options struct {
	// Clock is the time source. Nil means SystemClock.
	Clock Clock
	// Observer receives events. Nil means none, at no cost.
	Observer Observer
	// Budget is the retry budget shared by this Retrier's loops. Nil means
	// a new default budget (BudgetSettings{}), unless NoBudget is set.
	Budget *Budget
	// NoBudget turns the retry budget off: every retry a rule allows runs.
	NoBudget bool
	// Breaker is the circuit breaker of this Retrier's statement and
	// transaction loops. Nil means none (the default).
	Breaker *Breaker
	// Random returns a value in [0, 1) for jitter. Nil means math/rand/v2.
	Random func() float64
	// Refresh, when set, is called at the start of every operation; the
	// config package uses it for the lazy hot reload of a properties file.
	// It must be cheap when there is nothing to do.
	Refresh func()
}

// Retrier runs statements, transactions and connection attempts under a
// Policy. It is safe for concurrent use; each database handle has its own.
// Its Policy can be swapped at any time (SetPolicy) without locks.
type Retrier struct {
	policy   atomic.Pointer[Policy]
	clock    Clock
	observer Observer
	budget   *Budget
	breaker  *Breaker
	random   func() float64
	refresh  func()
	ops      OperationObserver // observer, when it implements it
	opBase   uint64            // random base of the Op numbers of events
	opSeq    atomic.Uint64
}

// NewRetrier returns a Retrier for p, or an error naming the first field
// of p that is out of range.
func NewRetrier(p Policy, o Options) (*Retrier, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	r := &Retrier{clock: o.Clock, observer: o.Observer, budget: o.Budget, breaker: o.Breaker, random: o.Random, refresh: o.Refresh}
	if r.clock == nil {
		r.clock = SystemClock{}
	}
	if r.random == nil {
		r.random = rand.Float64
	}
	if o.NoBudget {
		r.budget = nil
	} else if r.budget == nil {
		r.budget = newDefaultBudget()
	}
	if r.observer != nil {
		r.ops, _ = r.observer.(OperationObserver)
		r.opBase = rand.Uint64()
	}
	r.policy.Store(&p)
	return r, nil
}

// operation is what the events of one operation share.
type operation struct {
	ctx     context.Context
	kind    Kind
	query   string
	id      uint64 // drawn at the first event
	started time.Time
}

// opID returns o's event number, drawing it at the first event.
func (r *Retrier) opID(o *operation) uint64 {
	for o.id == 0 {
		o.id = r.opBase + r.opSeq.Add(1)
	}
	return o.id
}

// SetPolicy replaces the policy atomically; operations already running keep
// the policy they started with.
func (r *Retrier) SetPolicy(p Policy) error {
	if err := p.Validate(); err != nil {
		return err
	}
	r.policy.Store(&p)
	return nil
}

// Policy returns the current policy.
func (r *Retrier) Policy() Policy { return *r.policy.Load() }

// Budget returns the retry budget, nil when it is off.
func (r *Retrier) Budget() *Budget { return r.budget }

// Breaker returns the circuit breaker, nil when it is off.
func (r *Retrier) Breaker() *Breaker { return r.breaker }

// Clock returns the retrier's clock.
func (r *Retrier) Clock() Clock { return r.clock }

// Do runs one statement under the statement rules: fn is called, and
// called again after the rule's wait while it fails with an error whose
// rule allows another retry and whose query filter matches query.
//
// A first attempt that fails with an error no rule retries is returned
// unchanged. Every other failure is a *RetryError that unwraps to the last
// driver error and to its reason (ErrRetriesExhausted,
// ErrInvalidRetryInterval, ErrRetryBudgetExceeded, ErrDeadline,
// ErrNotRetryable). A positive QueryTimeout bounds each attempt; the
// attempt's context is cancelled when fn returns. Do must not be used for a
// statement inside a transaction.
func (r *Retrier) Do(ctx context.Context, query string, fn func(ctx context.Context) error) error {
	return r.loop(ctx, KindStatement, query, fn, nil, boundCancel)
}

// DoRows is Do for statements whose result (rows) is read after fn
// returns: on success the attempt's context, bounded by a positive
// QueryTimeout, is not cancelled, so reading the rows is bounded too; it
// is released (its timer stopped) as soon as the rows are closed or read
// to the end (database/sql tells it, see rowsContext), so a read keeps
// nothing alive until the timeout.
func (r *Retrier) DoRows(ctx context.Context, query string, fn func(ctx context.Context) error) error {
	return r.loop(ctx, KindStatement, query, fn, nil, boundKeep)
}

// DoTx runs a whole transaction under the statement rules: fn runs the
// transaction from BEGIN to COMMIT and returns, when it fails, the text of
// the statement that failed ("" when the failure was not a statement), so
// that the rule's query filter is checked against it. fn is called again on
// a fresh transaction when the error is retryable. An error that matches
// ErrCommitUnknown is never retried. Attempts are not bounded by
// QueryTimeout (the statements inside are, by the adapter).
func (r *Retrier) DoTx(ctx context.Context, fn func(ctx context.Context) (failedQuery string, err error)) error {
	return r.loop(ctx, KindTransaction, "", nil, fn, boundNone)
}

// Retry is Do for a statement that returns a value; on failure the value
// is the zero value.
func Retry[T any](ctx context.Context, r *Retrier, query string, fn func(ctx context.Context) (T, error)) (T, error) {
	return retry(ctx, r, query, fn, boundCancel)
}

// RetryRows is DoRows for a statement that returns its rows: the attempt's
// context lives on, so that reading the rows after RetryRows returns is
// still bounded by QueryTimeout, until the rows are closed or read to the
// end. On failure the rows are the zero value.
func RetryRows[T any](ctx context.Context, r *Retrier, query string, fn func(ctx context.Context) (T, error)) (T, error) {
	return retry(ctx, r, query, fn, boundKeep)
}

func retry[T any](ctx context.Context, r *Retrier, query string, fn func(ctx context.Context) (T, error), b bound) (T, error) {
	var out T
	err := r.loop(ctx, KindStatement, query, func(ctx context.Context) error {
		v, err := fn(ctx)
		if err == nil {
			out = v
		}
		return err
	}, nil, b)
	return out, err
}

type bound uint8

const (
	boundNone   bound = iota // attempts are not bounded
	boundCancel              // bounded by QueryTimeout, cancelled when fn returns
	boundKeep                // bounded by QueryTimeout, released when the rows are done
)

func (r *Retrier) loop(ctx context.Context, kind Kind, query string,
	stmt func(context.Context) error, tx func(context.Context) (string, error), b bound) error {
	if r.refresh != nil {
		r.refresh()
	}
	var o operation // fields set one by one: a literal is built aside and copied, which stalls
	o.ctx, o.kind, o.query = ctx, kind, query
	r.begin(&o)
	pm, err := r.admit(&o)
	if err != nil {
		return err
	}
	return r.run(&o, pm, stmt, tx, b)
}

// begin starts o: it counts it for an OperationObserver and notes its
// start when there is an observer. (o is built by the caller and passed by
// pointer: returning it by value cost a store-forwarding stall, half the
// success path.)
func (r *Retrier) begin(o *operation) {
	if r.observer != nil { // the only cost on the success path without one
		if r.ops != nil {
			r.ops.Operation(o.kind)
		}
		o.started = r.clock.Now()
	}
}

// admit asks the circuit breaker whether o may start, and emits GaveUp
// when it may not.
func (r *Retrier) admit(o *operation) (permit, error) {
	pm, err := r.breaker.allow()
	if err != nil && r.observer != nil {
		r.observer.GaveUp(GaveUp{Context: o.ctx, Op: r.opID(o), Kind: o.kind, Query: o.query, Reason: ErrCircuitOpen, Err: err})
	}
	return pm, err
}

// Admission is the circuit breaker's leave for one operation: Admit gives
// it before anything of the operation runs, and DoTxAdmitted reports the
// operation's outcome to it. The zero value is the leave of a Retrier
// without a breaker.
type Admission struct {
	p permit
	o operation
}

// Admit starts a transaction unit and asks the circuit breaker whether it
// may run. It is for adapters whose first attempt runs before the loop
// does (GORM runs a Create's first attempt through its own callbacks):
// they ask before that attempt and hand the Admission to DoTxAdmitted.
// When the breaker is open the error matches ErrCircuitOpen (and unwraps
// to the error that opened it), a GaveUp event is emitted, and nothing of
// the operation may run. The other loops ask by themselves.
func (r *Retrier) Admit(ctx context.Context) (Admission, error) {
	if r.refresh != nil {
		r.refresh()
	}
	o := operation{ctx: ctx, kind: KindTransaction}
	r.begin(&o)
	pm, err := r.admit(&o)
	return Admission{p: pm, o: o}, err
}

// Release gives back an Admission that will not reach DoTxAdmitted (the
// operation will not be retried as a whole): it tells the breaker nothing
// about the database, and a probe's place goes to the next operation.
func (a Admission) Release() { a.p.undecided() }

// DoTxAdmitted is DoTx for a transaction unit that Admit let start: it
// does not ask the breaker again, and reports the outcome of its attempts
// to a.
func (r *Retrier) DoTxAdmitted(ctx context.Context, a Admission, fn func(ctx context.Context) (failedQuery string, err error)) error {
	o := a.o
	o.ctx = ctx
	return r.run(&o, a.p, nil, fn, boundNone)
}

// verdict is what an operation's outcome tells the circuit breaker.
type verdict uint8

const (
	answered  verdict = iota // the database answered: success, or an error no rule retries
	failedRun                // a retryable failure the loop gave up on
)

// run is the loop after admission. Whatever ends it, the outcome reaches
// the breaker: a panic (or runtime.Goexit) in fn, a hook or an observer
// counts as a failure, and goes on.
func (r *Retrier) run(o *operation, pm permit,
	stmt func(context.Context) error, tx func(context.Context) (string, error), b bound) error {
	if pm.b == nil { // no breaker: nothing to report
		err, _ := r.attempts(o, stmt, tx, b)
		return err
	}
	settled := false
	defer func() {
		if !settled {
			pm.failed(errPanicked)
		}
	}()
	err, v := r.attempts(o, stmt, tx, b)
	settled = true
	switch {
	case v == failedRun:
		cause := err
		if re, ok := err.(*RetryError); ok {
			cause = re.Err // the driver's error opens the breaker, not the loop's
		}
		pm.failed(cause)
	case err != nil && o.ctx.Err() != nil:
		// The context ended: the error may be its own, not the database's.
		pm.undecided()
	default:
		pm.succeeded()
	}
	return err
}

// attempts runs the attempts and waits, and returns the operation's error
// with what it tells the breaker.
func (r *Retrier) attempts(o *operation,
	stmt func(context.Context) error, tx func(context.Context) (string, error), b bound) (error, verdict) {
	ctx, kind := o.ctx, o.kind
	p := r.policy.Load()
	for attempt := 1; ; attempt++ {
		var err error
		timedOut := false
		if tx != nil {
			var failed string
			if failed, err = tx(ctx); err != nil {
				o.query = failed // the events name the statement that failed
			}
		} else {
			err, timedOut = r.attempt(ctx, p, stmt, b)
		}
		if err == nil {
			r.budget.Earn()
			if attempt > 1 && r.observer != nil {
				r.observer.Succeeded(Succeeded{Context: ctx, Op: r.opID(o), Kind: kind, Query: o.query,
					Attempts: attempt, Elapsed: r.clock.Now().Sub(o.started)})
			}
			return nil, answered
		}
		query := o.query
		if kind == KindTransaction && errors.Is(err, ErrCommitUnknown) {
			// Never retried, never silent: the caller must find out
			// whether the transaction was applied.
			if r.observer != nil {
				r.observer.GaveUp(GaveUp{Context: ctx, Op: r.opID(o), Kind: kind, Query: "COMMIT",
					Attempts: attempt, Reason: ErrCommitUnknown, Err: err})
			}
			return err, failedRun
		}
		cl := classify(err, timedOut)
		rule := p.Statement.lookup(cl)
		if rule == nil || rule.count == 0 || !rule.Matches(query) {
			r.budget.Earn() // not a retryable failure
			if attempt == 1 {
				return err, answered
			}
			return r.giveUp(o, attempt, ErrNotRetryable, err, nil, ""), answered
		}
		if kind == KindStatement {
			if why := notAlone(query, rule); why != "" {
				return r.giveUp(o, attempt, ErrBatchNotRetried, err, nil, why), failedRun
			}
		}
		retry := attempt - 1
		if retry >= rule.count {
			r.budget.Failed(cl.timeout)
			return r.giveUp(o, attempt, ErrRetriesExhausted, err, nil, ""), failedRun
		}
		scheduled := rule.wait(retry)
		if qt := p.QueryTimeout; qt != 0 && scheduled > max(qt, 0) {
			return r.giveUp(o, attempt, ErrInvalidRetryInterval, err, nil,
				"wait "+scheduled.String()+" > queryTimeout "+max(qt, 0).String()), failedRun
		}
		wait := p.Jitter.apply(scheduled, r.random)
		if dl, ok := ctx.Deadline(); ok && !r.clock.Now().Add(wait).Before(dl) {
			return r.giveUp(o, attempt, ErrDeadline, err, nil, "wait "+wait.String()), failedRun
		}
		if !r.budget.Withdraw(cl.timeout) {
			return r.giveUp(o, attempt, ErrRetryBudgetExceeded, err, nil, ""), failedRun
		}
		if r.observer != nil {
			r.observer.RetryScheduled(RetryScheduled{Context: ctx, Op: r.opID(o), Kind: kind, Query: query,
				Attempt: attempt, Wait: wait, Token: rule.tok.String(), Err: err})
		}
		if cerr := r.clock.Sleep(ctx, wait); cerr != nil {
			return r.giveUp(o, attempt, ErrDeadline, err, cerr, "context ended during the wait"), failedRun
		}
	}
}

// attempt runs fn once, bounded by a positive QueryTimeout. It reports
// whether the attempt's own time limit ran out while ctx is alive.
func (r *Retrier) attempt(ctx context.Context, p *Policy, fn func(context.Context) error, b bound) (error, bool) {
	if p.QueryTimeout <= 0 || b == boundNone {
		return fn(ctx), false
	}
	if b == boundKeep {
		// The rows are read after fn returns: the context lives until they
		// are closed or read to the end, or until its deadline.
		actx := newRowsContext(ctx, p.QueryTimeout)
		err := fn(actx)
		timedOut := err != nil && actx.Err() == context.DeadlineExceeded && ctx.Err() == nil
		if err != nil {
			actx.cancel(context.Canceled)
		} else {
			actx.returnedRows()
		}
		return err, timedOut
	}
	actx, cancel := context.WithTimeout(ctx, p.QueryTimeout)
	err := fn(actx)
	timedOut := err != nil && actx.Err() == context.DeadlineExceeded && ctx.Err() == nil
	cancel()
	return err, timedOut
}

func (r *Retrier) giveUp(o *operation, attempts int, reason, err, ctxErr error, detail string) error {
	if r.observer != nil {
		r.observer.GaveUp(GaveUp{Context: o.ctx, Op: r.opID(o), Kind: o.kind, Query: o.query, Attempts: attempts, Reason: reason, Err: err})
	}
	return &RetryError{Attempts: attempts, Reason: reason, Err: err, Context: ctxErr, Detail: detail}
}
