package config

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/internal/text/sqlscan"
)

// Unit records what one unit of work ran in the driver layer: the pool
// it ran on (its Retrier), the statement whose error ended it, and which
// run of the unit this is (Attempt). The statements of a transaction the
// unit began are recorded once, in the record the driver layer keeps of
// the transaction for its replay (core.TxRecord): the Unit reads the
// failed statement there while the transaction runs, and keeps it when
// the transaction ends (Began, Ended). A unit
// is a transaction attempt (crl.RunInTx and the adapters' helpers put one
// in the context they begin the transaction with), a run of crl.Retry's
// function, or an attempt that an adapter runs under its own loop
// (sqlx's whole reads): a statement run with a context that carries a
// Unit is run once, never retried by the layer on its own. The zero value
// is ready; it is safe for concurrent use. It sits in config, below the
// driver layer (package crl) and the adapters, so that the layer records
// into the same Unit that a helper of any of them put in the context.
type Unit struct {
	mu        sync.Mutex
	retrier   *core.Retrier
	tx        *core.TxRecord // the record of the unit's transaction while it runs
	failed    string
	failedErr error
	attempt   atomic.Int32
}

// unitKey is the one context key of the driver layer: its value is a
// *Unit, or a withoutRetry. One key, so that the layer learns both from
// one ctx.Value per statement.
type unitKey struct{}

// withoutRetry is the value of unitKey in a context given NoRetryContext:
// the unit the context carried before, if any, stays readable (UnitOf,
// Attempt). A struct of one pointer, so storing it allocates nothing.
type withoutRetry struct{ unit *Unit }

// mark is what a context says to the driver layer: the unit it carries
// (nil when none), and whether retries are off (NoRetryContext).
type mark struct {
	unit    *Unit
	noRetry bool
}

// markOf reads ctx's mark with one lookup.
func markOf(ctx context.Context) mark {
	v := ctx.Value(unitKey{})
	_, noRetry := v.(withoutRetry)
	return mark{unit: unitIn(v), noRetry: noRetry}
}

// UnitContext returns ctx carrying u, in place of what it carried: given a
// context without retries (NoRetryContext), the mark is gone, so a helper
// asks NoRetry before it makes a unit (a unit of such a context runs once
// and needs none).
func UnitContext(ctx context.Context, u *Unit) context.Context {
	return context.WithValue(ctx, unitKey{}, u)
}

// NewUnitContext returns ctx carrying a new Unit, and that Unit: what
// UnitContext(ctx, &Unit{}) returns, in one allocation instead of two
// (the Unit lives in the context that carries it), for an adapter that
// runs one attempt of its own per call (sqlx's whole reads, a GORM
// query).
func NewUnitContext(ctx context.Context) (context.Context, *Unit) {
	c := &unitContext{Context: ctx}
	return c, &c.unit
}

// unitContext is a context carrying its own Unit under unitKey.
type unitContext struct {
	context.Context
	unit Unit
}

// Value is the Unit for unitKey, else the parent's value.
func (c *unitContext) Value(key any) any {
	if key == (unitKey{}) {
		return &c.unit
	}
	return c.Context.Value(key)
}

// UnitOf returns the Unit ctx carries, nil when none. It is small
// enough to be inlined: the lookup is a statement's only call for it.
func UnitOf(ctx context.Context) *Unit { return unitIn(ctx.Value(unitKey{})) }

// unitIn returns the Unit of v, a value of unitKey.
func unitIn(v any) *Unit {
	switch v := v.(type) {
	case *Unit:
		return v
	case withoutRetry:
		return v.unit
	}
	return nil
}

// UnitMark returns UnitOf(ctx) and NoRetry(ctx), with one lookup: the
// driver layer's BeginTx asks both.
func UnitMark(ctx context.Context) (u *Unit, noRetry bool) {
	m := markOf(ctx)
	return m.unit, m.noRetry
}

