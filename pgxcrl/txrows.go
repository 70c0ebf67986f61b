package pgxcrl

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/crl-go/crl/core"
)

// txRows are the rows of a query in a transaction. The query's first row
// (or its end) is read before they are handed back, so that an error
// that comes before it is the statement's, replayed with the
// transaction; every row the caller reads (and the end) is added to the
// digest of the statement's record.
type txRows struct {
	rowsOf
	t      *tx
	sql    string
	idx    int   // in the record
	seen   int64 // rows (and the end) the caller read
	digest core.Digest
	state  rowsState
	cancel context.CancelFunc // ends the query's bound (queryTimeout) when the rows are done
}

var _ pgx.Rows = (*txRows)(nil)

// Query runs sql in the transaction once, bounded by a positive
// queryTimeout while its rows are read too, replaying the transaction
// after an error before the first row that ended it (see tx). An error
// met while later rows are read is returned by Err and ends the
// transaction on the server (no replay: the caller is reading).
func (t *tx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	r := &txRows{t: t, sql: sql, state: rowsDone}
	if t.rolledBy != nil {
		r.err = t.rolledBack()
		return r, r.err
	}
	err := r.bounded(ctx, sql, args)
	if err != nil {
		err = t.recover(ctx, sql, err, func(ctx context.Context) error { return r.first(ctx, t.conn(), sql, args) })
		if err != nil {
			r.err, r.state = t.note(sql, err), rowsDone
			return r, err
		}
	}
	r.idx = t.record(sql, args)
	t.rec.RowsOpened()
	return r, nil
}

// bounded runs the query in the transaction and reads its first row,
// bounded by a positive queryTimeout, a bound that lasts while the rows
// are read (done ends it).
func (r *txRows) bounded(ctx context.Context, sql string, args []any) error {
	qctx, end := statementContext(ctx, r.t.p.rt.Retrier(), true)
	if end == nil {
		return r.first(ctx, r.t.inner, sql, args)
	}
	qctx, r.cancel = context.WithCancel(qctx)
	err := r.first(qctx, r.t.inner, sql, args)
	end(err)
	if err != nil {
		r.cancel()
		r.cancel = nil
	}
	return err
}

// QueryRow is Query for at most one row; its errors come from Scan.
func (t *tx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	r, _ := t.Query(ctx, sql, args...) // the error is Scan's
	return (*txRow)(r.(*txRows))
}

// querier is what a transaction's query runs on: pgx's Tx, or its
// connection during a replay.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// first runs the query on q and reads its first row.
func (r *txRows) first(ctx context.Context, q querier, sql string, args []any) error {
	inner, err := q.Query(ctx, sql, args...)
	if err != nil {
		return err
	}
	if inner.Next() {
		r.inner, r.state = inner, rowsHead
		return nil
	}
	if err := inner.Err(); err != nil {
		return err
	}
	r.inner, r.state = inner, rowsEmpty
	return nil
}

// saw adds what the caller just read to the record: a row, or the end.
func (r *txRows) saw(row bool) {
	if row {
		addRow(&r.digest, r.inner.RawValues())
	} else {
		r.digest.AddEnd()
	}
	r.seen++
	r.t.rec.Saw(r.idx, r.seen, r.digest)
}

// Next hands the first row, then reads the rest.
func (r *txRows) Next() bool {
	switch r.state {
	case rowsHead:
		r.state = rowsReading
		r.saw(true)
		return true
	case rowsEmpty:
		r.saw(false)
		r.done()
		return false
	case rowsDone:
		return false
	}
	if r.inner.Next() {
		r.saw(true)
		return true
	}
	if r.inner.Err() == nil {
		r.saw(false)
	}
	r.done()
	return false
}

// done closes the rows and notes an error met while they were read.
func (r *txRows) done() {
	if r.state == rowsDone {
		return
	}
	r.state = rowsDone
	r.inner.Close()
	if r.cancel != nil {
		r.cancel()
		r.cancel = nil
	}
	r.t.note(r.sql, r.inner.Err())
	r.t.rec.RowsClosed()
}

// Close closes the rows.
func (r *txRows) Close() { r.done() }

// Conn returns the transaction's connection.
func (r *txRows) Conn() *pgx.Conn { return r.t.conn() }

// TypeMap returns the type map the rows' values are decoded with, as
// pgx.Rows.TypeMap of the pgx versions that have it.
func (r *txRows) TypeMap() *pgtype.Map { return r.t.conn().TypeMap() }

// txRow is the pgx.Row of a transaction's QueryRow.
type txRow txRows

// Scan reads the first row into dest and closes the rows, as pgx's own
// Row: pgx.ErrNoRows when there is none.
func (w *txRow) Scan(dest ...any) error {
	r := (*txRows)(w)
	if r.inner == nil {
		return r.err
	}
	return scanFirst(r, dest)
}
