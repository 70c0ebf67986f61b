package core

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// Options are the collaborators of a Retrier. The zero value is valid: the
// system clock, no observer, no retry budget, no circuit breaker.
type Options struct {
	// Clock is the time source. Nil means systemClock.
	Clock Clock
	// Observer receives events. Nil means none, at no cost.
	Observer Observer
	// Budget is the retry budget shared by this Retrier's loops (NewBudget).
	// Nil means none: every retry a rule allows runs. The config package
	// gives every database handle the default budget unless retryBudget=off.
	Budget *Budget
	// Breaker is the circuit breaker of this Retrier's statement and
	// transaction loops. Nil means none (the default).
	Breaker *Breaker
	// Random returns a value in [0, 1) for jitter. Nil means math/rand/v2.
	Random func() float64
	// Refresh, when set, is called at the start of every operation, before
	// its policy is read; the config package uses it for the lazy hot
	// reload of a properties file (it may call SetPolicy). It must be
	// cheap when there is nothing to do: it does not take a statement's
	// first attempt off the direct path.
	Refresh func()
	// NoRetry, when set, reports whether the caller of an operation run
	// with ctx opted out of retries (crl.WithoutRetry): a failure that a
	// rule would retry is then returned as if no rule named it, unchanged,
	// neither a GaveUp nor charged to the budget. It is asked only then,
	// never on the success path. Nil means no caller opts out.
	NoRetry func(ctx context.Context) bool
}

// Retrier runs statements, transactions and connection attempts under a
// Policy. It is safe for concurrent use; each database handle has its own.
// Its Policy can be swapped at any time (SetPolicy) without locks.
type Retrier struct {
	policy   atomic.Pointer[Policy]
	direct   atomic.Pointer[Policy] // the policy when a first attempt may run directly, else nil (see statement)
	gen      atomic.Uint64          // twice the policies stored (store): the current one's generation, even and not zero (WantsFirstRowMemo)
	quiet    bool                   // no breaker, and no observer but one that only counts: a first attempt has nobody to ask or tell
	lean     bool                   // no refresh and no observer: Direct reads the policy and the budget only
	leanPath atomic.Pointer[Policy] // direct when lean, else nil: DirectLean's one load
	mu       sync.Mutex             // orders the stores of direct (store, Hold)
	holds    int                    // Hold's holds not released yet, under mu
	clock    Clock
	observer Observer
	budget   *Budget
	breaker  *Breaker
	random   func() float64
	refresh  func()
	noRetry  func(ctx context.Context) bool              // Options.NoRetry
	ender    interface{ OperationEnded(OperationEnded) } // the observer when it wants OperationEnded, else nil
	timed    bool                                        // ender is set: operations are timed and their end told
	opBase   uint64                                      // random base of the Op numbers of events
	opSeq    atomic.Uint64
}

// NewRetrier returns a Retrier for p, or an error naming the first field
// of p that is out of range.
func NewRetrier(p Policy, o Options) (*Retrier, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	r := &Retrier{clock: o.Clock, observer: o.Observer, budget: o.Budget, breaker: o.Breaker, random: o.Random, refresh: o.Refresh, noRetry: o.NoRetry}
	if r.clock == nil {
		r.clock = systemClock{}
	}
	if r.random == nil {
		r.random = rand.Float64
	}
	if r.observer != nil {
		r.opBase = rand.Uint64()
		r.ender, r.timed = observerEnds(r.observer)
	}
	r.quiet = !r.timed && r.breaker == nil
	r.lean = r.refresh == nil && r.observer == nil
	r.store(&p)
	return r, nil
}

// attemptFunc is one attempt of an operation, the one shape of every
// loop: it returns the attempt's error.
type attemptFunc = func(ctx context.Context) error

