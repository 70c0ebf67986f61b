package crl

import (
	"context"
	"database/sql/driver"
	"io"
	"math"
	"reflect"

	"github.com/crl-go/crl/core"
)

// rows are the rows of a query in the driver layer. Outside a transaction
// and a unit, their first row is read inside the statement loop's attempt
// (first) and handed to the caller's first Next; an error met after it
// is reported to the pool's Retrier (Retrier.Unretried) and returned. In
// a transaction or a unit, an error met while they are read is recorded,
// as a statement's error is.
type rows struct {
	inner  driver.Rows
	cn     *conn
	ctx    context.Context // the caller's, for the events of an error
	query  string
	cancel context.CancelFunc // ends a bounded attempt's context when the rows close
	head   []driver.Value     // the first row, read by first, until Next hands it
	state  uint8
	alone  bool // in a transaction or a unit: record errors instead of reporting them
	owned  bool // the connection's own rows (conn.own), free again once closed

	// In a transaction recorded for its replay (replay.go): the record,
	// the query's index in it, the transaction's number, and what the
	// caller read (the times it read a row or the end, and their digest).
	rec  *core.TxRecord
	ri   int
	gen  uint64
	seen int64
	dg   core.Digest
	done bool // the end was read, or the rows closed
}

const (
	rowsStreaming uint8 = iota // Next reads from the driver's rows
	rowsHead                   // head holds the first row
	rowsEmpty                  // the first result set had no row: Next answers io.EOF once
)

var (
	_ driver.Rows                           = (*rows)(nil)
	_ driver.RowsNextResultSet              = (*rows)(nil)
	_ driver.RowsColumnTypeScanType         = (*rows)(nil)
	_ driver.RowsColumnTypeDatabaseTypeName = (*rows)(nil)
	_ driver.RowsColumnTypeLength           = (*rows)(nil)
	_ driver.RowsColumnTypeNullable         = (*rows)(nil)
	_ driver.RowsColumnTypePrecisionScale   = (*rows)(nil)
)

// newRows wraps the driver's rows of query; alone says that the query ran
// in a transaction or a unit (its caller knows: it chose the path). They
// are the connection's own rows when those are free, else new ones.
func newRows(ctx context.Context, ri driver.Rows, cn *conn, query string, cancel context.CancelFunc, alone bool) *rows {
	if cn.ownBusy {
		return &rows{inner: ri, cn: cn, ctx: ctx, query: query, cancel: cancel, alone: alone}
	}
	// Every field, one by one: no field of a query before survives, and
	// the value is not built aside and copied whole (a test holds this
	// list to the type's fields).
	cn.ownBusy = true
	r := &cn.own
	r.inner, r.cn, r.ctx, r.query, r.cancel, r.head = ri, cn, ctx, query, cancel, nil
	r.state, r.alone, r.owned = rowsStreaming, alone, true
	r.rec, r.ri, r.gen, r.seen, r.dg, r.done = nil, 0, 0, 0, core.Digest{}, false
	return r
}

// release makes the connection's own rows free again, once closed:
// database/sql calls nothing of driver rows after their Close, and
// closes them once. What they held of the caller's is dropped, so that a
// pooled connection keeps no context, driver rows or values alive.
func (r *rows) release() {
	if !r.owned {
		return
	}
	clear(r.head)
	r.inner, r.ctx, r.cancel, r.head = nil, nil, nil, nil
	r.cn.ownBusy = false
}

// first reads the first row into head, inside the attempt (into the
// connection's buffer for its own rows). On an error the driver's rows
// are closed.
func (r *rows) first() error {
	n := len(r.inner.Columns())
	var head []driver.Value
	if r.owned {
		if cap(r.cn.head) < n {
			r.cn.head = make([]driver.Value, n)
		}
		head = r.cn.head[:n]
	} else {
		head = make([]driver.Value, n)
	}
	switch err := r.inner.Next(head); err {
	case nil:
		r.head, r.state = head, rowsHead
	case io.EOF:
		r.state = rowsEmpty
	default:
		clear(head)
		_ = r.inner.Close() // the attempt's error is err
		return err
	}
	return nil
}

// failed handles an error met while the rows are read.
func (r *rows) failed(err error) {
	if err == nil || err == io.EOF {
		return
	}
	if r.alone {
		r.cn.record(r.ctx, r.query, err)
		return
	}
	r.cn.noteBroken(err)
	r.cn.r.Unretried(r.ctx, r.query, err)
}

