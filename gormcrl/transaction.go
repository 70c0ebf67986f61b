package gormcrl

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"gorm.io/gorm"

	"github.com/crl-go/crl/internal/adapter"
)

// Transaction runs fn in a transaction and commits it, like
// db.Transaction; when fn or the COMMIT fails with an error that the
// statement rules retry (the rule's query filter checked against the
// statement that failed, or "COMMIT"), it waits as the rule says and runs
// fn again on a fresh transaction. fn must do nothing outside the
// transaction that it cannot repeat.
//
// The transaction is rolled back when fn returns an error or panics (the
// panic goes on). A COMMIT whose outcome is unknown (the connection broke)
// is never retried: the error matches core.ErrCommitUnknown. The first
// options, if any, are the transaction's. The context is db's
// (db.WithContext).
//
// Called on a *gorm.DB that is already in a transaction, Transaction is
// db.Transaction (a savepoint) and retries nothing: the enclosing
// transaction is the unit to retry. With db.Clauses(NoRetry) it is
// db.Transaction too. db must have the plugin (Open or
// db.Use(New(...))); otherwise the error is ErrNoPlugin.
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
	p, ok := pluginOf(db)
	if !ok {
		return ErrNoPlugin
	}
	if !retriesAlone(db.Statement.ConnPool) || propagateNoRetry(db.Statement) {
		return db.Transaction(fn, opts...)
	}
	ctx := db.Statement.Context
	if ctx == nil {
		ctx = context.Background()
	}
	return p.retrier().DoTx(ctx, func(context.Context) (string, error) {
		return runTx(db, fn, opts)
	})
}

// runTx is one attempt of Transaction. Every path that began a
// transaction ends it: fn's error and a panic roll it back, success
// commits it (adapter.Recorder.Run).
func runTx(db *gorm.DB, fn func(tx *gorm.DB) error, opts []*sql.TxOptions) (failed string, err error) {
	tx := db.Begin(opts...)
	if tx.Error != nil {
		return "", tx.Error // BEGIN failed: nothing to end
	}
	var rec adapter.Recorder
	tx.Statement.ConnPool, _ = recordTx(tx.Statement.ConnPool, &rec)
	committer, ok := tx.Statement.ConnPool.(gorm.TxCommitter)
	if !ok {
		return "", endUncommittable(tx.Statement.ConnPool)
	}
	return rec.Run("gormcrl", func() error { return fn(tx) }, committer.Rollback, committer.Commit)
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
