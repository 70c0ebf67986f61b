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
		if d := r.policy.Load().decide(KindTransaction, failedQuery, 1, firstErr, false); d.Reason == nil {
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
// would have retried it, the budget is charged for it as for a retryable
// failure that was not retried, and the observer gets a GaveUp whose
// Reason is ErrAfterFirstRow. The caller returns err as it is.
func (r *Retrier) Unretried(ctx context.Context, query string, err error) {
	if err == nil {
		return
	}
	d := r.policy.Load().decide(KindStatement, query, 1, err, false)
	if d.Reason != nil {
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
