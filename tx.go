package crl

import (
	"context"
	"database/sql"
	"errors"

	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/core"
)

// errNilFunc is the error of RunInTx and Retry given no function.
var errNilFunc = errors.New("crl: the function to run is nil")

// errNilPool is the error of RunInTx given a nil *sql.DB (whose BeginTx
// would panic).
var errNilPool = errors.New("crl: the *sql.DB is nil")

// RunInTx runs fn in a transaction of db and commits it, and runs it
// again on a fresh transaction when the transaction failed with an error
// the rules retry, the rule's query filter checked against the statement
// whose error ended it. fn must be safe to run again (crl vet finds
// closures that are not), and must neither commit nor roll back the
// transaction: RunInTx commits when fn returns nil and rolls back when it
// returns an error. A COMMIT whose outcome is unknown is never retried
// (core.ErrCommitUnknown).
//
// Over a pool crl did not open (sql.Open's), RunInTx runs fn once, exactly
// as without crl, and returns its error as it is: a helper shared by a
// handle crl opened and one it did not (a SQLite one in tests) works with
// both. RunInTx takes no options, so it tells no observer; a handle built
// over such a pool with one (sqlxcrl.NewDb, gormcrl.New) tells it once.
//
// Nested in a unit that retries as a whole, RunInTx given a context that
// carries the unit (Retry's, gormcrl.Transaction's tx.Statement.Context)
// runs fn once, and the outer unit is the one retried. Given one that
// carries none (the caller's, inside another RunInTx's fn), its
// transaction is one of its own, retried by its own loop, and an
// enclosing unit returns its error after one run when it gave up. Either
// way a statement runs at most 1 + retryCount times.
//
// Given a context under WithoutRetry, RunInTx runs fn once and records
// nothing. Attempt reads which run this is on the context the
// transaction is begun with, which fn cannot reach (see Attempt).
func RunInTx(ctx context.Context, db *sql.DB, opts *sql.TxOptions, fn func(*sql.Tx) error) error {
	if db == nil {
		return errNilPool
	}
	var r *core.Retrier
	if rt, ok := RuntimeOf(db); ok {
		r = rt.Retrier()
	}
	return config.RunInTx(ctx, "crl", r, func(ctx context.Context) (*sql.Tx, error) { return db.BeginTx(ctx, opts) }, fn)
}

// Retry runs fn, a unit of work — a transaction of a library whose
// transaction type crl cannot build (ent's client.Tx, bun's RunInTx,
// GORM's db.Transaction), or several statements — and runs it again,
// whole, when it failed with an error the rules retry. It needs no
// handle: the driver layer records, in the context Retry hands fn, the
// pool fn's statements ran on (its rules, budget, breaker, observer) and
// the statement whose error ended the unit, for every statement and
// transaction run with that context or one derived from it; those
// statements are not retried on their own (pgxcrl's pools record theirs
// too). A unit whose statements ran only on pools crl did not open runs
// once, exactly as without crl, and its error is returned as it is
// (Retry takes no options, so it tells no observer; see RunInTx).
//
// fn must be safe to run again (crl vet finds closures that are not).
// Given a context that carries a unit retried as a whole (Retry's own,
// gormcrl.Transaction's tx.Statement.Context), Retry runs fn once: the
// outer unit is the one retried. Inside a unit's closure but with a
// context that carries none, Retry's own loop retries fn, and the
// enclosing unit returns its error after one run when it gave up: a
// statement runs at most 1 + retryCount times.
//
// Attempt(ctx) inside fn says which run this is (1, 2, …). Given a context
// under WithoutRetry, Retry runs fn once with it.
func Retry(ctx context.Context, fn func(ctx context.Context) error) error {
	if fn == nil {
		return errNilFunc
	}
	if config.NoRetry(ctx) || config.UnitOf(ctx) != nil {
		return fn(ctx)
	}
	u := &config.Unit{}
	uctx := config.UnitContext(ctx, u) // the loop's events carry the unit too: hooks read its attempt there
	u.Start()
	err := fn(uctx)
	r := u.Retrier()
	if r == nil {
		return err
	}
	op := core.Op{Kind: core.KindTransaction, Ran: true, Query: u.FailedQuery(), Err: err, Failed: u.FailedQuery}
	return r.Run(uctx, &op, func(ctx context.Context) error {
		u.Start()
		return fn(config.UnitContext(ctx, u))
	})
}
