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
		r.budget = NewBudget(BudgetSettings{}, r.clock)
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
// returns: the attempt's context, bounded by a positive QueryTimeout, is
// not cancelled on success but ends by itself at its deadline, so reading
// the rows is bounded too.
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
// context is left to end at its deadline, so that reading the rows after
// RetryRows returns is still bounded by QueryTimeout. On failure the rows
// are the zero value.
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
	boundKeep                // bounded by QueryTimeout, left to expire
)

func (r *Retrier) loop(ctx context.Context, kind Kind, query string,
	stmt func(context.Context) error, tx func(context.Context) (string, error), b bound) error {
	if r.refresh != nil {
		r.refresh()
	}
	p := r.policy.Load()
	o := operation{ctx: ctx, kind: kind, query: query}
	if r.observer != nil { // the only cost on the success path without one
		if r.ops != nil {
			r.ops.Operation(kind)
		}
		o.started = r.clock.Now()
	}
	if err := r.breaker.allow(); err != nil {
		if r.observer != nil {
			r.observer.GaveUp(GaveUp{Context: ctx, Op: r.opID(&o), Kind: kind, Query: query, Reason: ErrCircuitOpen, Err: err})
		}
		return err
	}
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
			r.breaker.succeeded()
			if attempt > 1 && r.observer != nil {
				r.observer.Succeeded(Succeeded{Context: ctx, Op: r.opID(&o), Kind: kind, Query: o.query,
					Attempts: attempt, Elapsed: r.clock.Now().Sub(o.started)})
			}
			return nil
		}
		query := o.query
		if kind == KindTransaction && errors.Is(err, ErrCommitUnknown) {
			r.breaker.failed(err)
			return err
		}
		cl := classify(err, timedOut)
		rule := p.Statement.lookup(cl)
		if rule == nil || rule.count == 0 || !rule.Matches(query) {
			r.budget.Earn() // not a retryable failure
			if attempt == 1 {
				r.breaker.succeeded()
				return err
			}
			return r.giveUp(&o, attempt, ErrNotRetryable, err, nil, "")
		}
		retry := attempt - 1
		if retry >= rule.count {
			return r.giveUp(&o, attempt, ErrRetriesExhausted, err, nil, "")
		}
		scheduled := rule.wait(retry)
		if qt := p.QueryTimeout; qt != 0 && scheduled > max(qt, 0) {
			return r.giveUp(&o, attempt, ErrInvalidRetryInterval, err, nil,
				"wait "+scheduled.String()+" > queryTimeout "+max(qt, 0).String())
		}
		wait := p.Jitter.apply(scheduled, r.random)
		if dl, ok := ctx.Deadline(); ok && !r.clock.Now().Add(wait).Before(dl) {
			return r.giveUp(&o, attempt, ErrDeadline, err, nil, "wait "+wait.String())
		}
		if !r.budget.Withdraw(cl.timeout) {
			return r.giveUp(&o, attempt, ErrRetryBudgetExceeded, err, nil, "")
		}
		if r.observer != nil {
			r.observer.RetryScheduled(RetryScheduled{Context: ctx, Op: r.opID(&o), Kind: kind, Query: query,
				Attempt: attempt, Wait: wait, Token: rule.tok.String(), Err: err})
		}
		if cerr := r.clock.Sleep(ctx, wait); cerr != nil {
			return r.giveUp(&o, attempt, ErrDeadline, err, cerr, "context ended during the wait")
		}
	}
}

// attempt runs fn once, bounded by a positive QueryTimeout. It reports
// whether the attempt's own time limit ran out while ctx is alive.
func (r *Retrier) attempt(ctx context.Context, p *Policy, fn func(context.Context) error, b bound) (error, bool) {
	if p.QueryTimeout <= 0 || b == boundNone {
		return fn(ctx), false
	}
	actx, cancel := context.WithTimeout(ctx, p.QueryTimeout)
	err := fn(actx)
	timedOut := err != nil && actx.Err() == context.DeadlineExceeded && ctx.Err() == nil
	if err != nil || b == boundCancel {
		cancel()
	} else {
		// The rows are read after fn returns: leave the context to end at
		// its deadline, which releases it.
		_ = context.AfterFunc(actx, cancel)
	}
	return err, timedOut
}

