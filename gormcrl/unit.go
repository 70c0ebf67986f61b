package gormcrl

import (
	"context"
	"errors"
	"time"

	"gorm.io/gorm"

	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/core"
)

// The whole-unit retry of Create, Update and Delete.
//
// GORM runs these through a processor whose callbacks are, in order:
// gorm:begin_transaction, the before hooks, the associations saved before,
// the statement, the associations saved after, the after hooks and
// gorm:commit_or_rollback_transaction. SQL Server rolls the whole
// transaction of a deadlock victim back, so re-running the one statement
// that failed would run it outside any transaction, or fail at COMMIT. The
// unit of retry is therefore the whole chain, on a fresh transaction:
//
//   - crl:unit_start (first) decides whether the operation may be retried:
//     GORM is about to open its implicit transaction, no user transaction
//     is open, the operation did not opt out, and the value written can be
//     put back as it was (see snapshot.go). If so it asks the circuit
//     breaker (core.Retrier.Admit) before anything runs: a refusal becomes
//     the operation's error and the chain runs nothing. Then it snapshots
//     the value and clones the statement as it is before any callback
//     changed it.
//     The statement's context carries a config.Unit from here on, so
//     GORM begins its transaction with it and the driver layer records
//     there the statement whose error ends the transaction.
//   - crl:unit_tx (after gorm:begin_transaction): when GORM did not open a
//     transaction it disarms the unit and releases the breaker's leave;
//     crl:unit_commit (before gorm:commit_or_rollback_transaction) notes
//     whether GORM is about to COMMIT, so that a failure after it is the
//     COMMIT's.
//   - The chain runs as usual: that is the first attempt.
//   - crl:unit_end (last) hands the outcome of the first attempt to the
//     transaction loop (core.Retrier.Run, with the operation the
//     breaker admitted in crl:unit_start), which decides, with the
//     failed statement's text for the rule's query filter. Each retry puts
//     the value back as it was, clones the pristine statement again and
//     runs the processor's whole chain on the clone (Execute), GORM's own
//     begin and commit included; the clone's callbacks record its
//     failures the same way. The outcome of the last attempt becomes the
//     operation's Error and RowsAffected, and its statement the one GORM's
//     processor logs for the operation (see trace.go).
//
// A COMMIT that failed with an unknown outcome is never retried (the error
// matches core.ErrCommitUnknown); a COMMIT the server refused is the failed
// statement "COMMIT".

// unitKey is the Settings key of a statement's unit. It holds the
// statement's own address, so the clones GORM makes of a statement (which
// copy Settings) do not see it.
type unitKey struct{ stmt *gorm.Statement }

// unit is the state of one Create, Update or Delete under the whole-unit
// retry, or of one of its retries (retry set).
type unit struct {
	rec        config.Unit     // what the driver layer records of the transaction
	parent     context.Context // the statement's context before the unit's was put on it
	committing bool            // GORM is committing: a failure is the COMMIT's
	armed      bool            // the chain runs in a transaction this package records
	retry      bool            // this statement is a retry's clone: the loop runs elsewhere
	watches    bool            // not retried (its value cannot be put back), but its transaction is recorded, for the error it returns (see keepCause)

	// Of a retry's clone: its statement, taken off the clone so that the
	// clone's processor does not log it (see trace.go).
	sql  string
	vars []any

	// Of the first attempt only.
	admission core.Op       // the unit's operation, admitted by the circuit breaker before the chain ran
	loop      *core.Retrier // the Retrier that admitted it, which runs its loop
	began     time.Time
	base      *gorm.DB // the statement as it was before the chain ran
	restore   func()   // puts the value written back as it was
}

func unitOf(stmt *gorm.Statement) *unit {
	if v, ok := stmt.Settings.Load(unitKey{stmt}); ok {
		return v.(*unit)
	}
	return nil
}

// operation is the processor a unit runs in.
type operation uint8

const (
	opCreate operation = iota
	opUpdate
	opDelete
)

