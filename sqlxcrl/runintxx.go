package sqlxcrl

import (
	"context"
	"database/sql"

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
// crl.RunInTx, whose loop (config.RunInTx) this is.
func RunInTxx(ctx context.Context, db *sqlx.DB, opts *sql.TxOptions, fn func(*sqlx.Tx) error) error {
	if db == nil {
		return ErrNilPool
	}
	var r *core.Retrier
	if rt, ok := crl.RuntimeOf(db.DB); ok {
		r = rt.Retrier()
	}
	return config.RunInTx(ctx, "sqlxcrl", r, func(ctx context.Context) (*sqlx.Tx, error) { return db.BeginTxx(ctx, opts) }, fn)
}
