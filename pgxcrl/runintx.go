package pgxcrl

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
)

// errNilRunPool is RunInTx's error for a nil pool.
var errNilRunPool = errors.New("pgxcrl: RunInTx: the pool is nil, expected a *pgxcrl.Pool from Open or Wrap")

// ErrTxEndedByClosure is the error of a Commit or Rollback that RunInTx's
// closure calls: RunInTx ends the transaction itself when the closure
// returns (commit on nil, rollback on an error).
var ErrTxEndedByClosure = errors.New("pgxcrl: RunInTx commits or rolls back the transaction when the closure returns; the closure must not")

// RunInTx runs fn in a transaction begun with opts, and commits it when
// fn returns nil (rolls it back otherwise), under the pool's transaction
// loop: when fn, or the COMMIT, fails with an error a rule retries (the
// rule's filter checked against the statement whose error ended the
// transaction), the transaction is rolled back and fn runs again on a
// new one, after the rule's wait, under the budget and breaker. A COMMIT
// whose outcome is unknown (the connection broke) is never retried: its
// error matches core.ErrCommitUnknown. fn must be safe to run again.
// Given a context that carries a unit of work (crl.Retry's), it runs fn
// once, its statements' failures recorded in the unit, which is what
// runs again.
func RunInTx(ctx context.Context, p *Pool, opts pgx.TxOptions, fn func(pgx.Tx) error) error {
	if p == nil {
		return errNilRunPool
	}
	if unitOf(ctx) != nil { // its statements record their failures there: the unit is what runs again
		_, err := p.runTx(ctx, opts, fn)
		return err
	}
	return txLoop(ctx, p.rt.Retrier(), func(ctx context.Context) (string, error) {
		return p.runTx(ctx, opts, fn)
	})
}

// runTx is one attempt of RunInTx; it returns the statement that failed.
func (p *Pool) runTx(ctx context.Context, opts pgx.TxOptions, fn func(pgx.Tx) error) (failed string, err error) {
	c, err := p.acquire(ctx)
	if err != nil {
		return "", err
	}
	inner, err := p.beginOn(ctx, c, true, opts)
	if err != nil {
		return "BEGIN", err
	}
	defer func() {
		if v := recover(); v != nil {
			_ = inner.Rollback(ctx) // the panic goes on; the server ends the transaction if this fails
			panic(v)
		}
	}()
	if err := fn(unitTx{inner}); err != nil {
		failed, _ := inner.rec.Failed()
		return failed, errors.Join(err, ignoreClosed(inner.Rollback(ctx)))
	}
	if err := inner.Commit(ctx); err != nil {
		return "COMMIT", commitFailed(err)
	}
	return "", nil
}

// ignoreClosed returns err, or nil for pgx.ErrTxClosed (the transaction
// had ended already).
func ignoreClosed(err error) error {
	if errors.Is(err, pgx.ErrTxClosed) {
		return nil
	}
	return err
}

// unitTx is the transaction RunInTx hands its closure: Commit and
// Rollback are RunInTx's.
type unitTx struct{ *tx }

// Commit refuses: RunInTx commits when the closure returns nil.
func (unitTx) Commit(context.Context) error { return ErrTxEndedByClosure }

// Rollback refuses: RunInTx rolls back when the closure returns an error.
func (unitTx) Rollback(context.Context) error { return ErrTxEndedByClosure }
