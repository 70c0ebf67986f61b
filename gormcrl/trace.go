package gormcrl

import (
	"strconv"
	"time"

	"gorm.io/gorm"
)

// What GORM's logger shows of a unit re-run (unit.go).
//
// GORM's processor logs a statement once its chain has run, and its
// logger names the first frame of the stack outside gorm.io: the caller's
// file and line. A re-run runs from inside gormcrl, so:
//
//   - the attempt that ends the operation (the one that succeeded, or the
//     last) is logged by GORM's processor of the operation itself: its
//     text, rows and error become the operation's, and the line names the
//     caller's file and line, as for any statement;
//   - each attempt that failed and was re-run is logged by gormcrl when
//     the retry begins, through the same logger, with its own duration,
//     rows and error, its text led by a comment that names the attempt.
//
// A statement that the driver layer retried is logged once, by GORM, as
// any statement: the layer's attempts are below what GORM sees.

// attemptLog is an attempt that failed, as GORM's processor logs one.
type attemptLog struct {
	sql  string
	vars []any
	rows int64
	err  error
	took time.Duration
}

// trace logs the attempt, the n-th, which failed and is retried, through
// db's logger.
func (a attemptLog) trace(db *gorm.DB, n int) {
	if a.sql == "" || db.Logger == nil {
		return
	}
	ctx := db.Statement.Context
	note := "/* crl: attempt " + strconv.Itoa(n) + " failed, retried */ "
	db.Logger.Trace(ctx, time.Now().Add(-a.took), func() (string, int64) {
		sql, vars := a.sql, a.vars
		if filter, ok := db.Logger.(gorm.ParamsFilter); ok {
			sql, vars = filter.ParamsFilter(ctx, sql, vars...)
		}
		return note + db.Dialector.Explain(sql, vars...), a.rows
	}, a.err)
}
