package gormcrl

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/callbacks"

	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/core"
)

// A statement callback as one attempt of the statement loop.
//
// An error can arrive after the query call returned, while GORM reads the
// rows: the execution cut-off's MariaDB 1969 or PostgreSQL 57014 after a
// SELECT's result header, a deadlock reported mid-stream, and the error of
// a write that reads rows back — MariaDB (≥ 10.5) sends the lock-wait
// time-out (1205) or deadlock (1213) of INSERT … RETURNING while the
// returned rows are read, and SQL Server's OUTPUT INSERTED can do the same.
// The driver layer's loop has returned by then, so the unit of retry of a
// statement outside a transaction is the processor's whole statement
// callback: gorm:query (query and scan), and gorm:create, gorm:update and
// gorm:delete (the statement and the scan of what it returns). crl
// replaces each (GORM keeps its place in the chain and logs the
// replacement once, at Info level) with one that runs GORM's own (or the
// dialector's) callback as each attempt of the statement loop.
//
// Before a retry, what the failed attempt wrote is put back: the rows it
// appended to a read's slice are dropped (a struct is scanned over); a
// write's value (IDs and defaults read back, CreatedAt/UpdatedAt) and its
// statement's clauses are put back as they were before the statement was
// built, and each attempt builds it again, so the values GORM writes back
// are those of the attempt that succeeded. A write runs alone here: the
// statement callbacks run one statement, in autocommit, which the server
// applies whole or not at all, so a failed attempt applied nothing.
//
// A statement in a transaction (GORM's implicit one included: the whole
// unit is retried, see unit.go), on a *sql.Conn, or opted out (NoRetry)
// runs once, as GORM runs it. So does a write whose value this package
// cannot put back (see snapshot.go): its statement is still retried by
// the driver layer when its error comes from the query call.

// wholeMarker is the name of the callback that tells Initialize that a
// processor's statement callback is already wrapped, so a second
// Initialize does not wrap it again.
const wholeMarker = "crl:whole"

// readMarker is wholeMarker of the query processor (its name from before
// writes were wrapped too).
const readMarker = "crl:read"

// attempts is the state of one statement callback's run under the loop,
// one value per statement (the loop's closure is its method).
type attempts struct {
	db       *gorm.DB
	original func(*gorm.DB)
	query    string        // the text the rule's filter sees
	rewind   config.Rewind // a read's slice
	restore  func()        // a write's value and statement; nil for a read
	n        int           // the attempts run
	failed   attemptLog    // the last attempt that failed
	caller   string        // the operation's caller, found for the first retry
}

// callbacksOf is what wrapStatement uses of a GORM processor (whose type
// GORM does not export).
type callbacksOf interface {
	Get(name string) func(*gorm.DB)
	Replace(name string, fn func(*gorm.DB)) error
}

// wrapStatement replaces the callback name of a processor with one that
// runs it as the attempts of the statement loop, once per processor: the
// marker, registered by mark, says it is done.
func (p *Plugin) wrapStatement(proc callbacksOf, mark func(string, func(*gorm.DB)) error, name, marker string, write bool) error {
	original := proc.Get(name)
	if original == nil || proc.Get(marker) != nil {
		return nil
	}
	if err := proc.Replace(name, wholeStatement(original, write)); err != nil {
		return fmt.Errorf("gormcrl: wrap %s: %w", name, err)
	}
	if err := mark(marker, func(*gorm.DB) {}); err != nil {
		return fmt.Errorf("gormcrl: wrap %s: %w", name, err)
	}
	return nil
}

// wrapStatements wraps the statement callbacks of the query, create,
// update and delete processors.
func (p *Plugin) wrapStatements(db *gorm.DB) error {
	cb := db.Callback()
	q, c, u, d := cb.Query(), cb.Create(), cb.Update(), cb.Delete()
	return errors.Join(
		p.wrapStatement(q, q.After("gorm:query").Register, "gorm:query", readMarker, false),
		p.wrapStatement(c, c.After("gorm:create").Register, "gorm:create", wholeMarker, true),
		p.wrapStatement(u, u.After("gorm:update").Register, "gorm:update", wholeMarker, true),
		p.wrapStatement(d, d.After("gorm:delete").Register, "gorm:delete", wholeMarker, true),
	)
}

