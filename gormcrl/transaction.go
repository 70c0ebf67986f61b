package gormcrl

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"gorm.io/gorm"

	"github.com/crl-go/crl/config"
)

// Transaction runs fn in a transaction and commits it, like
// db.Transaction; when fn or the COMMIT fails with an error that the
// statement rules retry (the rule's query filter checked against the
// statement that failed, or "COMMIT"), it waits as the rule says and runs
// fn again on a fresh transaction. fn must do nothing outside the
// transaction that it cannot repeat.
//
// The transaction is rolled back when fn returns an error, panics (the
// panic goes on) or ends its goroutine (runtime.Goexit). On a db that
// already carries an error (db.Error) it begins nothing and returns that
// error. A COMMIT whose outcome is unknown (the connection broke)
// is never retried: the error matches core.ErrCommitUnknown. The first
// options, if any, are the transaction's. The context is db's
// (db.WithContext).
//
// Called on a *gorm.DB that is already in a transaction, Transaction is
// db.Transaction (a savepoint) and retries nothing: the enclosing
// transaction is the unit to retry. Nested in a unit on another *gorm.DB,
// it does what crl.RunInTx does: whose context carries the unit
// (tx.Statement.Context, crl.Retry's), it runs fn once and the outer unit
// is retried; whose context carries none, its own loop retries it and the
// enclosing unit returns its error after one run when it gave up: a
// statement runs at most 1 + retryCount times. With db.Clauses(NoRetry), or
// a context given crl.WithoutRetry, it is db.Transaction too. Inside fn,
// crl.Attempt(tx.Statement.Context) says which run this is (1, 2, …).
// Retries need a pool crl opened (crl.Open, crl.OpenDB, Open, OpenDB, or
// db.Use(New()) over a dialector with a DSN); over any other pool (SQLite
// in a library's tests, a Conn of the user's) Transaction is
// db.Transaction: fn runs once, its error comes back as it is. fn's tx is
// GORM's own transaction: tx.Statement.ConnPool is the *sql.Tx (or GORM's
// prepared-statement layer over it) that db.Transaction would give.
func Transaction(db *gorm.DB, fn func(tx *gorm.DB) error, opts ...*sql.TxOptions) error {
	if db == nil || db.Statement == nil {
		return fmt.Errorf("gormcrl: Transaction: %w", gorm.ErrInvalidDB)
	}
	if db.Error != nil {
		// GORM's Begin would begin a transaction on a *gorm.DB that carries
		// an error and hand that error back with the transaction open; and
		// an attempt could only fail with it again.
		return db.Error
	}
	pool := db.Statement.ConnPool
	rt, layered := poolRuntime(pool)
	switch pool.(type) {
	case gorm.TxCommitter, *sql.Conn:
		// In a transaction, the enclosing one is the unit; a *sql.Conn is
		// bound to one connection whose state the caller owns.
		layered = false
	}
	if !layered || propagateNoRetry(db.Statement) {
		return db.Transaction(fn, opts...) // once, exactly as GORM
	}
	ctx := db.Statement.Context
	if ctx == nil {
		ctx = context.Background()
	}
	// Over a pool crl opened, the driver layer records the transaction's
	// statements: the transaction is GORM's own, its ConnPool a *sql.Tx.
	if u := config.UnitOf(ctx); u != nil {
		_, err := runUnitTx(db.WithContext(ctx), u, fn, opts) // an enclosing unit is the one retried
		return err
	}
	u := &config.Unit{} // in the loop's context too: its events carry the attempt
	return rt.Retrier().DoTx(config.UnitContext(ctx, u), func(ctx context.Context) (string, error) {
		u.Start()
		return runUnitTx(db.WithContext(config.UnitContext(ctx, u)), u, fn, opts)
	})
}

// runUnitTx is one attempt of Transaction over a pool crl opened: GORM's
// own transaction, begun with the context that carries u, in which the
// driver layer records the statement that failed.
func runUnitTx(db *gorm.DB, u *config.Unit, fn func(tx *gorm.DB) error, opts []*sql.TxOptions) (failed string, err error) {
	tx := db.Begin(opts...)
	if tx.Error != nil {
		return "", tx.Error // BEGIN failed: nothing to end
	}
	committer, ok := tx.Statement.ConnPool.(gorm.TxCommitter)
	if !ok {
		return "", endUncommittable(tx.Statement.ConnPool)
	}
	return config.RunTx("gormcrl", u.FailedQuery, func() error { return fn(tx) }, committer.Rollback, committer.Commit)
}

// endUncommittable ends a transaction that a pool of the user's own began
// but cannot commit (what its BeginTx returned is not a gorm.TxCommitter):
// it is rolled back when it has a Rollback method, so that neither it nor
// its pooled connection stays open, and the error says what happened. A
// rollback that fails is reported too.
func endUncommittable(pool gorm.ConnPool) error {
	err := fmt.Errorf("gormcrl: Transaction: the transaction %T that BeginTx returned cannot commit (it is not a gorm.TxCommitter), so fn was not run: %w", pool, gorm.ErrInvalidTransaction)
	rb, ok := pool.(interface{ Rollback() error })
	if !ok {
		return fmt.Errorf("%w; it has no Rollback method either, so it stays open until its context ends", err)
	}
	if rbErr := rb.Rollback(); rbErr != nil {
		return errors.Join(err, fmt.Errorf("gormcrl: rollback of the transaction above: %w", rbErr))
	}
	return err
}
