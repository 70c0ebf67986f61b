package gormcrl

import (
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"
)

// What GORM's logger shows of a retried operation.
//
// GORM's processor logs a statement once its chain has run, and its
// logger names the first frame of the stack outside gorm.io (and not
// more than a dozen frames up): for an operation that gormcrl did not
// retry, the caller's file and line. A retry runs from inside gormcrl,
// so a line logged there would name gormcrl's own file. So:
//
//   - the attempt that ends the operation (the one that succeeded, or the
//     last) is logged by GORM's processor of the operation itself: its
//     text, rows and error become the operation's, and the line names the
//     caller's file and line, as for any statement;
//   - each attempt that failed and was retried is logged by gormcrl, when
//     the retry begins, through the same logger, with its own duration,
//     rows and error; its text is led by a comment that names the attempt
//     and the caller's file and line, which GORM's logger cannot be told
//     (the line's own file is gormcrl's, where it is logged).
//
// The caller is found only when a retry begins (the operation is still on
// the stack then), so the success path does not walk the stack.

// attemptLog is an attempt that failed, as GORM's processor logs one.
type attemptLog struct {
	sql  string
	vars []any
	rows int64
	err  error
	took time.Duration
}

// failedAttempt is the attempt of db's statement that began at start and
// just failed.
func failedAttempt(db *gorm.DB, start time.Time) attemptLog {
	stmt := db.Statement
	return attemptLog{sql: stmt.SQL.String(), vars: stmt.Vars, rows: db.RowsAffected, err: db.Error, took: time.Since(start)}
}

// trace logs the attempt, the n-th, which failed and is retried, through
// db's logger.
func (a attemptLog) trace(db *gorm.DB, n int, caller string) {
	if a.sql == "" || db.Logger == nil {
		return
	}
	ctx := db.Statement.Context
	note := "/* crl: attempt " + strconv.Itoa(n) + " failed, retried"
	if caller != "" {
		note += "; called at " + caller
	}
	note += " */ "
	db.Logger.Trace(ctx, time.Now().Add(-a.took), func() (string, int64) {
		sql, vars := a.sql, a.vars
		if filter, ok := db.Logger.(gorm.ParamsFilter); ok {
			sql, vars = filter.ParamsFilter(ctx, sql, vars...)
		}
		return note + db.Dialector.Explain(sql, vars...), a.rows
	}, a.err)
}

// internalPrefixes are the functions a caller is not: GORM's, and those
// of crl's packages that run an operation's attempts.
var internalPrefixes = []string{
	"gorm.io/",
	"github.com/crl-go/crl/gormcrl.",
	"github.com/crl-go/crl/core.",
	"github.com/crl-go/crl/config.",
	"github.com/crl-go/crl/internal/",
}

// callerOf returns file:line of the code that called the GORM operation
// running on this goroutine: the first frame outside GORM and crl (""
// when there is none within 64 frames).
func callerOf() string {
	var pcs [64]uintptr
	frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs[:])])
	for {
		f, more := frames.Next()
		if f.Function != "" && !internalFrame(f.Function) {
			return fmt.Sprintf("%s:%d", f.File, f.Line)
		}
		if !more {
			return ""
		}
	}
}

func internalFrame(function string) bool {
	for _, p := range internalPrefixes {
		if strings.HasPrefix(function, p) {
			return true
		}
	}
	return false
}
