package connector

import (
	"context"
	"sync"

	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/internal/text/sqlscan"
)

// Unit records what one unit of work ran in the driver layer: the pool
// it ran on (its Retrier) and the statement whose error ended it. A unit
// is a transaction attempt (crl.RunInTx and the adapters' helpers put one
// in the context they begin the transaction with), a run of crl.Retry's
// function, or an attempt that an adapter runs under its own loop
// (sqlx's whole reads): a statement run with a context that carries a
// Unit is run once, never retried by the layer on its own. The zero value
// is ready; it is safe for concurrent use.
type Unit struct {
	mu        sync.Mutex
	retrier   *core.Retrier
	failed    string
	failedErr error
}

type unitKey struct{}

// WithUnit returns ctx carrying u.
func WithUnit(ctx context.Context, u *Unit) context.Context {
	return context.WithValue(ctx, unitKey{}, u)
}

// UnitOf returns the Unit ctx carries, nil when none.
func UnitOf(ctx context.Context) *Unit {
	u, _ := ctx.Value(unitKey{}).(*Unit)
	return u
}

// ran notes that a statement of the unit ran on the pool of r.
func (u *Unit) ran(r *core.Retrier) {
	u.mu.Lock()
	if u.retrier == nil {
		u.retrier = r
	}
	u.mu.Unlock()
}

// statement records the outcome of a statement of the unit that ran on
// the pool of r: a failure makes it the statement that ended the unit,
// unless it is a ROLLBACK (to a savepoint, or of the transaction) after
// an earlier failure, which that failure caused: GORM rolls back to its
// savepoint after the statement that failed, and that rollback fails
// too when the server already ended the transaction (a deadlock victim's).
func (u *Unit) statement(r *core.Retrier, query string, err error) {
	u.mu.Lock()
	if u.retrier == nil {
		u.retrier = r
	}
	if err != nil && Replaces(query, u.failedErr != nil) {
		u.failed, u.failedErr = query, err
	}
	u.mu.Unlock()
}

// Replaces reports whether the failure of query is the one that ended a
// unit, over an earlier failure of the unit (hadFailure): it does, unless
// it is a ROLLBACK (to a savepoint, or of the transaction), which that
// earlier failure caused. Every record of a unit's statements (Unit,
// adapter.Recorder) decides with it.
func Replaces(query string, hadFailure bool) bool {
	return !hadFailure || !sqlscan.EqualFold(sqlscan.FirstKeyword(query), "rollback")
}

// Retrier returns the Retrier of the pool the unit's first statement ran
// on, nil when no statement reached a pool crl opened.
func (u *Unit) Retrier() *core.Retrier {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.retrier
}

// Failed returns the statement whose error ended the unit and that error
// ("", nil when no statement failed).
func (u *Unit) Failed() (query string, err error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.failed, u.failedErr
}

// Reset forgets the failure recorded, for the unit's next attempt; the
// pool is kept.
func (u *Unit) Reset() {
	u.mu.Lock()
	u.failed, u.failedErr = "", nil
	u.mu.Unlock()
}
