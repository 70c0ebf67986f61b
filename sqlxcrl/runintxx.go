package sqlxcrl

import (
	"context"
	"database/sql"
	"errors"

	"github.com/jmoiron/sqlx"

	"github.com/crl-go/crl"
	"github.com/crl-go/crl/internal/layer/adapter"
	"github.com/crl-go/crl/internal/layer/connector"
)

// RunInTxx is crl.RunInTx on sqlx's own types: it runs fn in a
// transaction of db and commits it, and runs it again on a fresh
// transaction when it failed with an error the rules retry, the rule's
// query filter checked against the statement whose error ended it (the
// driver layer records it, whichever of the *sqlx.Tx's methods ran it).
// Over a pool crl did not open (sql.Open's), it runs fn once, exactly as
// without crl, and returns its error as it is; there is no observer to
// tell, such a pool having no Runtime. fn must be safe to run again, and
// must neither commit nor roll back the transaction. Nested in another unit it does what crl.RunInTx does: once
// with a context that carries the unit, its own loop otherwise, a
// statement run at most 1 + retryCount times. With a context given
// crl.WithoutRetry it runs fn once; crl.Attempt reads the run on the
// context the transaction is begun with (see crl.Attempt).
func RunInTxx(ctx context.Context, db *sqlx.DB, opts *sql.TxOptions, fn func(*sqlx.Tx) error) error {
	if db == nil {
		return ErrNilPool
	}
	if fn == nil {
		return errNilFunc
	}
	rt, ok := crl.RuntimeOf(db.DB)
	if !ok || connector.NoRetry(ctx) {
		_, err := runTxx(ctx, nil, db, opts, fn)
		return err
	}
	if u := connector.UnitOf(ctx); u != nil {
		_, err := runTxx(ctx, u, db, opts, fn)
		return err
	}
	u := &connector.Unit{} // in the loop's context too: its events carry the attempt
	return rt.Retrier().DoTx(connector.WithUnit(ctx, u), func(ctx context.Context) (string, error) {
		u.Start()
		return runTxx(connector.WithUnit(ctx, u), u, db, opts, fn)
	})
}

// errNilFunc is the error of RunInTxx given no function.
var errNilFunc = errors.New("sqlxcrl: the function to run is nil")

// runTxx runs one attempt of RunInTxx, begun with ctx, its statements
// recorded in u (nil: in none, run once).
func runTxx(ctx context.Context, u *connector.Unit, db *sqlx.DB, opts *sql.TxOptions, fn func(*sqlx.Tx) error) (string, error) {
	tx, err := db.BeginTxx(ctx, opts)
	if err != nil {
		return "", err
	}
	return adapter.Run("sqlxcrl", u.FailedQuery, func() error { return fn(tx) }, tx.Rollback, tx.Commit)
}