// attempts is how an operation's attempts run: fn, bounded by
// QueryTimeout as l says, and after a failure failed (when set) tells
// which statement failed (Op.Failed). It is passed beside the operation:
// stored in it, the closures would leak with the context that the events
// hand to the observer, and allocate.
type attempts struct {
	fn     attemptFunc
	failed func() string
	l      limit
}

// operation is what the events of one operation share. (Its attempts are
// passed beside it.)
type operation struct {
	ctx     context.Context
	kind    Kind
	query   string // for a transaction, the statement that failed last
	replay  bool   // a transaction replay (Retrier.Replay): its events say so
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
	r.store(&p)
	return nil
}

// store makes p the policy. An operation that starts meanwhile runs under
// the old policy or the new one, either whole.
func (r *Retrier) store(p *Policy) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.policy.Store(p)
	r.gen.Add(2) // after the policy: see firstRowMemo
	r.storeDirect()
}

// storeDirect sets direct for the policy, under mu: the policy when a
// statement's first attempt may run directly (nobody to ask or tell, no
// QueryTimeout, nothing held), else nil.
func (r *Retrier) storeDirect() {
	var direct, lean *Policy
	if p := r.policy.Load(); r.quiet && p.QueryTimeout <= 0 && r.holds == 0 {
		direct = p
	}
	if r.lean {
		lean = direct
	}
	r.direct.Store(direct)
	r.leanPath.Store(lean)
}

// Hold takes statements' first attempts off the direct path until the
// release it returns is called (a second call does nothing): Direct
// answers false and Run runs them through the loop, for a caller that asks
// something before every attempt, which a direct attempt would not (the
// driver layer's injected faults, config.Runtime.AddFault). Holds add up;
// the direct path comes back when all are released.
func (r *Retrier) Hold() (release func()) {
	r.mu.Lock()
	r.holds++
	r.storeDirect()
	r.mu.Unlock()
	var once atomic.Bool
	return func() {
		if once.Swap(true) {
			return
		}
		r.mu.Lock()
		r.holds--
		r.storeDirect()
		r.mu.Unlock()
	}
}

// Policy returns the current policy.
func (r *Retrier) Policy() Policy { return *r.policy.Load() }

// Budget returns the retry budget, nil when it is off.
func (r *Retrier) Budget() *Budget { return r.budget }

// Op describes an operation that Run runs. The zero value (and a nil
// *Op) is a statement whose first attempt Run runs. Run reads it and
// keeps nothing of it.
type Op struct {
	// Kind says which loop runs the operation: a statement (the zero
	// value), a whole transaction or unit of work, or a connection (see
	// Connect).
	Kind Kind
	// Ran says that the operation's first attempt already ran, outside
	// Run, and ended with Err: Run decides on that outcome as on an
	// attempt of its own and runs only the retries. It is for an
	// operation that learns which Retrier it runs under only while it
	// runs (crl.Retry finds its pool when the unit's first statement
	// reaches it), whose first error is met before it can ask (a
	// statement that fails inside a transaction that the driver layer
	// replays), or whose first attempt ran directly (Direct). When a rule
	// retries Err, the circuit breaker is asked before the first retry.
	// Not for a connection.
	Ran bool
	// Rows says that the statement's result (rows) is read after fn
	// returns: on success the attempt's context, bounded by a positive
	// QueryTimeout, is not cancelled, so reading the rows is bounded too;
	// it is released (its timer stopped) as soon as the rows are closed or
	// read to the end (database/sql tells it, see rowsContext). Without
	// Rows a statement's attempt context is cancelled when fn returns. A
	// transaction's attempts are not bounded by QueryTimeout (the
	// statements inside are, by the driver layer).
	Rows bool
	// Query is the statement's text, which the rules' query filters are
	// checked against. For a transaction it is the statement that failed
	// in the attempt that already ran (Ran), "" when that failure was not
	// a statement.
	Query string
	// Err is the error of the attempt that already ran (Ran); nil when
	// it succeeded.
	Err error
	// Failed, when set, is asked after each attempt that failed for the
	// text of the statement that failed ("" when the failure was not a
	// statement): for a transaction, the statement whose error ended it
	// (the driver layer records it). Nil: the statement is Query. (A
	// statement with Failed set never runs its first attempt directly.)
	Failed func() string

	admission *admission // the breaker's leave, given by Admit before anything ran
}

