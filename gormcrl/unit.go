package gormcrl

import (
	"context"
	"database/sql"
	"errors"

	"gorm.io/gorm"

	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/core"
)

// The whole-unit retry of Create, Update and Delete.
//
// GORM runs these through a processor whose callbacks are, in order:
// gorm:begin_transaction, the before hooks, the associations saved before,
// the statement, the associations saved after, the after hooks and
// gorm:commit_or_rollback_transaction. Over a pool crl opened, the driver
// layer replays that transaction when a statement fails with an error that
// ended it (a deadlock victim's), and the chain never sees the error. What
// reaches the chain is an error no replay hid (the replay diverged: an ID
// GORM read came back different; replay is off; COMMIT failed), and then
// the unit of retry is the whole chain, on a fresh transaction (SQL Server
// rolls a deadlock victim's whole transaction back):
//
//   - crl:unit_start (first) puts a config.Unit in the statement's
//     context, so that GORM begins its transaction with it and the driver
//     layer records there the statement whose error ends it. When the
//     operation may be re-run (GORM's implicit transaction on a pool crl
//     opened, no NoRetry, a value snapshot.go puts back), it first asks
//     the circuit breaker (core.Retrier.Admit): a refusal is the
//     operation's error and the chain runs nothing; then it snapshots the
//     value and keeps a session of the statement as it is.
//   - crl:unit_commit (before gorm:commit_or_rollback_transaction) notes
//     whether GORM is about to COMMIT: a failure after it is the COMMIT's.
//   - crl:unit_end (last) hands the chain's outcome, the first attempt, to
//     the transaction loop (core.Retrier.Run, with the admitted
//     operation), which decides with the failed statement's text for the
//     rule's query filter. Each retry puts the value back and runs the
//     processor's whole chain (Execute) on a fresh session of the pristine
//     statement, GORM's begin and commit included. The last attempt's
//     outcome is the operation's Error and RowsAffected, and its statement
//     the one GORM's processor logs.
//
// A COMMIT that failed with an unknown outcome is never retried (the error
// matches core.ErrCommitUnknown); a COMMIT the server refused is the failed
// statement "COMMIT".

// unitKey is the Settings key of a statement's unit. It holds the
// statement's own address, so the clones GORM makes of a statement (which
// copy Settings) do not see it.
type unitKey struct{ stmt *gorm.Statement }

// unit is the state of one Create, Update or Delete over a pool crl
// opened, or of one of its retries (retry set).
type unit struct {
	rec        config.Unit     // what the driver layer records of the transaction
	parent     context.Context // the statement's context before the unit's was put on it
	committing bool            // GORM is committing: a failure is the COMMIT's
	armed      bool            // re-run on failure; else only recorded, for the error it returns (keepCause)
	retry      bool            // a retry's statement: the loop runs in the first attempt's end

	// Of a retry: its statement, taken off so that the retry's processor
	// does not log it (see retry).
	sql  string
	vars []any

	// Of the first attempt of an armed unit.
	admission core.Op       // admitted by the circuit breaker before the chain ran
	loop      *core.Retrier // the Retrier that admitted it, which runs its loop
	base      *gorm.DB      // the statement as it was before the chain ran
	restore   func()        // puts the value written back as it was
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
	op      operation
	execute func(*gorm.DB) *gorm.DB // the processor's Execute
}

// start is crl:unit_start.
func (c *unitCallbacks) start(db *gorm.DB) {
	stmt := db.Statement
	noRetry := propagateNoRetry(stmt)
	if db.Error != nil || db.DryRun || db.SkipDefaultTransaction || unitOf(stmt) != nil {
		return // nothing runs, no implicit transaction, or a retry's statement
	}
	switch stmt.ConnPool.(type) {
	case *sql.Conn:
		return // bound to one connection whose state the caller owns
	case gorm.TxBeginner, gorm.ConnPoolBeginner: // GORM's Begin begins on these only
	default:
		return // in a user's transaction, or no transaction at all
	}
	rt, layered := poolRuntime(stmt.ConnPool)
	if !layered {
		return // a pool crl did not open: once, exactly as GORM
	}
	u := &unit{}
	if restore, ok := snapshot(stmt, c.op); ok && !noRetry {
		// The breaker is asked before anything of the first attempt runs:
		// an operation it refuses must not write, and its verdict is
		// applied to the attempts that ran (crl:unit_end).
		u.loop, u.admission = rt.Retrier(), core.Op{Kind: core.KindTransaction}
		if err := u.loop.Admit(stmt.Context, &u.admission); err != nil {
			_ = db.AddError(err) // the chain's callbacks see it and run nothing
			return
		}
		u.armed, u.restore = true, restore
		u.base = db.Session(&gorm.Session{Context: stmt.Context})
	}
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

// end is crl:unit_end.
func (c *unitCallbacks) end(db *gorm.DB) {
	stmt := db.Statement
	u := unitOf(stmt)
	if u == nil {
		return
	}
	stmt.Context = u.parent // a *gorm.DB reused after this operation
	if u.retry {
		// Taken off, so that the retry's processor does not log it: the
		// operation's logs the last attempt (see retry).
		u.sql, u.vars = stmt.SQL.String(), stmt.Vars
		stmt.SQL.Reset()
		stmt.Vars = nil
		return
	}
	stmt.Settings.Delete(unitKey{stmt})
	if u.armed {
		c.retry(db, u)
	} else if db.Error != nil {
		_, cause := u.rec.Failed()
		db.Error = keepCause(db.Error, cause)
		setResultError(stmt, db.Error)
	}
}

// unitRun is the state of a unit's loop, run by the first attempt's end:
// the attempts so far, and the last retry's *gorm.DB and unit.
type unitRun struct {
	c         *unitCallbacks
	db        *gorm.DB
	u         *unit
	n         int
	last      *gorm.DB
	lastRetry *unit
}

// retry hands the first attempt's outcome to the transaction loop, which
// runs the retries, and makes the last attempt the operation's: GORM's
// processor logs it once, as it logs a statement the driver layer
// retried (the attempts that failed are the observer's events).
func (c *unitCallbacks) retry(db *gorm.DB, u *unit) {
	stmt := db.Statement
	r := &unitRun{c: c, db: db, u: u}
	var failed string
	u.admission.Failed = func() string { return failed }
	err := u.loop.Run(stmt.Context, &u.admission, func(ctx context.Context) (err error) {
		failed, err = r.attempt(ctx)
		return err
	})
	if r.last != nil {
		db.RowsAffected = r.last.RowsAffected
		stmt.SQL.Reset()
		stmt.SQL.WriteString(r.lastRetry.sql)
		stmt.Vars = r.lastRetry.vars
	}
	db.Error = err
	setResultError(stmt, err)
}

// attempt is one attempt of the loop: the first one's outcome, which the
// chain has already run, or a retry: the value put back and the
// processor's whole chain run on a new session of the pristine statement.
func (r *unitRun) attempt(ctx context.Context) (string, error) {
	u := r.u
	if r.n++; r.n == 1 {
		return u.outcome(r.db.Error)
	}
	u.restore()
	r.lastRetry = &unit{armed: true, retry: true}
	// Initialized: a *gorm.DB of its own with a clone of the pristine
	// statement, whose callbacks (InstanceSet) see that statement.
	next := u.base.Session(&gorm.Session{Initialized: true})
	next.Statement.Context = ctx
	r.lastRetry.watch(next.Statement)
	r.last = r.c.execute(next)
	return r.lastRetry.outcome(r.last.Error)
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