// NoRetryContext returns ctx under which nothing is retried (it is
// crl.WithoutRetry): the driver layer runs each statement once (outside
// a transaction and a unit under the statement loop, whose Retrier asks
// NoRetry after a failure, so that the observer sees it), and the helpers
// run their units once. The unit
// ctx carries, if any, stays readable: its statements are still recorded
// in it.
func NoRetryContext(ctx context.Context) context.Context {
	m := markOf(ctx)
	if m.noRetry {
		return ctx
	}
	return context.WithValue(ctx, unitKey{}, withoutRetry{unit: m.unit})
}

// NoRetry reports whether ctx was given NoRetryContext (or derives from one
// that was).
func NoRetry(ctx context.Context) bool { return markOf(ctx).noRetry }

// Attempt returns the run of the unit ctx carries that is running: 1 for
// the first, 2 for the first re-run, …; 0 when ctx carries no unit, or
// one that is not re-run as a whole (an adapter's attempt of one
// statement).
func Attempt(ctx context.Context) int {
	if u := markOf(ctx).unit; u != nil {
		return int(u.attempt.Load())
	}
	return 0
}

// Began notes that the unit began a transaction on the pool of r (the
// driver layer calls it at BEGIN): rec, the layer's record of the
// transaction's statements, is where the unit reads the statement whose
// error ended it (Failed) until Ended. rec is nil when the BEGIN failed.
func (u *Unit) Began(r *core.Retrier, rec *core.TxRecord) {
	u.mu.Lock()
	if u.retrier == nil {
		u.retrier = r
	}
	if rec != nil {
		u.tx = rec
	}
	u.mu.Unlock()
}

// Ended notes that the transaction whose statements rec recorded ended:
// the statement whose error ended it, if any, is the unit's (as Record
// keeps one), and rec, which the connection reuses, is no longer read.
func (u *Unit) Ended(rec *core.TxRecord) {
	query, err := rec.Failed()
	u.mu.Lock()
	if err != nil && replaces(query, u.failedErr != nil) {
		u.failed, u.failedErr = query, err
	}
	if u.tx == rec {
		u.tx = nil
	}
	u.mu.Unlock()
}

// Record records, for the driver layer, the outcome of a statement of
// the unit that ran on the pool of r outside a transaction the unit began
// (those are in its record: Began): a failure makes it the statement that
// ended the unit, unless it is a ROLLBACK (to a savepoint, or of the
// transaction) after an earlier failure, which that failure caused, as
// core.TxRecord's Fail keeps one.
func (u *Unit) Record(r *core.Retrier, query string, err error) {
	u.mu.Lock()
	if u.retrier == nil {
		u.retrier = r
	}
	if err != nil && replaces(query, u.failedErr != nil) {
		u.failed, u.failedErr = query, err
	}
	u.mu.Unlock()
}

// replaces reports whether the failure of query is the one that ended a
// unit, over an earlier failure of the unit (hadFailure): it does, unless
// it is a ROLLBACK (to a savepoint, or of the transaction), which that
// earlier failure caused.
func replaces(query string, hadFailure bool) bool {
	return !hadFailure || !sqlscan.IsRollback(query)
}

// Retrier returns the Retrier of the pool the unit's first statement ran
// on, nil when no statement reached a pool crl opened.
func (u *Unit) Retrier() *core.Retrier {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.retrier
}

// Failed returns the statement whose error ended the unit and that error
// ("", nil when no statement failed): while the unit's transaction runs,
// the one its record holds, if any, which the connection writes without
// the unit's lock: the helpers read it once the statements they ran
// returned, as database/sql runs a transaction's statements one at a
// time.
func (u *Unit) Failed() (query string, err error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.tx != nil {
		if query, err := u.tx.Failed(); err != nil {
			return query, err
		}
	}
	return u.failed, u.failedErr
}

// FailedQuery returns the statement whose error ended the unit, "" when
// none did or u is nil (a unit run without retries records nothing).
func (u *Unit) FailedQuery() string {
	if u == nil {
		return ""
	}
	q, _ := u.Failed()
	return q
}

// Start begins the unit's next run, which Attempt then reports (1 for the
// first): the failure recorded is forgotten; the pool is kept. Only a
// helper that re-runs the unit as a whole starts it.
func (u *Unit) Start() {
	u.mu.Lock()
	u.failed, u.failedErr = "", nil
	u.mu.Unlock()
	u.attempt.Add(1)
}