// limit says how QueryTimeout bounds op's attempts.
func (op *Op) limit() limit {
	switch {
	case op.Kind != KindStatement:
		return limitNone
	case op.Rows:
		return limitRows
	}
	return limitCall
}

// attempts returns how op's attempts run, fn each.
func (op *Op) attempts(fn attemptFunc) attempts {
	return attempts{fn: fn, failed: op.Failed, l: op.limit()}
}

// first returns the outcome of the attempt that already ran (Ran), nil
// when none did.
func (op *Op) first() *error {
	if op.Ran {
		return &op.Err
	}
	return nil
}

// Run runs op: fn, one attempt, is called, and called again after the
// rule's wait while it fails with an error whose rule allows another
// retry and whose query filter matches the failed statement (op.Query,
// or what op.Failed says).
//
// A first attempt that fails with an error no rule retries is returned
// unchanged. Every other failure is a *RetryError that unwraps to the last
// driver error and to its reason (ErrRetriesExhausted,
// ErrInvalidRetryInterval, ErrRetryBudgetExceeded, ErrDeadline,
// ErrNotRetryable, ErrBatchNotRetried, ErrCircuitOpen). A transaction
// whose error matches ErrCommitUnknown is never retried. A statement run
// here must not be inside a transaction: the driver layer retries those
// with the whole transaction.
//
// Nobody to ask or tell (no breaker, no observer that wants
// OperationEnded) and no queryTimeout: a statement's first attempt runs
// directly, and a success costs one atomic load of the budget and the
// observer's Operation.
func (r *Retrier) Run(ctx context.Context, op *Op, fn func(ctx context.Context) error) error {
	switch {
	case op != nil && op.Ran && op.Err == nil && op.admission == nil && !r.timed:
		// A first attempt that ran and succeeded, nobody to tell how it
		// ended: counted, and the budget earns, as the loop would.
		r.count(op.Kind)
		r.budget.earn()
		return nil
	case op == nil:
		return r.statement(ctx, "", limitCall, fn)
	case op.Kind != KindStatement || op.Ran || op.admission != nil || op.Failed != nil:
		return r.loop(ctx, op, fn)
	case op.Rows:
		return r.statement(ctx, op.Query, limitRows, fn)
	}
	return r.statement(ctx, op.Query, limitCall, fn)
}

// Direct reports whether a statement's first attempt may run outside
// Run, directly (direct), and whether its success must then still be
// given to Run (settle). Direct: nobody is to be asked or told before
// the attempt (no circuit breaker, no observer that wants
// OperationEnded) and the policy sets no QueryTimeout to bound it. A
// failure of a direct attempt is given to Run as an Op with Ran and Err
// set, and goes on as Run's own first failure would, under the policy
// Run then reads. Settle: the observer counts operations, or the retry
// budget is not full and earns from a success; then the success is given
// to Run the same way, which counts it and lets the budget earn from it.
// Without settle a success needs nothing more: a success whose attempt
// started while the budget was full earns nothing even if a retry drew
// on the budget meanwhile (the statements that start after that retry
// earn). Direct calls Options.Refresh first, as the start of an
// operation does. Not direct (settle then says nothing): run the
// operation whole through Run; so too while a Hold holds.
//
// Without Refresh and an observer it is DirectLean.
func (r *Retrier) Direct() (direct, settle bool) {
	if direct, settle, lean := r.DirectLean(); lean {
		return direct, settle
	}
	if r.refresh != nil {
		r.refresh() // may swap the policy: load it after
	}
	return r.direct.Load() != nil, r.observer != nil || !r.budget.isFull()
}

