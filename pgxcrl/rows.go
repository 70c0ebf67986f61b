package pgxcrl

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

// rowsState says where the caller stands in the rows.
type rowsState uint8

const (
	rowsHead    rowsState = iota // the first row was read by the attempt; the caller's first Next hands it
	rowsEmpty                    // the attempt met the end: the caller's first Next reports it
	rowsReading                  // the caller reads the rows
	rowsDone                     // closed (or failed): the connection is back in the pool
)

// rows are the rows of a query run under the statement loop: each
// attempt runs the query and reads its first row, so that an error that
// comes before it is inside the loop. They release the query's
// connection when closed or read to the end.
type rows struct {
	rowsOf
	l      lease
	ctx    context.Context // the caller's: the report of an error after the first row
	sql    string
	cancel context.CancelFunc // ends a bounded attempt's context (queryTimeout) when the rows are done
	state  rowsState
}

var _ pgx.Rows = (*rows)(nil)

// run runs the query under the statement loop.
func (r *rows) run(args []any) (pgx.Rows, error) {
	if err := queryLoop(r.ctx, r.l.p.rt.Retrier(), r, r.sql, args); err != nil {
		r.err, r.state = err, rowsDone
		r.l.release()
		return r, err
	}
	return r, nil
}

// attempt is one attempt of the query: run it on actx, the attempt's
// context, and read the first row. ctx is the caller's.
func (r *rows) attempt(ctx, actx context.Context, sql string, args []any) error {
	// A bounded attempt's context (queryTimeout) lives while the rows are
	// read; the rows end it when they are done.
	qctx := actx
	if actx != ctx {
		qctx, r.cancel = context.WithCancel(actx)
	}
	err := r.first(qctx, sql, args)
	if err != nil && r.cancel != nil {
		r.cancel()
		r.cancel = nil
	}
	return err
}

// first runs the query and reads its first row, on a new connection
// again when pgx never sent it and its connection broke.
func (r *rows) first(ctx context.Context, sql string, args []any) error {
	for n := 0; ; n++ {
		cn, err := r.l.conn(ctx)
		if err != nil {
			return err
		}
		inner, err := cn.Query(ctx, sql, args...)
		if err == nil {
			if inner.Next() {
				r.inner, r.state = inner, rowsHead
				return nil
			}
			if err = inner.Err(); err == nil {
				r.inner, r.state = inner, rowsEmpty
				return nil
			}
		}
		if n == resends || !r.l.unsent(err) {
			r.l.failed(ctx, err)
			return err
		}
	}
}

// Next hands the first row the attempt read, then reads the rest. At the
// end the connection goes back to the pool; an error met there is
// reported to the engine (not retried) and returned by Err.
func (r *rows) Next() bool {
	switch r.state {
	case rowsHead:
		r.state = rowsReading
		return true
	case rowsEmpty:
		r.done()
		return false
	case rowsDone:
		return false
	}
	if r.inner.Next() {
		return true
	}
	r.done()
	return false
}

// done ends the rows: closes them, reports an error met after the first
// row, releases the connection and the attempt's context.
func (r *rows) done() {
	if r.state == rowsDone {
		return
	}
	reading := r.state == rowsReading
	r.state = rowsDone
	r.inner.Close()
	if err := r.inner.Err(); err != nil && reading {
		unretried(r.ctx, r.l.p.rt.Retrier(), r.sql, err)
	}
	r.l.release()
	if r.cancel != nil {
		r.cancel()
	}
}

// Close closes the rows and returns the connection to the pool.
func (r *rows) Close() { r.done() }

// Conn returns the connection the rows are read on (nil when the query
// failed).
func (r *rows) Conn() *pgx.Conn {
	if r.inner == nil {
		return nil
	}
	return r.inner.Conn()
}

// row is the pgx.Row of QueryRow: its rows, read by Scan.
type row rows

// Scan reads the first row into dest and closes the rows, as pgx's own
// Row: pgx.ErrNoRows when there is none.
func (w *row) Scan(dest ...any) error {
	r := (*rows)(w)
	if r.inner == nil {
		return r.err
	}
	return scanFirst(r, dest)
}

// TypeMap returns the type map the rows' values are decoded with, nil for
// the rows of a query that failed, as pgx.Rows.TypeMap of the pgx
// versions that have it.
func (r *rows) TypeMap() *pgtype.Map {
	if r.inner == nil {
		return nil
	}
	if tm, ok := r.inner.(interface{ TypeMap() *pgtype.Map }); ok {
		return tm.TypeMap()
	}
	if c := r.inner.Conn(); c != nil {
		return c.TypeMap()
	}
	return nil
}

// rowsOf answers pgx.Rows's reading methods from the driver's rows once
// the query ran (inner), or from the query's error (err) when it did
// not: the part a pool's rows and a transaction's rows share.
type rowsOf struct {
	inner pgx.Rows
	err   error // the query's error, when it failed or the loop gave up
}

// Err returns the query's error or the first error met while reading.
func (r *rowsOf) Err() error {
	if r.inner == nil {
		return r.err
	}
	return r.inner.Err()
}

// CommandTag returns the command tag, once the rows are closed.
func (r *rowsOf) CommandTag() pgconn.CommandTag {
	if r.inner == nil {
		return pgconn.CommandTag{}
	}
	return r.inner.CommandTag()
}

// FieldDescriptions returns the columns' descriptions.
func (r *rowsOf) FieldDescriptions() []pgconn.FieldDescription {
	if r.inner == nil {
		return nil
	}
	return r.inner.FieldDescriptions()
}

// Scan reads the current row's values into dest, as pgx.Rows.Scan.
func (r *rowsOf) Scan(dest ...any) error {
	if r.inner == nil {
		return r.err
	}
	return r.inner.Scan(dest...)
}

// Values returns the current row's values, as pgx.Rows.Values.
func (r *rowsOf) Values() ([]any, error) {
	if r.inner == nil {
		return nil, r.err
	}
	return r.inner.Values()
}

// RawValues returns the current row's raw values, as pgx.Rows.RawValues.
func (r *rowsOf) RawValues() [][]byte {
	if r.inner == nil {
		return nil
	}
	return r.inner.RawValues()
}

// scanFirst is pgx's Row.Scan over r, rows whose query ran: the first
// row read into dest and the rows closed; pgx.ErrNoRows when there is
// none.
func scanFirst(r pgx.Rows, dest []any) error {
	for _, d := range dest {
		if _, ok := d.(*pgtype.DriverBytes); ok {
			r.Close()
			return fmt.Errorf("pgxcrl: cannot scan into *pgtype.DriverBytes from QueryRow")
		}
	}
	if !r.Next() {
		if err := r.Err(); err != nil {
			return err
		}
		return pgx.ErrNoRows
	}
	if err := r.Scan(dest...); err != nil {
		r.Close()
		return err
	}
	r.Close()
	return r.Err()
}