// unitCallbacks are the callbacks of one processor.
type unitCallbacks struct {
	plugin  *Plugin
	op      operation
	execute func(*gorm.DB) *gorm.DB // the processor's Execute
}

// start is crl:unit_start.
func (c *unitCallbacks) start(db *gorm.DB) {
	stmt := db.Statement
	if db.Error != nil || db.DryRun || db.SkipDefaultTransaction || unitOf(stmt) != nil {
		return // nothing runs, no implicit transaction, or a retry's clone
	}
	if !poolRetriesStatements(stmt.ConnPool) {
		return // in a user's transaction, or on a *sql.Conn
	}
	if _, layered := poolRuntime(stmt.ConnPool); !layered {
		return // a pool crl did not open: once, exactly as GORM
	}
	restore, ok := snapshot(stmt, c.op)
	if !ok || propagateNoRetry(stmt) {
		// Run once, as GORM does (opted out, or the value cannot be put
		// back); its transaction is still recorded, so that the error it
		// returns unwraps to the failed statement's.
		u := &unit{watches: true}
		u.watch(stmt)
		return
	}
	// The breaker is asked before anything of the first attempt runs: an
	// operation it refuses must not write, and its verdict is applied to
	// the attempts that ran (crl:unit_end).
	loop := c.plugin.active(db).forPool(stmt.ConnPool).retrier()
	admission := core.Op{Kind: core.KindTransaction}
	if err := loop.Admit(stmt.Context, &admission); err != nil {
		_ = db.AddError(err) // the chain's callbacks see it and run nothing
		return
	}
	u := &unit{armed: true, admission: admission, loop: loop, began: time.Now(), restore: restore,
		base: db.Session(&gorm.Session{Context: stmt.Context})}
	u.watch(stmt)
}

// watch makes u the unit of stmt, whose context carries u's record from
// now on, so that GORM begins its transaction with it.
func (u *unit) watch(stmt *gorm.Statement) {
	u.parent = stmt.Context
	stmt.Context = config.UnitContext(stmt.Context, &u.rec)
	if config.NoRetry(u.parent) { // NoRetry: still recorded, still run once
		stmt.Context = config.NoRetryContext(stmt.Context)
	}
	stmt.Settings.Store(unitKey{stmt}, u)
}

// watchCommit is crl:unit_commit: it runs before
// gorm:commit_or_rollback_transaction, which commits when the chain
// carries no error.
func watchCommit(db *gorm.DB) {
	if u := unitOf(db.Statement); u != nil {
		u.committing = db.Error == nil
	}
}

// watchTx is crl:unit_tx: it runs after gorm:begin_transaction.
func watchTx(db *gorm.DB) {
	stmt := db.Statement
	u := unitOf(stmt)
	if u == nil || !(u.armed || u.watches) || db.Error != nil {
		return // not ours, or BEGIN failed (nothing ran: safe to retry)
	}
	if _, started := db.InstanceGet("gorm:started_transaction"); started {
		if _, ok := stmt.ConnPool.(gorm.TxCommitter); ok {
			return
		}
	}
	// No transaction of GORM's own that this package can watch (a pool that
	// cannot begin one): the statements may commit one by one, so the unit
	// is not retried, and each statement asks the breaker itself.
	u.armed = false
	u.admission.Release()
}

// end is crl:unit_end.
func (c *unitCallbacks) end(db *gorm.DB) {
	stmt := db.Statement
	u := unitOf(stmt)
	if u == nil {
		return
	}
	if u.parent != nil {
		stmt.Context = u.parent // a *gorm.DB reused after this operation
	}
	if u.retry {
		// The loop in the first attempt's end logs this attempt, or makes
		// it the operation's statement (see trace.go).
		u.sql, u.vars = stmt.SQL.String(), stmt.Vars
		stmt.SQL.Reset()
		stmt.Vars = nil
		return
	}
	stmt.Settings.Delete(unitKey{stmt})
	if u.watches && db.Error != nil {
		_, cause := u.rec.Failed()
		db.Error = keepCause(db.Error, cause)
		setResultError(stmt, db.Error)
	}
	if u.armed {
		c.retry(db, u)
	}
}

