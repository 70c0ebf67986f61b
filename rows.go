package crl

import (
	"context"
	"database/sql/driver"
	"io"
	"math"
	"reflect"
	"unsafe"

	"github.com/crl-go/crl/core"
)

// rows are the rows of a query in the driver layer. Outside a transaction
// and a unit, their first row is read inside the statement loop's attempt
// (first) and handed to the caller's first Next; an error met after it
// is reported to the pool's Retrier (Retrier.Unretried) and returned. In
// a transaction or a unit, an error met while they are read is recorded,
// as a statement's error is.
//
// database/sql is handed them as *rows when the driver's rows have one
// result set only (pgx's stdlib, drivers without RowsNextResultSet), else
// as *multiRows, which add NextResultSet: database/sql asks the rows it
// holds for RowsNextResultSet at the end of every query's rows, and rows
// without it have nothing to answer there (handed).
type rows struct {
	inner  driver.Rows
	cn     *conn
	ctx    context.Context // the caller's, for the events of an error
	query  string
	cancel context.CancelFunc // ends a bounded attempt's context when the rows close
	head   []driver.Value     // the first row, read by first, while state is rowsHead; the connection's own rows keep it, emptied, as their buffer
	state  uint8
	alone  bool // in a transaction or a unit: record errors instead of reporting them
	owned  bool // the connection's own rows (conn.own), free again once closed
	rowsRecord
}

// rowsRecord is what rows of a query in a transaction recorded for its
// replay (replay.go) keep: the record, the query's index in it, the
// transaction's number, and what the caller read (the times it read a
// row or the end, and their digest).
type rowsRecord struct {
	rec  *core.TxRecord
	ri   int
	gen  uint64
	seen int64
	dg   core.Digest
	done bool // the end was read, or the rows closed
}

// multiRows are rows whose driver's rows have more than one result set
// (RowsNextResultSet: go-sql-driver/mysql's, go-mssqldb's). The rows are
// their first field, so that the methods of rows reach them at no cost
// (a promoted method of a field at offset 0 is a jump), and a *multiRows
// and its *rows are the same memory: the connection's own rows are one
// multiRows, handed as either.
type multiRows struct{ rows }

const (
	rowsStreaming uint8 = iota // Next reads from the driver's rows
	rowsRecorded               // Next reads from the driver's rows and notes what the caller read (saw)
	rowsHead                   // head holds the first row
	rowsEmpty                  // the first result set had no row: Next answers io.EOF once
)

var (
	_ driver.Rows                           = (*rows)(nil)
	_ driver.RowsColumnTypeScanType         = (*rows)(nil)
	_ driver.RowsColumnTypeDatabaseTypeName = (*rows)(nil)
	_ driver.RowsColumnTypeLength           = (*rows)(nil)
	_ driver.RowsColumnTypeNullable         = (*rows)(nil)
	_ driver.RowsColumnTypePrecisionScale   = (*rows)(nil)
	_ driver.RowsNextResultSet              = (*multiRows)(nil)
)

// newRows wraps the driver's rows of query; alone says that the query ran
// in a transaction or a unit (its caller knows: it chose the path). They
// are the connection's own rows when those are free, else new ones.
// database/sql is given them as handed returns them.
func newRows(ctx context.Context, ri driver.Rows, cn *conn, query string, cancel context.CancelFunc, alone bool) *multiRows {
	if cn.ownBusy {
		return rowsAside(ctx, ri, cn, query, cancel, alone)
	}
	// Every field, one by one: no field of a query before survives, and
	// the value is not built aside and copied whole (a test holds this
	// list to the type's fields). head is the buffer the rows keep, its
	// values dropped (Next, release): read only once first filled it.
	cn.ownBusy = true
	m := &cn.own
	r := &m.rows
	r.inner, r.cn, r.ctx, r.query, r.cancel = ri, cn, ctx, query, cancel
	r.state, r.alone, r.owned = rowsStreaming, alone, true
	r.rowsRecord = rowsRecord{}
	return m
}

// rowsAside are newRows while the connection's own rows are open.
func rowsAside(ctx context.Context, ri driver.Rows, cn *conn, query string, cancel context.CancelFunc, alone bool) *multiRows {
	return &multiRows{rows{inner: ri, cn: cn, ctx: ctx, query: query, cancel: cancel, alone: alone}}
}

// handed returns the rows as database/sql is given them: as multiRows
// when the driver's rows have RowsNextResultSet, else as rows, which
// lack it as the driver's do (database/sql then calls nothing at their
// end). Either converts to driver.Rows without allocating.
func (m *multiRows) handed() driver.Rows {
	k := &m.cn.kind
	if t := (*[2]unsafe.Pointer)(unsafe.Pointer(&m.inner))[0]; t != k.itab {
		_, k.sets = m.inner.(driver.RowsNextResultSet)
		k.itab = t
	}
	if k.sets {
		return m
	}
	return &m.rows
}

// rowsKind is what a connection knows of the type of its driver's rows:
// the dynamic type of the rows it handed last, as the first word of a
// driver.Rows value holds it (its itab, never freed), and whether they
// have RowsNextResultSet. A connection's queries return rows of one or
// two types, so the type assertion runs at its first query, not at each
// (handed compares a word instead).
type rowsKind struct {
	itab unsafe.Pointer
	sets bool
}