func (r *Retrier) giveUp(o *operation, attempts int, reason, err, ctxErr error, detail string) error {
	if o.kind != KindConnection {
		// The database answered: an error no rule retries means it is healthy.
		if reason == ErrNotRetryable {
			r.breaker.succeeded()
		} else {
			r.breaker.failed(err)
		}
	}
	if r.observer != nil {
		r.observer.GaveUp(GaveUp{Context: o.ctx, Op: r.opID(o), Kind: o.kind, Query: o.query, Attempts: attempts, Reason: reason, Err: err})
	}
	return &RetryError{Attempts: attempts, Reason: reason, Err: err, Context: ctxErr, Detail: detail}
}

// Connect runs the connection loop of the JDBC driver around fn, one login
// attempt: up to connectRetryCount extra attempts for errors that
// Policy.Connection.Retryable accepts; the first retry is immediate, later
// ones wait connectRetryInterval; the loop stops early when the time
// elapsed since the first attempt plus the interval reaches loginTimeout.
// Each attempt's context ends at the loginTimeout. The retry budget applies.
func (r *Retrier) Connect(ctx context.Context, fn func(ctx context.Context) error) error {
	if r.refresh != nil {
		r.refresh()
	}
	p := r.policy.Load()
	count, interval, login := p.connectRetryCount(), p.connectRetryInterval(), p.loginTimeout()
	if r.ops != nil {
		r.ops.Operation(KindConnection)
	}
	start := r.clock.Now()
	o := operation{ctx: ctx, kind: KindConnection, started: start}
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, login)
		err := fn(actx)
		timedOut := err != nil && actx.Err() == context.DeadlineExceeded && ctx.Err() == nil
		cancel()
		if err == nil {
			r.budget.Earn()
			if attempt > 1 && r.observer != nil {
				r.observer.Succeeded(Succeeded{Context: ctx, Op: r.opID(&o), Kind: KindConnection, Attempts: attempt, Elapsed: r.clock.Now().Sub(start)})
			}
			return nil
		}
		cl := classify(err, timedOut)
		if !p.Connection.retryable(cl) {
			r.budget.Earn()
			if attempt == 1 {
				return err
			}
			return r.giveUp(&o, attempt, ErrNotRetryable, err, nil, "")
		}
		if attempt > count {
			if attempt == 1 { // connection retries are off
				return err
			}
			return r.giveUp(&o, attempt, ErrRetriesExhausted, err, nil, "")
		}
		elapsed := r.clock.Now().Sub(start)
		if elapsed+interval >= login {
			return r.giveUp(&o, attempt, ErrLoginTimeout, err, nil,
				"elapsed "+elapsed.String()+" + connectRetryInterval "+interval.String()+" ≥ loginTimeout "+login.String())
		}
		var wait time.Duration
		if attempt > 1 {
			wait = interval
		}
		if dl, ok := ctx.Deadline(); ok && !r.clock.Now().Add(wait).Before(dl) {
			return r.giveUp(&o, attempt, ErrDeadline, err, nil, "wait "+wait.String())
		}
		if !r.budget.Withdraw(cl.timeout) {
			return r.giveUp(&o, attempt, ErrRetryBudgetExceeded, err, nil, "")
		}
		if r.observer != nil {
			r.observer.ConnectionRetry(ConnectionRetry{Context: ctx, Op: r.opID(&o), Attempt: attempt, Wait: wait, Elapsed: elapsed, Err: err})
		}
		if cerr := r.clock.Sleep(ctx, wait); cerr != nil {
			return r.giveUp(&o, attempt, ErrDeadline, err, cerr, "context ended during the wait")
		}
	}
}