// Columns returns the driver rows' column names.
func (r *rows) Columns() []string { return r.inner.Columns() }

// Next hands the first row, then reads the driver's rows.
func (r *rows) Next(dest []driver.Value) error {
	switch r.state {
	case rowsHead:
		// A loop, not copy and clear: a row has a few columns, and the
		// runtime's typed copy and clear cost more than their moves.
		head := r.head[:min(len(r.head), len(dest))] // as copy does, should dest be short
		for i, v := range head {
			dest[i], head[i] = v, nil // the values are the caller's now
		}
		clear(r.head[len(head):])
		r.head, r.state = nil, rowsStreaming
		return nil
	case rowsEmpty:
		r.state = rowsStreaming
		return io.EOF
	}
	err := r.inner.Next(dest)
	if err != nil && err != io.EOF {
		r.failed(err)
	}
	if r.rec != nil {
		r.saw(dest, err)
	}
	return err
}

// saw notes what the caller read: a row, or the end. The record learns
// it when the rows close (Close): a transaction whose error comes while
// rows are open is not replayed, so only closed rows' digests are read.
func (r *rows) saw(dest []driver.Value, err error) {
	if r.done || err != nil && err != io.EOF {
		return
	}
	if err == io.EOF {
		r.dg.AddEnd()
		r.done = true
	} else {
		for _, v := range dest {
			r.dg.Add(v)
		}
	}
	r.seen++
}

// current reports whether the rows' transaction is the one the
// connection records.
func (r *rows) current() bool {
	t := r.cn.recording()
	return t != nil && t.rp.gen == r.gen
}

// Close closes the driver's rows and ends a bounded attempt's context.
func (r *rows) Close() error {
	err := r.inner.Close()
	if err != nil {
		r.failed(err)
	}
	if r.rec != nil && r.current() {
		r.rec.Saw(r.ri, r.seen, r.dg)
		r.rec.RowsClosed()
		r.rec = nil
	}
	if r.cancel != nil {
		r.cancel()
	}
	r.release()
	return err
}

// HasNextResultSet reports the driver's answer, false when its rows have
// one result set only.
func (r *rows) HasNextResultSet() bool {
	if n, ok := r.inner.(driver.RowsNextResultSet); ok {
		return n.HasNextResultSet()
	}
	return false
}

// NextResultSet moves to the driver's next result set; io.EOF when it
// has one result set only.
func (r *rows) NextResultSet() error {
	n, ok := r.inner.(driver.RowsNextResultSet)
	if !ok {
		return io.EOF
	}
	clear(r.head)
	r.head, r.state = nil, rowsStreaming
	err := n.NextResultSet()
	if err != nil && err != io.EOF {
		r.failed(err)
	}
	if err == nil && r.rec != nil {
		// The caller reads a result set a replay cannot re-read: the
		// record says so when the rows close, and the transaction is
		// not replayed.
		r.seen, r.done = math.MinInt64, true
	}
	return err
}

// ColumnTypeScanType is the driver's, else database/sql's default.
func (r *rows) ColumnTypeScanType(index int) reflect.Type {
	if t, ok := r.inner.(driver.RowsColumnTypeScanType); ok {
		return t.ColumnTypeScanType(index)
	}
	return reflect.TypeOf(new(any)).Elem()
}

// ColumnTypeDatabaseTypeName is the driver's, else "".
func (r *rows) ColumnTypeDatabaseTypeName(index int) string {
	if t, ok := r.inner.(driver.RowsColumnTypeDatabaseTypeName); ok {
		return t.ColumnTypeDatabaseTypeName(index)
	}
	return ""
}

// ColumnTypeLength is the driver's, else unknown.
func (r *rows) ColumnTypeLength(index int) (int64, bool) {
	if t, ok := r.inner.(driver.RowsColumnTypeLength); ok {
		return t.ColumnTypeLength(index)
	}
	return 0, false
}

// ColumnTypeNullable is the driver's, else unknown.
func (r *rows) ColumnTypeNullable(index int) (nullable, ok bool) {
	if t, ok := r.inner.(driver.RowsColumnTypeNullable); ok {
		return t.ColumnTypeNullable(index)
	}
	return false, false
}

// ColumnTypePrecisionScale is the driver's, else unknown.
func (r *rows) ColumnTypePrecisionScale(index int) (precision, scale int64, ok bool) {
	if t, ok := r.inner.(driver.RowsColumnTypePrecisionScale); ok {
		return t.ColumnTypePrecisionScale(index)
	}
	return 0, 0, false
}
