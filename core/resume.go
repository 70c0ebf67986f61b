package core

import "context"

// Resume runs the rest of a transaction loop whose first attempt already
// ran outside it: the loop of a unit of work that learns which Retrier it
// runs under only while it runs (crl.Retry finds the pool when the unit's
// first statement reaches it). failedQuery and firstErr are the first
// attempt's outcome; fn runs each later attempt, as DoTx's fn does.
//
// A first attempt that succeeded is counted and earns the budget, and
// Resume returns nil. One that failed is decided on as DoTx decides: when
// a rule retries it, the circuit breaker is asked before the first retry
// (an open breaker ends the loop with a *RetryError that matches
// ErrCircuitOpen and unwraps to firstErr), then the retries run under the
// budget; otherwise firstErr is returned unchanged.
func (r *Retrier) Resume(ctx context.Context, failedQuery string, firstErr error, fn func(ctx context.Context) (failedQuery string, err error)) error {
	if r.refresh != nil {
		r.refresh()
	}
	var o operation
	o.ctx, o.kind, o.query = ctx, KindTransaction, failedQuery
	r.begin(&o)
	first := true
	call := func(ctx context.Context) (string, error) {
		if first {
			first = false
			return failedQuery, firstErr
		}
		return fn(ctx)
	}
	var pm permit
	if firstErr != nil && r.breaker != nil {
		if d := r.policy.Load().decide(KindTransaction, failedQuery, 1, firstErr, false); d.Reason == nil && !r.optedOut(ctx) {
			var err error
			if pm, err = r.breaker.allow(); err != nil {
				e := &RetryError{Attempts: 1, Reason: ErrCircuitOpen, Err: firstErr,
					Detail: "the circuit breaker refused the retry"}
				if r.observer != nil {
					r.observer.GaveUp(GaveUp{Context: ctx, Op: r.opID(&o), Kind: o.kind, Query: failedQuery,
						Attempts: 1, Reason: ErrCircuitOpen, Err: firstErr})
				}
				return e
			}
		}
	}
	return r.run(&o, r.policy.Load(), pm, call, limitNone, nil)
}

// Unretried tells the Retrier of a statement's error that came where it
// cannot be retried: after the query's first row was handed to the
// caller, who may have read it. The error is not retried; when a rule
// would have retried it and the caller did not opt out (Options.NoRetry),
// the budget is charged for it as for a retryable failure that was not
// retried, and the observer gets a GaveUp whose Reason is
// ErrAfterFirstRow. The caller returns err as it is.
func (r *Retrier) Unretried(ctx context.Context, query string, err error) {
	if err == nil {
		return
	}
	d := r.policy.Load().decide(KindStatement, query, 1, err, false)
	if d.Reason != nil || r.optedOut(ctx) {
		r.budget.settle(&d)
		return
	}
	d.charge = chargeFail
	r.budget.settle(&d)
	if r.observer != nil {
		o := operation{ctx: ctx, kind: KindStatement, query: query}
		r.observer.GaveUp(GaveUp{Context: ctx, Op: r.opID(&o), Kind: KindStatement, Query: query,
			Attempts: 1, Reason: ErrAfterFirstRow, Err: err})
	}
}

// Admission is the circuit breaker's leave for one transaction unit, the
// two steps of a two-step breaker in one value: Admit gives it before
// anything of the unit runs; then exactly one of its methods ends it —
// DoTx runs the unit's attempts and reports their outcome, Release gives
// the leave back unused. The zero value is not a leave; Admit makes them.
type Admission struct {
	r *Retrier
	p permit
	o operation
}

// Admit starts a transaction unit and asks the circuit breaker whether it
// may run. It is for adapters whose first attempt runs before the loop
// does (GORM runs a Create's first attempt through its own callbacks):
// they ask before that attempt and then call the Admission's DoTx.
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
	return Admission{r: r, p: pm, o: o}, err
}

// Release gives back an Admission whose unit will not be run through DoTx
// (it will not be retried as a whole): it tells the breaker nothing about
// the database, and a probe's place goes to the next operation.
func (a Admission) Release() { a.p.undecided() }

// DoTx is Retrier.DoTx for the transaction unit that Admit let start: it
// does not ask the breaker again, and reports the outcome of the unit's
// attempts to it. An Admission that Admit did not return is an error
// (errNotAdmitted), and runs nothing.
func (a Admission) DoTx(ctx context.Context, fn func(ctx context.Context) (failedQuery string, err error)) error {
	if a.r == nil {
		return errNotAdmitted
	}
	o := a.o
	o.ctx = ctx
	return a.r.run(&o, a.r.policy.Load(), a.p, fn, limitNone, nil)
}
