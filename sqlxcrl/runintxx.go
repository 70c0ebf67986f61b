package sqlxcrl

import (
	"context"
	"database/sql"
	"errors"

	"github.com/jmoiron/sqlx"

	"github.com/crl-go/crl"
	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/core"
)

// RunInTxx is crl.RunInTx on sqlx's own types: it runs fn in a
// transaction of db and commits it, and runs it again on a fresh
// transaction when it failed with an error the rules retry, the rule's
// query filter checked against the statement whose error ended it (the
// driver layer records it). Over a pool crl did not open (sql.Open's) it
// runs fn once, exactly as without crl, and returns its error as it is.
// fn must be safe to run again, and must neither commit nor roll back the
// transaction. Nesting, crl.WithoutRetry and crl.Attempt work as for
// crl.RunInTx.
func RunInTxx(ctx context.Context, db *sqlx.DB, opts *sql.TxOptions, fn func(*sqlx.Tx) error) error {
	if db == nil {
		return ErrNilPool
	}
	var r *core.Retrier
	if rt, ok := crl.RuntimeOf(db.DB); ok {
		r = rt.Retrier()
	}
	return runInTx(ctx, r, func(ctx context.Context) (*sqlx.Tx, error) { return db.BeginTxx(ctx, opts) }, fn)
}

// errNilFunc is the error of RunInTxx and DB.RunInTx given no function.
var errNilFunc = errors.New("sqlxcrl: the function to run is nil")

// transaction is what runInTx ends: a *sqlx.Tx or a *Tx.
type transaction interface {
	Commit() error
	Rollback() error
}

// runInTx is RunInTxx and DB.RunInTx: fn in a transaction that begin
// begins, re-run whole under r's transaction loop, the statement that
// ended each attempt recorded by the driver layer in the unit of the
// context begin gets. It runs fn once when r is nil (a pool crl did not
// open), under crl.WithoutRetry, and in a unit ctx already carries (the
// enclosing unit is the one retried).
func runInTx[T transaction](ctx context.Context, r *core.Retrier, begin func(context.Context) (T, error), fn func(T) error) error {
	if fn == nil {
		return errNilFunc
	}
	if r == nil || config.NoRetry(ctx) {
		_, err := runAttempt(ctx, nil, begin, fn)
		return err
	}
	if u := config.UnitOf(ctx); u != nil {
		_, err := runAttempt(ctx, u, begin, fn)
		return err
	}
	u := &config.Unit{} // in the loop's context too: its events carry the attempt
	return r.DoTx(config.UnitContext(ctx, u), func(ctx context.Context) (string, error) {
		u.Start()
		return runAttempt(config.UnitContext(ctx, u), u, begin, fn)
	})
}

// runAttempt runs one attempt of runInTx, begun with ctx, its statements
// recorded in u (nil: in none, run once).
func runAttempt[T transaction](ctx context.Context, u *config.Unit, begin func(context.Context) (T, error), fn func(T) error) (string, error) {
	tx, err := begin(ctx)
	if err != nil {
		return "", err
	}
	return config.RunTx("sqlxcrl", u.FailedQuery, func() error { return fn(tx) }, tx.Rollback, tx.Commit)
}