// DirectLean is Direct for a Retrier without Options.Refresh and an
// observer (lean), which have nothing to be called or counted: two atomic
// loads, small enough to be inlined into a caller's success path. Another
// Retrier answers lean false (and nothing else): ask Direct.
func (r *Retrier) DirectLean() (direct, settle, lean bool) {
	if r.leanPath.Load() != nil {
		return true, !r.budget.isFull(), true
	}
	return false, false, r.lean
}

// EveryFirstRow reports whether the lean path's policy (DirectLean) wants
// the first row of every query read inside its attempt: one of its
// statement rules has retries and names no statement, so WantsFirstRow
// answers true whatever the text. One load, inlined: a query on the
// direct path asks the text's memo (WantsFirstRowMemo) only when it is
// false. False off the lean path.
func (r *Retrier) EveryFirstRow() bool {
	p := r.leanPath.Load()
	return p != nil && p.Statement.unfiltered
}

// statement is Run for a plain statement, and Do: its first attempt runs
// directly when nobody is to be asked or told and no queryTimeout bounds
// it, so that a success costs one atomic load of the budget (and the
// observer's count); through the loop otherwise.
func (r *Retrier) statement(ctx context.Context, query string, l limit, fn attemptFunc) error {
	if r.refresh != nil {
		r.refresh() // may swap the policy: load it after
	}
	p := r.direct.Load()
	if p == nil {
		o := operation{ctx: ctx, kind: KindStatement, query: query}
		return r.fromStart(&o, attempts{fn: fn, l: l})
	}
	err := fn(ctx)
	r.count(KindStatement)
	if err == nil {
		r.budget.earn()
		return nil
	}
	return r.afterDirect(ctx, p, query, attempts{fn: fn, l: l}, err)
}

// afterDirect is the rest of a statement's loop, under p, after its
// first attempt ran directly and failed with err.
func (r *Retrier) afterDirect(ctx context.Context, p *Policy, query string, a attempts, err error) error {
	o := operation{ctx: ctx, kind: KindStatement, query: query}
	return r.run(&o, p, permit{}, a, &err)
}

// loop is Run for every operation but a plain statement: one whose first
// attempt already ran (Ran), one that Admit admitted, a transaction, a
// connection.
func (r *Retrier) loop(ctx context.Context, op *Op, fn attemptFunc) error {
	if op.admission != nil { // Admit counted it, asked the breaker and refreshed
		o := operation{ctx: ctx, kind: op.Kind, query: op.Query, started: op.admission.started}
		return r.run(&o, r.policy.Load(), op.admission.pm, op.attempts(fn), op.first())
	}
	if r.refresh != nil {
		r.refresh() // may swap the policy: load it after
	}
	switch {
	case op.Kind == KindConnection:
		return r.connect(ctx, fn)
	case op.Ran:
		return r.resume(ctx, op, op.attempts(fn))
	}
	o := operation{ctx: ctx, kind: op.Kind, query: op.Query}
	return r.fromStart(&o, op.attempts(fn))
}

// fromStart runs o's loop from its first attempt: counted, the breaker
// asked, then the loop.
func (r *Retrier) fromStart(o *operation, a attempts) error {
	r.begin(o)
	pm, err := r.admit(o)
	if err != nil {
		return err
	}
	return r.run(o, r.policy.Load(), pm, a, nil)
}

// Do runs one statement: Run for a statement whose text is query, with
// fn's error as each attempt's.
func (r *Retrier) Do(ctx context.Context, query string, fn func(ctx context.Context) error) error {
	return r.statement(ctx, query, limitCall, fn)
}

