package crl

import (
	"context"
	"database/sql/driver"
	"io"
	"reflect"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOwnRowsKeepNothingOfTheQueryBefore: the connection's own rows,
// handed to a new query, have every field as new rows of that query
// would, whatever the query before left in them: newRows sets each field
// by name, and a field added to rows without being set there fails here.
// The one they keep is head, the first row's buffer, whose values were
// dropped where they were handed over (Next, release).
func TestOwnRowsKeepNothingOfTheQueryBefore(t *testing.T) {
	cn := &conn{}
	fill(t, reflect.ValueOf(&cn.own).Elem())
	ctx := context.Background()
	for _, alone := range []bool{false, true} {
		buffer := cn.own.head
		got := newRows(ctx, nil, cn, "select 1", nil, alone)
		want := multiRows{rows{cn: cn, ctx: ctx, query: "select 1", head: buffer, alone: alone, owned: true}}
		assert.Same(t, &cn.own, got, "the connection's own rows")
		assert.True(t, reflect.DeepEqual(want, *got), "alone=%v: %+v, expected %+v", alone, *got, want)
		got.release()
		fill(t, reflect.ValueOf(&cn.own).Elem())
	}
}

// fill sets every field of the struct v, exported or not, to a value
// other than its zero value.
func fill(t *testing.T, v reflect.Value) {
	t.Helper()
	for i := range v.NumField() {
		f := v.Field(i)
		f = reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem()
		switch f.Kind() {
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			f.SetInt(3)
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			f.SetUint(3)
		case reflect.String:
			f.SetString("before")
		case reflect.Pointer:
			f.Set(reflect.New(f.Type().Elem()))
		case reflect.Slice:
			f.Set(reflect.MakeSlice(f.Type(), 1, 1))
		case reflect.Func:
			f.Set(reflect.MakeFunc(f.Type(), func([]reflect.Value) []reflect.Value { return nil }))
		case reflect.Struct:
			fill(t, f)
		case reflect.Interface:
			fillInterface(t, f)
		default:
			t.Fatalf("field %s: fill a %s", v.Type().Field(i).Name, f.Kind())
		}
	}
}

// fillInterface sets f, an interface field (of rows, of tx), to a value of
// its type.
func fillInterface(t *testing.T, f reflect.Value) {
	t.Helper()
	for _, v := range []any{context.TODO(), emptyRows{}, nopTx{}, errNilFunc} {
		if reflect.TypeOf(v).Implements(f.Type()) {
			f.Set(reflect.ValueOf(v))
			return
		}
	}
	t.Fatalf("field of type %s: no value to fill it with", f.Type())
}

// setsRows are driver rows with more than one result set.
type setsRows struct{ emptyRows }

func (setsRows) HasNextResultSet() bool { return false }
func (setsRows) NextResultSet() error   { return io.EOF }

// The rows database/sql is given have RowsNextResultSet exactly when the
// driver's have it, whatever type the connection's rows had before, and
// the column types' interfaces either way.
func TestHandedRowsHaveNextResultSetAsTheDriversDo(t *testing.T) {
	cn := &conn{}
	ctx := context.Background()
	for i, ri := range []driver.Rows{emptyRows{}, setsRows{}, setsRows{}, emptyRows{}, emptyRows{}, setsRows{}} {
		m := newRows(ctx, ri, cn, "select 1", nil, false)
		got := m.handed()
		_, sets := got.(driver.RowsNextResultSet)
		_, want := ri.(driver.RowsNextResultSet)
		assert.Equal(t, want, sets, "query %d", i)
		assert.Same(t, &cn.own.rows, (*rows)(reflect.ValueOf(got).UnsafePointer()), "query %d: the connection's own rows", i)
		for _, it := range []any{
			(*driver.RowsColumnTypeScanType)(nil), (*driver.RowsColumnTypeDatabaseTypeName)(nil), (*driver.RowsColumnTypeLength)(nil),
			(*driver.RowsColumnTypeNullable)(nil), (*driver.RowsColumnTypePrecisionScale)(nil),
		} {
			assert.True(t, reflect.TypeOf(got).Implements(reflect.TypeOf(it).Elem()), "query %d: %T", i, it)
		}
		require.NoError(t, got.Close())
	}
}

// pairRows are driver rows of two columns and one row.
type pairRows struct{ read bool }

func (*pairRows) Columns() []string { return []string{"id", "name"} }
func (*pairRows) Close() error      { return nil }
func (r *pairRows) Next(dest []driver.Value) error {
	if r.read {
		return io.EOF
	}
	r.read = true
	dest[0], dest[1] = int64(7), []byte("pen")
	return nil
}

// The connection's own rows keep the first row's buffer from query to
// query, its array reused, and none of its values: a first row handed
// to Next, or dropped unread when the rows close, leaves nil behind, so
// a pooled connection keeps no value of a query alive.
func TestFirstRowBufferKeepsNoValue(t *testing.T) {
	cn := &conn{}
	ctx := context.Background()
	var array *driver.Value
	for i, handOver := range []bool{true, false, true} {
		m := newRows(ctx, &pairRows{}, cn, "select id, name from orders", nil, false)
		require.NoError(t, m.first(2), "query %d", i)
		if array == nil {
			array = &m.head[0]
		}
		assert.Same(t, array, &m.head[0], "query %d: the buffer's array, reused", i)
		if handOver {
			dest := make([]driver.Value, 2)
			require.NoError(t, m.Next(dest), "query %d", i)
			assert.Equal(t, []driver.Value{int64(7), []byte("pen")}, dest, "query %d: the first row", i)
			assert.Equal(t, []driver.Value{nil, nil}, m.head, "query %d: handed over, the buffer holds nothing", i)
			require.Equal(t, io.EOF, m.Next(dest), "query %d", i)
		}
		require.NoError(t, m.Close(), "query %d", i)
		assert.Equal(t, []driver.Value{nil, nil}, cn.own.head[:2], "query %d: closed, the buffer holds nothing", i)
		assert.False(t, cn.ownBusy, "query %d", i)
	}
	// A query of more columns gets a buffer that holds them.
	m := newRows(ctx, emptyRows{}, cn, "select 1", nil, false)
	require.NoError(t, m.first(5))
	assert.Len(t, m.head, 5)
	require.NoError(t, m.Close())
}
