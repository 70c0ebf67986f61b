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
// db must be over a pool crl opened (crl.Open, crl.OpenDB, a crl.Register
// name, sqlxcrl.Open): else the error matches crl.ErrNotCrlPool. fn must
// be safe to run again, and must neither commit nor roll back the
// transaction. Nested in another unit it does what crl.RunInTx does: once
// with a context that carries the unit, its own loop otherwise, a
// statement run at most 1 + retryCount times.
func RunInTxx(ctx context.Context, db *sqlx.DB, opts *sql.TxOptions, fn func(*sqlx.Tx) error) error {
	if db == nil {
		return ErrNilPool
	}
	rt, ok := crl.RuntimeOf(db.DB)
	if !ok {
		return crl.ErrNotCrlPool
	}
	if fn == nil {
		return errNilFunc
	}
	if u := connector.UnitOf(ctx); u != nil {
		_, err := runTxx(ctx, u, db, opts, fn)
		return err
	}
	u := &connector.Unit{}
	return rt.Retrier().DoTx(ctx, func(ctx context.Context) (string, error) {
		u.Reset()
		return runTxx(ctx, u, db, opts, fn)
	})
}

// errNilFunc is the error of RunInTxx given no function.
var errNilFunc = errors.New("sqlxcrl: the function to run is nil")

// runTxx runs one attempt of RunInTxx, its statements recorded in u.
func runTxx(ctx context.Context, u *connector.Unit, db *sqlx.DB, opts *sql.TxOptions, fn func(*sqlx.Tx) error) (string, error) {
	tx, err := db.BeginTxx(connector.WithUnit(ctx, u), opts)
	if err != nil {
		return "", err
	}
	failed := func() string { q, _ := u.Failed(); return q }
	return adapter.Run("sqlxcrl", failed, func() error { return fn(tx) }, tx.Rollback, tx.Commit)
}