// DoTx runs a whole transaction: Run for a transaction, fn running it
// from BEGIN to COMMIT on a fresh transaction each time and returning,
// when it fails, the text of the statement that failed ("" when the
// failure was not a statement), so that the rule's query filter is
// checked against it.
func (r *Retrier) DoTx(ctx context.Context, fn func(ctx context.Context) (failedQuery string, err error)) error {
	if r.refresh != nil {
		r.refresh() // may swap the policy: load it after
	}
	var failed string
	o := operation{ctx: ctx, kind: KindTransaction}
	return r.fromStart(&o, attempts{
		fn: func(ctx context.Context) error {
			var err error
			failed, err = fn(ctx)
			return err
		},
		failed: func() string { return failed },
		l:      limitNone,
	})
}

// resume is Run for an operation whose first attempt already ran: it is
// counted, and when a rule retries its error the circuit breaker is asked
// before the first retry (an open breaker ends the operation with a
// *RetryError that matches ErrCircuitOpen and unwraps to op.Err).
func (r *Retrier) resume(ctx context.Context, op *Op, a attempts) error {
	o := operation{ctx: ctx, kind: op.Kind, query: op.Query}
	r.begin(&o)
	p := r.policy.Load()
	var pm permit
	if op.Err != nil && r.breaker != nil {
		if d := p.decide(op.Kind, op.Query, 1, op.Err, false); d.Reason == nil && !r.optedOut(ctx) {
			var err error
			if pm, err = r.breaker.allow(); err != nil {
				if r.observer != nil {
					r.observer.GaveUp(GaveUp{Context: ctx, Op: r.opID(&o), Kind: o.kind, Query: o.query,
						Attempts: 1, Reason: ErrCircuitOpen, Err: op.Err})
				}
				return &RetryError{Attempts: 1, Reason: ErrCircuitOpen, Err: op.Err,
					Detail: "the circuit breaker refused the retry"}
			}
		}
	}
	return r.run(&o, p, pm, a, op.first())
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
	r.failedOnce(ctx, GaveUp{Kind: KindStatement, Query: query, Reason: ErrAfterFirstRow, Err: err})
}

// failedOnce settles an operation that failed once and that nothing
// retries although a rule would have (g says what, and why not): the
// budget charged as for a retryable failure not retried, and the
// observer told g. Nothing is reported when no rule retries g.Err, or the
// caller opted out of retries.
func (r *Retrier) failedOnce(ctx context.Context, g GaveUp) {
	d := r.policy.Load().decide(g.Kind, g.Query, 1, g.Err, false)
	if d.Reason != nil || r.optedOut(ctx) {
		r.budget.settle(&d)
		return
	}
	d.charge = chargeFail
	r.budget.settle(&d)
	if r.observer != nil {
		o := operation{ctx: ctx, kind: g.Kind, query: g.Query, replay: g.Replay}
		g.Context, g.Op, g.Attempts = ctx, r.opID(&o), 1
		r.observer.GaveUp(g)
	}
}

// limit says how QueryTimeout bounds the attempts of an operation.
type limit uint8

const (
	limitNone limit = iota // attempts are not bounded
	limitCall              // bounded, the context cancelled when fn returns
	limitRows              // bounded, the context released when the rows are done
)

// count tells the observer that an operation of kind k started.
func (r *Retrier) count(k Kind) {
	if r.observer != nil {
		r.observer.Operation(k)
	}
}

// begin starts o: it counts it and notes its start when the observer
// reads the time.
func (r *Retrier) begin(o *operation) {
	r.count(o.kind)
	if r.timed {
		o.started = r.clock.Now()
	}
}

// elapsed is the Elapsed of o's events: the time since o started, or 0
// when the observer does not read it.
func (r *Retrier) elapsed(o *operation) time.Duration {
	if !r.timed {
		return 0
	}
	return r.clock.Now().Sub(o.started)
}

