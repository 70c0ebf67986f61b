package gormcrl

import (
	"context"

	"gorm.io/gorm"
	"gorm.io/gorm/callbacks"

	"github.com/crl-go/crl/internal/adapter"
)

// The reads of First, Find, Take, Last, Pluck and Raw(...).Find: GORM's
// gorm:query callback runs the query and scans every row into the
// destination, and an error can arrive while the rows are read — the
// execution cut-off's MariaDB 1969 or PostgreSQL 57014 after the result
// header, a deadlock reported mid-stream. So the unit of retry of a read
// outside a transaction is the whole callback, query and scan: crl
// replaces gorm:query (GORM keeps its place in the chain and logs the
// replacement once, at Info level) with readQuery, which runs GORM's own
// callback as one attempt of the statement loop. The rows a failed attempt
// appended to a slice are dropped before the next attempt; a struct is
// scanned over. A read in a transaction, on a *sql.Conn, or opted out
// (NoRetry) runs once, as GORM runs it.

// readMarker is the name of the callback that tells Initialize that
// gorm:query already is readQuery, so a second Initialize does not wrap it
// again.
const readMarker = "crl:read"

// wrapQuery replaces gorm:query of db's query processor with readQuery,
// once.
func (p *Plugin) wrapQuery(db *gorm.DB) error {
	q := db.Callback().Query()
	original := q.Get("gorm:query")
	if original == nil || q.Get(readMarker) != nil {
		return nil
	}
	if err := q.Replace("gorm:query", p.readQuery(original)); err != nil {
		return err
	}
	return q.After("gorm:query").Register(readMarker, func(*gorm.DB) {})
}

// readQuery returns original, GORM's gorm:query, with its whole read under
// the statement loop for a statement that crl:retry_pool put the loop on.
func (p *Plugin) readQuery(original func(*gorm.DB)) func(*gorm.DB) {
	return func(db *gorm.DB) {
		stmt := db.Statement
		rp, ok := unwrapPool(stmt.ConnPool)
		if !ok || db.Error != nil || db.DryRun {
			original(db)
			return
		}
		callbacks.BuildQuerySQL(db) // what gorm:query does first: the text the rule's filter sees
		if db.Error != nil {
			return
		}
		pool, parent := stmt.ConnPool, stmt.Context
		stmt.ConnPool = rp.inner // the attempt's query is not a loop of its own
		attempt, rewind := 0, adapter.RewindOf(stmt.Dest)
		err := rp.retrier.Do(parent, stmt.SQL.String(), func(ctx context.Context) error {
			if attempt++; attempt > 1 {
				db.Error, db.RowsAffected = nil, 0
				rewind.Reset()
			}
			stmt.Context = ctx
			original(db)
			return db.Error
		})
		stmt.ConnPool, stmt.Context = pool, parent
		db.Error = err
		setResultError(stmt, err)
	}
}