// statementLoop returns the Retrier whose loop runs a statement
// callback's whole run over a pool crl opened (its driver layer then runs
// the attempt's statement once); nil when the callback runs once: in a
// transaction, opted out, nested in an attempt, or on a pool crl did not
// open.
func statementLoop(db *gorm.DB) *core.Retrier {
	stmt := db.Statement
	if db.Error != nil || db.DryRun {
		return nil
	}
	if !poolRetriesStatements(stmt.ConnPool) || propagateNoRetry(stmt) || config.UnitOf(stmt.Context) != nil {
		return nil
	}
	p, ok := pluginOf(db)
	if !ok {
		return nil
	}
	if _, layered := poolRuntime(stmt.ConnPool); !layered {
		return nil
	}
	return p.active(db).forPool(stmt.ConnPool).retrier()
}

// wholeStatement returns original with its whole run under the statement
// loop (statementLoop).
func wholeStatement(original func(*gorm.DB), write bool) func(*gorm.DB) {
	return func(db *gorm.DB) {
		stmt := db.Statement
		loop := statementLoop(db)
		if loop == nil {
			original(db)
			return
		}
		ok := false
		// a is the loop's state; it stays on the stack (prepare is not
		// called through a func value, which would move it to the heap).
		a := &attempts{db: db, original: original}
		if write {
			ok = a.prepareWrite()
		} else {
			ok = a.prepareRead()
		}
		if db.Error != nil {
			return
		}
		if !ok {
			original(db) // the query call alone is retried, by the driver layer
			return
		}
		parent := stmt.Context
		// The attempt's statement is not a loop of the driver layer's.
		uctx, _ := config.NewUnitContext(parent)
		err := loop.Do(uctx, a.query, a.run)
		stmt.Context = parent
		db.Error = err
		setResultError(stmt, err)
	}
}

// run is one attempt: the callback's whole run. A retry first logs the
// attempt that failed (GORM's processor logs only the last) and puts back
// what it wrote.
func (a *attempts) run(ctx context.Context) error {
	db := a.db
	if a.n++; a.n > 1 {
		if a.caller == "" {
			a.caller = callerOf()
		}
		a.failed.trace(db, a.n-1, a.caller)
		db.Error, db.RowsAffected = nil, 0
		a.rewind.Reset()
		if a.restore != nil {
			a.restore()
		}
	}
	start := time.Now()
	db.Statement.Context = ctx
	a.original(db)
	if db.Error != nil {
		a.failed = failedAttempt(db, start)
	}
	return db.Error
}

// prepareRead builds a query's SQL (what gorm:query does first; the
// callback then runs it as built) and rewinds the slice a failed attempt
// appended to.
func (a *attempts) prepareRead() bool {
	callbacks.BuildQuerySQL(a.db)
	a.query, a.rewind = a.db.Statement.SQL.String(), config.RewindOf(a.db.Statement.Dest)
	return true
}

// prepareWrite builds a write's SQL by running the callback in GORM's
// dry-run mode, then puts the statement and its value back as they were
// before the build: each attempt builds the statement itself, as the
// callback expects (sqlserver's Create decides while building whether it
// reads OUTPUT rows), so what it writes to the value is the attempt's own.
func (a *attempts) prepareWrite() bool {
	db := a.db
	stmt := db.Statement
	restoreValue, ok := snapshotValues(stmt)
	if !ok {
		return false
	}
	restoreStmt := snapshotStatement(stmt)
	a.dryRun()
	if db.Error != nil {
		return false // the operation's error, as GORM's build would have it
	}
	a.query = stmt.SQL.String()
	a.restore = func() { restoreStmt(); restoreValue() }
	a.restore()
	return a.query != "" // "": nothing to run (an update with nothing to set)
}

// dryRun runs the callback in GORM's dry-run mode, which builds the
// statement and runs nothing. The mode is set on a copy of the
// configuration given to this operation's *gorm.DB only, and put back even
// if the callback panics.
func (a *attempts) dryRun() {
	db := a.db
	config := db.Config
	dry := *config
	dry.DryRun = true
	db.Config = &dry
	defer func() { db.Config = config }()
	a.original(db)
}

// snapshotStatement returns a function that puts back what building a
// write's SQL changes on its statement: the clauses GORM adds (VALUES,
// SET, the WHERE of the primary keys, RETURNING), the SQL, its variables
// and the omitted columns.
func snapshotStatement(stmt *gorm.Statement) func() {
	clauses, sql, vars, omits := maps.Clone(stmt.Clauses), stmt.SQL.String(), stmt.Vars, stmt.Omits
	nVars, nOmits := len(vars), len(omits)
	return func() {
		stmt.Clauses = maps.Clone(clauses)
		stmt.SQL.Reset()
		stmt.SQL.WriteString(sql)
		stmt.Vars = vars[:nVars:nVars]
		stmt.Omits = omits[:nOmits:nOmits]
	}
}