// run is the loop after admission, under p: attempts, each failure
// decided on by decide, until one succeeds or the loop gives up. first,
// when not nil, is the outcome of a first attempt that already ran.
// Whatever ends the loop, the outcome reaches the breaker (pm) — a panic
// (or runtime.Goexit) in call, a hook or an observer counts as a failure,
// and goes on — and the observer's OperationEnded.
func (r *Retrier) run(o *operation, p *Policy, pm permit, a attempts, first *error) (err error) {
	if r.timed {
		err = errRunning // until the loop returns: see ended
		defer r.ended(o, &err)
	}
	settled, failure := false, false
	if pm.b != nil {
		defer func() { pm.ended(o.ctx, settled, failure, err) }()
	}
	var timedOut bool
	var failed error
	if first != nil {
		failed = *first
	} else {
		timedOut, failed = r.attempt(o, p, a)
	}
	for n := 1; ; n++ {
		if failed == nil {
			r.budget.earn()
			if n > 1 {
				r.succeeded(o, n)
			}
			settled = true
			return nil
		}
		d := p.decide(o.kind, o.query, n, failed, timedOut)
		if d.Reason == nil && r.optedOut(o.ctx) {
			d = decision{Reason: ErrNotRetryable}
		}
		if d.Reason != nil {
			err = r.stop(o, n, failed, d)
			settled, failure = true, d.dbFailure
			return err
		}
		if stop := r.schedule(o, n, failed, p.Jitter.apply(d.Wait, r.random), d); stop != nil {
			settled, failure = true, true
			return stop
		}
		timedOut, failed = r.attempt(o, p, a)
	}
}

// optedOut reports whether the caller of an operation run with ctx opted
// out of retries (Options.NoRetry): a retry a rule allows is then none,
// as for an error that no rule names. Asked only when a rule would retry.
func (r *Retrier) optedOut(ctx context.Context) bool {
	return r.noRetry != nil && r.noRetry(ctx)
}

// stop ends a statement or transaction loop with d's reason after attempt
// n failed with err: it charges the budget and returns err unchanged when
// nothing was retried or refused, a *RetryError otherwise.
func (r *Retrier) stop(o *operation, n int, err error, d decision) error {
	r.budget.settle(&d)
	switch {
	case d.Reason == ErrCommitUnknown:
		if r.observer != nil {
			r.observer.GaveUp(GaveUp{Context: o.ctx, Op: r.opID(o), Kind: o.kind, Query: "COMMIT",
				Attempts: n, Reason: ErrCommitUnknown, Err: err})
		}
		return err
	case d.Reason == ErrNotRetryable && n == 1:
		return err
	}
	return r.giveUp(o, n, d.Reason, err, nil, d.Detail)
}

// schedule is the tail every loop shares before a retry: the caller's
// deadline, the retry budget, the RetryScheduled event, the wait. It
// returns the error that ends the loop when the retry cannot run, nil
// when it may.
func (r *Retrier) schedule(o *operation, n int, err error, wait time.Duration, d decision) error {
	if dl, ok := o.ctx.Deadline(); ok && !r.clock.Now().Add(wait).Before(dl) {
		return r.giveUp(o, n, ErrDeadline, err, nil, "wait "+wait.String())
	}
	if !r.budget.withdraw(&d) {
		return r.giveUp(o, n, ErrRetryBudgetExceeded, err, nil, "")
	}
	if r.observer != nil {
		e := RetryScheduled{Context: o.ctx, Op: r.opID(o), Kind: o.kind, Query: o.query,
			Attempt: n, Wait: wait, Elapsed: r.elapsed(o), Err: err, Replay: o.replay}
		if o.kind != KindConnection {
			e.Token = d.tok.String()
		}
		r.observer.RetryScheduled(e)
		o.ctx = r.observer.RetryContext(o.ctx, e)
	}
	if cerr := r.clock.Sleep(o.ctx, wait); cerr != nil {
		return r.giveUp(o, n, ErrDeadline, err, cerr, "context ended during the wait")
	}
	return nil
}

