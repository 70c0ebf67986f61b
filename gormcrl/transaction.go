package gormcrl

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"gorm.io/gorm"

	"github.com/crl-go/crl"
	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/internal/layer/adapter"
	"github.com/crl-go/crl/internal/layer/connector"
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
// crl.Attempt(tx.Statement.Context) says which run this is (1, 2, …). db must be over a pool crl opened (crl.Open,
// crl.OpenDB, Open, OpenDB) or have the plugin (db.Use(New(...)));
// otherwise the error is ErrNoPlugin. Over a pool crl opened, fn's tx is
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
	p, hasPlugin := pluginOf(db)
	pool, layered := poolRuntime(db.Statement.ConnPool)
	if !hasPlugin && !layered {
		return ErrNoPlugin
	}
	if !poolRetriesStatements(db.Statement.ConnPool) || propagateNoRetry(db.Statement) {
		return db.Transaction(fn, opts...)
	}
	ctx := db.Statement.Context
	if ctx == nil {
		ctx = context.Background()
	}
	if !layered {
		return p.forPool(db.Statement.ConnPool).retrier().DoTx(ctx, func(context.Context) (string, error) {
			return runTx(db, fn, opts)
		})
	}
	// Over a pool crl opened, the driver layer records the transaction's
	// statements: the transaction is GORM's own, its ConnPool a *sql.Tx.
	if u := connector.UnitOf(ctx); u != nil {
		_, err := runUnitTx(db.WithContext(ctx), u, fn, opts) // an enclosing unit is the one retried
		return err
	}
	r := pool.Retrier()
	if hasPlugin {
		r = p.forPool(db.Statement.ConnPool).retrier()
	}
	u := &connector.Unit{} // in the loop's context too: its events carry the attempt
	return r.DoTx(connector.WithUnit(ctx, u), func(ctx context.Context) (string, error) {
		u.Start()
		return runUnitTx(db.WithContext(connector.WithUnit(ctx, u)), u, fn, opts)
	})
}

// poolRuntime returns the Runtime of the pool under a *gorm.DB's pool
// when crl opened it.
func poolRuntime(pool gorm.ConnPool) (*config.Runtime, bool) {
	db, err := sqlDBOf(pool)
	if err != nil {
		return nil, false
	}
	return crl.RuntimeOf(db)
}

// runUnitTx is one attempt of Transaction over a pool crl opened: GORM's
// own transaction, begun with the context that carries u, in which the
// driver layer records the statement that failed.
func runUnitTx(db *gorm.DB, u *connector.Unit, fn func(tx *gorm.DB) error, opts []*sql.TxOptions) (failed string, err error) {
	tx := db.Begin(opts...)
	if tx.Error != nil {
		return "", tx.Error // BEGIN failed: nothing to end
	}
	committer, ok := tx.Statement.ConnPool.(gorm.TxCommitter)
	if !ok {
		return "", endUncommittable(tx.Statement.ConnPool)
	}
	failedQuery := func() string { q, _ := u.Failed(); return q }
	return adapter.Run("gormcrl", failedQuery, func() error { return fn(tx) }, committer.Rollback, committer.Commit)
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

// Statements of GORM's prepared-statement layer in a recorded transaction.
//
// In PrepareStmt mode (gorm.Config or a Session), GORM runs a transaction's
// statements through a *gorm.PreparedStmtTX over the transaction: it
// prepares the text on the txPool under it (a failed PREPARE is recorded
// there) and then runs a *sql.Stmt that the txPool cannot see, so a failed
// execution would not be recorded, and the rule's filter would be checked
// against an earlier statement. GORM's prepared-statement layer must stay
// a *gorm.PreparedStmtTX on top (its SavePoint and RollbackTo look for
// that type, to run SAVEPOINT outside prepared statements), so the
// outcome is recorded by two callbacks around the statement's own instead:
// markPrepared before, recordPrepared right after.

// preparedKey is the Settings key of a statement whose outcome
// recordPrepared records; its value is the transaction's Recorder. It
// holds the statement's own address, so the clones GORM makes of a
// statement (which copy Settings) do not see it.
type preparedKey struct{ stmt *gorm.Statement }

// preparedRecorder returns the Recorder of the transaction under GORM's
// prepared-statement layer, or nil when pool is not that layer over a
// transaction this package records.
func preparedRecorder(pool gorm.ConnPool) *adapter.Recorder {
	if pt, ok := pool.(*gorm.PreparedStmtTX); ok {
		if tp, ok := pt.Tx.(*txPool); ok {
			return tp.rec
		}
	}
	return nil
}

// markPrepared is crl:tx_prepared: it marks a statement that is about to
// run through the prepared-statement layer of a recorded transaction. A
// statement that already carries an error runs nothing and is not marked.
func markPrepared(db *gorm.DB) {
	stmt := db.Statement
	if db.Error != nil || db.DryRun {
		return
	}
	if rec := preparedRecorder(stmt.ConnPool); rec != nil {
		stmt.Settings.Store(preparedKey{stmt}, rec)
	}
}

// recordPrepared is crl:tx_prepared_end: it records the outcome of a
// statement that markPrepared marked, with its SQL text: its error, or,
// for the rows that Rows() returns, the rows, whose error arrives while
// they are read; for Row(), the row's error.
func recordPrepared(db *gorm.DB) {
	stmt := db.Statement
	if preparedRecorder(stmt.ConnPool) == nil {
		return // not marked; and a first look into Settings allocates its map
	}
	v, ok := stmt.Settings.LoadAndDelete(preparedKey{stmt})
	if !ok {
		return
	}
	rec := v.(*adapter.Recorder)
	query := stmt.SQL.String()
	switch dest := stmt.Dest.(type) {
	case *sql.Rows: // the row processor's Rows()
		rec.Statement(query, db.Error)
		rec.Rows(query, dest)
	case *sql.Row: // the row processor's Row()
		rec.Statement(query, dest.Err())
	default:
		rec.Statement(query, db.Error)
	}
}