// release makes the connection's own rows free again, once closed:
// database/sql calls nothing of driver rows after their Close, and
// closes them once. What they held of the caller's is dropped, so that a
// pooled connection keeps no context, driver rows or values alive (the
// values of a first row handed to Next were dropped there; head itself
// is the buffer the connection's own rows keep).
func (r *rows) release() {
	if !r.owned {
		return
	}
	if r.state == rowsHead {
		clear(r.head)
	}
	r.inner, r.ctx, r.cancel = nil, nil, nil
	r.cn.ownBusy = false
}

// first reads the first row of the driver's rows, of n columns, into
// head, inside the attempt (the connection's own rows read it into the
// buffer they keep): its caller asks first when a rule could retry an
// error before the first row (WantsFirstRow). The end met instead (the
// rows have no row) is noted for Next; the attempt's error closes the
// driver's rows and releases these (nobody closes them).
func (r *rows) first(n int) error {
	head := r.head
	if len(head) != n {
		head = r.sized(n)
	}
	err := r.inner.Next(head)
	if err == nil {
		r.state = rowsHead
		return nil
	}
	if isEOF(err) {
		r.state = rowsEmpty
		return nil
	}
	clear(head)
	_ = r.inner.Close() // the attempt's error is err
	r.release()
	return err
}

// sized makes head n values long, in the array it has when that holds
// them (its values are nil: dropped where they were handed over).
func (r *rows) sized(n int) []driver.Value {
	if cap(r.head) < n {
		r.head = make([]driver.Value, n)
	} else {
		r.head = r.head[:n]
	}
	return r.head
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

// Next reads the driver's rows: its first branch is every row but a
// peeked first one. Else it hands the first row read by first, or
// (nextOther) answers the end first met, or reads and notes what the
// caller read of a recorded query.
func (r *rows) Next(dest []driver.Value) error {
	if r.state == rowsStreaming {
		err := r.inner.Next(dest)
		if err != nil && !isEOF(err) {
			r.failed(err)
		}
		return err
	}
	if r.state != rowsHead {
		return r.nextOther(dest)
	}
	head := r.head
	if len(head) > len(dest) { // as copy does, should dest be short
		clear(head[len(dest):])
		head = head[:len(dest)]
	}
	// A loop, not copy and clear: a row has a few columns, and the
	// runtime's typed copy and clear cost more than their moves. head
	// stays (the connection's buffer); its values are the caller's now.
	dest = dest[:len(head)]
	for i, v := range head {
		dest[i], head[i] = v, nil
	}
	r.state = rowsStreaming
	return nil
}

// nextOther is Next in the states rowsEmpty and rowsRecorded.
func (r *rows) nextOther(dest []driver.Value) error {
	if r.state == rowsEmpty {
		r.state = rowsStreaming
		return io.EOF
	}
	err := r.inner.Next(dest)
	if err != nil && !isEOF(err) {
		r.failed(err)
	}
	r.saw(dest, err)
	return err
}

// isEOF reports whether err is io.EOF, as err == io.EOF does (isError),
// at the end of every query's rows.
func isEOF(err error) bool { return isError(err, &io.EOF) }

// isError reports whether err is *target, a variable whose dynamic type
// is a pointer (errors.New's: io.EOF, driver.ErrSkip), as err == *target
// does, without the runtime call that comparison makes once the dynamic
// types are the same: for such a target the two words of the interface
// values are the same exactly when the values are. The variable's
// address, not its value: inlined, its words are read where it is.
func isError(err error, target *error) bool {
	e, t := (*[2]unsafe.Pointer)(unsafe.Pointer(&err)), (*[2]unsafe.Pointer)(unsafe.Pointer(target))
	return e[0] == t[0] && e[1] == t[1] // not the arrays: their == is a call
}

// saw notes what the caller read: a row, or the end. The record learns
// it when the rows close (Close): a transaction whose error comes while
// rows are open is not replayed, so only closed rows' digests are read.
func (r *rows) saw(dest []driver.Value, err error) {
	switch {
	case r.done:
		return
	case err == nil:
		for _, v := range dest {
			r.dg.Add(v)
		}
	case isEOF(err):
		r.dg.AddEnd()
		r.done = true
	default:
		return
	}
	r.seen++
}

// current reports whether the rows' transaction is the one the
// connection records.
func (r *rows) current() bool {
	t := r.cn.recording()
	return t != nil && t.rp.gen == r.gen
}

// Close closes the driver's rows and releases these. What most queries'
// rows have none of (an error of the driver's Close to report, a record
// to tell, a bounded attempt's context to end) is closed's.
func (r *rows) Close() error {
	err := r.inner.Close()
	if err != nil || r.rec != nil || r.cancel != nil {
		r.closed(err)
	}
	r.release()
	return err
}

// closed is Close for rows whose driver's Close answered err, or that
// have a record to tell or a bounded attempt's context to end.
func (r *rows) closed(err error) {
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
}

// HasNextResultSet reports the driver's answer (handed gives
// database/sql multiRows only over driver rows that have it).
func (m *multiRows) HasNextResultSet() bool {
	if n, ok := m.inner.(driver.RowsNextResultSet); ok {
		return n.HasNextResultSet()
	}
	return false
}

// NextResultSet moves to the driver's next result set. A first row read
// and not handed is dropped with the result set it belonged to.
func (m *multiRows) NextResultSet() error {
	n, ok := m.inner.(driver.RowsNextResultSet)
	if !ok {
		return io.EOF
	}
	r := &m.rows
	if r.state == rowsHead {
		clear(r.head)
	}
	r.state = rowsStreaming
	if r.rec != nil {
		r.state = rowsRecorded
	}
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
