package adapter

import (
	"database/sql"
	"errors"
	"sync"
)

// Recorder remembers, for one transaction attempt, which statement failed,
// so that the rule's query filter is checked against it: the statement
// whose error ended the transaction, that is the last one that failed. An
// error that arrives while rows are read (rows.Next, rows.Err,
// rows.Close; MariaDB sends the error of INSERT … RETURNING that way)
// counts too. It also keeps the error of a failed COMMIT. Both adapters
// (sqlxcrl's Tx, gormcrl's transaction pool) record through it. The zero
// value is ready; it is safe for concurrent use.
type Recorder struct {
	mu     sync.Mutex
	failed string
	rows   []openedRows // rows opened after the last failed statement, in order
	commit error
}

// openedRows is a query whose rows may fail after the query returned.
type openedRows struct {
	query string
	rows  interface{ Err() error }
}

// Statement records the outcome of a statement: a failure makes it the
// failed statement, later than every rows opened before it.
func (r *Recorder) Statement(query string, err error) {
	if err == nil {
		return
	}
	r.mu.Lock()
	r.failed = query
	clear(r.rows)
	r.rows = r.rows[:0]
	r.mu.Unlock()
}

// Rows records the rows of a query that succeeded: an error met while
// they are read makes the query the failed statement. rows may be nil.
// A connection runs one statement at a time, so rows are read before the
// next statement runs: the order in which rows are opened is the order in
// which their errors arrive.
func (r *Recorder) Rows(query string, rows *sql.Rows) {
	if rows == nil {
		return
	}
	r.mu.Lock()
	r.rows = append(r.rows, openedRows{query, rows})
	r.mu.Unlock()
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
		if err := r.rows[i].rows.Err(); err != nil && !errors.Is(err, sql.ErrTxDone) {
			return r.rows[i].query
		}
	}
	return r.failed
}

// CommitErr returns the error of a failed COMMIT, or nil.
func (r *Recorder) CommitErr() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.commit
}