// succeeded tells the observer of an operation that succeeded at attempt
// n > 1.
func (r *Retrier) succeeded(o *operation, n int) {
	if r.observer != nil {
		r.observer.Succeeded(Succeeded{Context: o.ctx, Op: r.opID(o), Kind: o.kind, Query: o.query,
			Attempts: n, Elapsed: r.elapsed(o), Replay: o.replay})
	}
}

// attempt runs call once, bounded by a positive QueryTimeout as l says.
// It reports whether the attempt's own time limit ran out while the
// caller's context is alive, and notes the failed statement in o.query
// for the events and the query filter.
func (r *Retrier) attempt(o *operation, p *Policy, a attempts) (timedOut bool, err error) {
	ctx := o.ctx
	switch {
	case p.QueryTimeout <= 0 || a.l == limitNone:
		err = a.fn(ctx)
	default:
		// limitRows: the rows are read after fn returns, and the context
		// lives until they are closed or read to the end, or until its
		// deadline.
		actx, b := r.bound(ctx, p.QueryTimeout, a.l == limitRows)
		err = a.fn(actx)
		timedOut = err != nil && actx.Err() == context.DeadlineExceeded && ctx.Err() == nil
		b.end(err)
	}
	if err != nil && a.failed != nil {
		o.query = a.failed()
	}
	return timedOut, err
}

// StatementContext returns the context of a statement that runs once,
// outside the statement loop (in a transaction, in a unit of work, a
// transaction's own text): ctx bounded by a positive queryTimeout, as an
// attempt of the loop is, so that the JDBC driver's queryTimeout bounds
// every statement. rows says that the statement's rows are read after
// it returns: the bound then lasts while they are, until they are closed
// or read to the end (on the Retrier's clock too, as an attempt's). end
// is called once the statement returned, with its error; it is nil, and
// ctx is returned as it is, when no queryTimeout bounds statements.
func (r *Retrier) StatementContext(ctx context.Context, rows bool) (sctx context.Context, end func(err error)) {
	if d := r.policy.Load().QueryTimeout; d > 0 {
		sctx, b := r.bound(ctx, d, rows)
		return sctx, b.end
	}
	return ctx, nil
}

// BoundsStatements reports whether a positive queryTimeout bounds
// statements now (StatementContext then bounds one). It is small enough
// to be inlined: a statement run once asks it at the cost of a load.
func (r *Retrier) BoundsStatements() bool { return r.policy.Load().QueryTimeout > 0 }

// bound is the bound of one statement's context by d, a positive
// queryTimeout: an attempt's of the loop, or StatementContext's.
func (r *Retrier) bound(ctx context.Context, d time.Duration, rows bool) (context.Context, statementBound) {
	if !rows {
		sctx, cancel := context.WithTimeout(ctx, d)
		return sctx, statementBound{cancel: cancel}
	}
	c := newRowsContext(ctx, d, r.clock)
	return c, statementBound{rows: c}
}

// statementBound ends the bound of a statement's context once the
// statement returned: an exec's at once (cancel), a query's (rows) at
// once when it failed, else when its rows are done.
type statementBound struct {
	cancel context.CancelFunc
	rows   *rowsContext
}

// end ends the bound of a statement that returned err.
func (b statementBound) end(err error) {
	switch {
	case b.rows == nil:
		b.cancel()
	case err != nil:
		b.rows.cancel(context.Canceled)
	default:
		b.rows.returnedRows()
	}
}

// giveUp emits GaveUp and returns the *RetryError of a loop that stops.
func (r *Retrier) giveUp(o *operation, attempts int, reason, err, ctxErr error, detail string) error {
	if r.observer != nil {
		r.observer.GaveUp(GaveUp{Context: o.ctx, Op: r.opID(o), Kind: o.kind, Query: o.query, Attempts: attempts, Reason: reason, Err: err,
			Replay: o.replay, Detail: detail})
	}
	return &RetryError{Attempts: attempts, Reason: reason, Err: err, CtxErr: ctxErr, Detail: detail, final: o.kind != KindConnection}
}
