package adapter

import (
	"database/sql"
	"errors"
	"sync"

	"github.com/crl-go/crl/internal/layer/connector"
)

// Recorder remembers, for one transaction attempt, which statement failed,
// so that the rule's query filter is checked against it: the statement
// whose error ended the transaction, that is the last one that failed. An
// error that arrives while rows are read (rows.Next, rows.Err,
// rows.Close; MariaDB sends the error of INSERT … RETURNING that way)
// counts too. It also keeps the error of a failed COMMIT. Both adapters
// (sqlxcrl's Tx, gormcrl's transaction pool) record through it. The zero
// value is ready; it is safe for concurrent use.
//
// It holds on to rows only while they may still fail: rows that are
// closed (by the caller, or by reading them to the end) are let go when
// the next rows are recorded, their error, if any, recorded first. So a
// transaction that reads many result sets keeps the rows still open, not
// one per read.
type Recorder struct {
	mu        sync.Mutex
	failed    string
	failedErr error        // the error of the statement that failed last
	rows      []openedRows // rows opened after the last failed statement, in order, less those settle let go
	commit    error
}

// openedRows is a query whose rows may fail after the query returned.
type openedRows struct {
	query string
	rows  *sql.Rows
}

// Statement records the outcome of a statement: a failure makes it the
// failed statement, later than every rows opened before it, unless it is
// a ROLLBACK that an earlier failure caused (connector.Replaces).
func (r *Recorder) Statement(query string, err error) {
	if err == nil {
		return
	}
	r.mu.Lock()
	if connector.Replaces(query, r.failedErr != nil) {
		r.failed, r.failedErr = query, err
		clear(r.rows)
		r.rows = r.rows[:0]
	}
	r.mu.Unlock()
}

// Rows records the rows of a query that succeeded: an error met while
// they are read makes the query the failed statement. rows may be nil.
// A connection runs one statement at a time, so rows are read before the
// next statement runs: the order in which rows are opened is the order in
// which their errors arrive. The rows recorded before that are closed
// are let go (settle).
func (r *Recorder) Rows(query string, rows *sql.Rows) {
	if rows == nil {
		return
	}
	r.mu.Lock()
	r.settle()
	r.rows = append(r.rows, openedRows{query, rows})
	r.mu.Unlock()
}

// settle lets go of the recorded rows that are closed, keeping the others
// in order. A closed rows' error can no longer change: rows closed with an
// error become the failed statement, and the rows opened before them can
// no longer be the last that failed, so they go too; closed rows without
// an error never can be. What FailedQuery returns is unchanged. Called
// with r.mu held.
func (r *Recorder) settle() {
	kept := r.rows[:0]
	for _, o := range r.rows {
		switch {
		case !closed(o.rows):
			kept = append(kept, o)
		case failed(o.rows):
			r.failed, r.failedErr = o.query, o.rows.Err()
			kept = kept[:0]
		}
	}
	clear(r.rows[len(kept):]) // let the garbage collector have them
	r.rows = kept
}

// closed reports whether rows are closed. *sql.Rows tells it only through
// Columns, which fails on closed rows (with their error, or
// "sql: Rows are closed") and then allocates nothing; on rows still open
// it asks the driver for the column names.
func closed(rows *sql.Rows) bool {
	_, err := rows.Columns()
	return err != nil
}

// failed reports whether rows met an error of theirs: sql.ErrTxDone is
// the end of the transaction closing them, not theirs.
func failed(rows *sql.Rows) bool {
	err := rows.Err()
	return err != nil && !errors.Is(err, sql.ErrTxDone)
}

// Commit records the outcome of COMMIT.
func (r *Recorder) Commit(err error) {
	if err == nil {
		return
	}
	r.mu.Lock()
	r.commit = err
	r.mu.Unlock()
}

// FailedQuery returns the last statement that failed ("" when none did).
// Call it before the transaction is rolled back: rows left open are then
// closed with sql.ErrTxDone or a cancelled context, which is not theirs.
func (r *Recorder) FailedQuery() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.rows) - 1; i >= 0; i-- {
		if failed(r.rows[i].rows) {
			return r.rows[i].query
		}
	}
	return r.failed
}

// FailedErr returns the error of the last statement that failed (nil when
// none did), an error met while its rows were read included. Call it
// before the transaction is rolled back, as FailedQuery. An adapter whose
// ORM keeps only the text of a statement's error once a later one joins
// it (GORM's AddError) gives the loop this one.
func (r *Recorder) FailedErr() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.rows) - 1; i >= 0; i-- {
		if failed(r.rows[i].rows) {
			return r.rows[i].rows.Err()
		}
	}
	return r.failedErr
}

// CommitErr returns the error of a failed COMMIT, or nil.
func (r *Recorder) CommitErr() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.commit
}