// unitRun is the state of a unit's loop, run by the first attempt's end:
// the attempts so far, the last retry's *gorm.DB, the attempt that failed
// last, and the operation's caller (found for the first retry's log).
type unitRun struct {
	c      *unitCallbacks
	db     *gorm.DB
	u      *unit
	n      int
	last   *gorm.DB
	failed attemptLog
	caller string
}

// retry hands the first attempt's outcome to the transaction loop, which
// runs the retries, and makes the last attempt the operation's.
func (c *unitCallbacks) retry(db *gorm.DB, u *unit) {
	stmt := db.Statement
	r := &unitRun{c: c, db: db, u: u}
	var failed string
	u.admission.Failed = func() string { return failed }
	err := u.loop.Run(stmt.Context, &u.admission, func(ctx context.Context) (err error) {
		failed, err = r.attempt(ctx)
		return err
	})
	switch {
	case r.last != nil: // the last attempt is the operation's statement
		db.RowsAffected = r.last.RowsAffected
		stmt.SQL.WriteString(r.failed.sql)
		stmt.Vars = r.failed.vars
	case err != nil && r.n == 1: // not retried: the first attempt is the operation's
		stmt.SQL.WriteString(r.failed.sql)
		stmt.Vars = r.failed.vars
	}
	db.Error = err
	setResultError(stmt, err)
}

// attempt is one attempt of the loop: the first one's outcome, which the
// chain has already run, or a retry: the value put back, the pristine
// statement cloned and the processor's whole chain run on the clone.
func (r *unitRun) attempt(ctx context.Context) (string, error) {
	db, u, stmt := r.db, r.u, r.db.Statement
	if r.n++; r.n == 1 {
		if db.Error != nil {
			r.failed = failedAttempt(db, u.began)
			stmt.SQL.Reset() // logged by the retry, if one follows (below)
			stmt.Vars = nil
		}
		return u.outcome(db.Error)
	}
	if r.caller == "" {
		r.caller = callerOf()
	}
	r.failed.trace(db, r.n-1, r.caller)
	u.restore()
	clone := &unit{armed: true, retry: true}
	// Initialized: a *gorm.DB of its own with a clone of the pristine
	// statement, whose callbacks (InstanceSet) see that statement.
	next := u.base.Session(&gorm.Session{Initialized: true})
	next.Statement.Context = ctx
	clone.watch(next.Statement)
	start := time.Now()
	r.last = r.c.execute(next)
	r.failed = attemptLog{sql: clone.sql, vars: clone.vars, rows: r.last.RowsAffected, err: r.last.Error, took: time.Since(start)}
	return clone.outcome(r.last.Error)
}

// outcome is what an attempt returns to the transaction loop: the
// statement that failed and the error, or the failed COMMIT as
// config.CommitOutcome classifies it (its outcome may be unknown).
func (u *unit) outcome(err error) (string, error) {
	if err == nil {
		return "", nil
	}
	query, cause := u.rec.Failed()
	if u.committing && query == "" {
		return config.CommitOutcome("gormcrl", err)
	}
	return query, keepCause(err, cause)
}

// keepCause returns err, GORM's error of an operation, so that it
// unwraps to cause, the error of the statement that failed, first. GORM
// joins a later error to the statement's with %v, keeping only its text:
// go-mssqldb before v1.10 answers the ROLLBACK of a deadlock victim's
// transaction with 3903, and errors.As would find that instead of the
// 1205 that the rules retry (and that the caller asks about). The
// message stays GORM's.
func keepCause(err, cause error) error {
	if err == nil || cause == nil || errors.Is(err, cause) {
		return err
	}
	return &causedError{err: err, cause: cause}
}

// causedError is GORM's error over the failed statement's own.
type causedError struct{ err, cause error }

func (e *causedError) Error() string   { return e.err.Error() }
func (e *causedError) Unwrap() []error { return []error{e.cause, e.err} }
