package mssqltest

import (
	"database/sql/driver"
	"encoding/binary"
	"fmt"
	"math"
	"time"
)

// columnType is the SQL Server type a Rows column is sent as.
type columnType int

const (
	columnNVarChar  columnType = iota // nvarchar(4000), or nvarchar(max) for long values
	columnInt                         // int, INTN 4
	columnBigInt                      // bigint, INTN 8
	columnBit                         // bit, BITN
	columnReal                        // real, FLTN 4
	columnFloat                       // float, FLTN 8
	columnDateTime2                   // datetime2(7)
	columnVarBinary                   // varbinary(8000), or varbinary(max) for long values
)

// Type ids in TYPE_INFO (MS-TDS 2.2.5.4).
const (
	typeIntN       byte = 0x26
	typeDateTime2N byte = 0x2A
	typeBitN       byte = 0x68
	typeFltN       byte = 0x6D
	typeBigVarBin  byte = 0xA5
	typeNVarChar   byte = 0xE7
)

const (
	colFlagNullable = 0x0001
	// shortLenMax is the largest byte length a non-max (n)varchar or
	// varbinary column holds; longer values need the PLP (max) form.
	shortLenMax = 8000
	plpMarker   = 0xFFFF
)

// column is one result column: its name, type and, for strings and
// binaries, whether it needs the max (PLP) form.
type column struct {
	name string
	typ  columnType
	max  bool
}

// resultSet is a Rows reply turned into wire-ready values.
type resultSet struct {
	columns []column
	rows    [][]any // normalised values: nil, int64, bool, float64, float32, string, []byte, time.Time
}

// newResultSet infers each column's type from its values: the first non-nil
// value decides, integers widen to bigint when any value needs it, and a
// column that mixes incompatible types is sent as nvarchar text.
func newResultSet(names []string, rows [][]any) (resultSet, error) {
	rs := resultSet{columns: make([]column, len(names)), rows: make([][]any, len(rows))}
	for i, row := range rows {
		if len(row) != len(names) {
			return resultSet{}, fmt.Errorf("mssqltest: Rows: row %d has %d values for %d columns", i, len(row), len(names))
		}
		rs.rows[i] = make([]any, len(row))
		for j, v := range row {
			rs.rows[i][j] = normalise(v)
		}
	}
	for j, name := range names {
		rs.columns[j] = inferColumn(name, j, rs.rows)
	}
	return rs, nil
}

// inferColumn decides the type of column j of rows (named name) and
// converts its values to it.
func inferColumn(name string, j int, rows [][]any) column {
	c := column{name: name, typ: columnNVarChar}
	kinds := map[columnType]bool{}
	first, seen := columnNVarChar, false
	for _, row := range rows {
		if row[j] == nil {
			continue
		}
		k := kindOf(row[j])
		if !seen {
			first, seen = k, true
		}
		kinds[k] = true
	}
	c.typ = first
	switch {
	case len(kinds) <= 1:
	case onlyKinds(kinds, columnInt, columnBigInt):
		c.typ = columnBigInt
	case onlyKinds(kinds, columnReal, columnFloat):
		c.typ = columnFloat
	default:
		c.typ = columnNVarChar
	}
	for _, row := range rows {
		row[j] = convert(row[j], c.typ)
		switch v := row[j].(type) {
		case string:
			c.max = c.max || 2*len(v) > shortLenMax && len(encodeUCS2(v)) > shortLenMax
		case []byte:
			c.max = c.max || len(v) > shortLenMax
		}
	}
	return c
}

func onlyKinds(kinds map[columnType]bool, allowed ...columnType) bool {
	n := 0
	for _, a := range allowed {
		if kinds[a] {
			n++
		}
	}
	return n == len(kinds)
}

// normalise maps a Go value to one of the few types the encoder knows.
func normalise(v any) any {
	if valuer, ok := v.(driver.Valuer); ok {
		value, err := valuer.Value()
		if err != nil {
			return fmt.Sprintf("mssqltest: %v", err)
		}
		v = value
	}
	switch x := v.(type) {
	case nil, int64, bool, float64, float32, string, []byte, time.Time:
		return x
	case *time.Time:
		if x == nil {
			return nil
		}
		return *x
	}
	if n, ok := normaliseInt(v); ok {
		return n
	}
	return fmt.Sprint(v)
}

// normaliseInt maps a Go integer of another type than int64: a narrow one
// to an intValue, a wide unsigned one to int64, or its text when it does
// not fit.
func normaliseInt(v any) (any, bool) {
	switch x := v.(type) {
	case int:
		return intValue(int64(x)), true
	case int8:
		return intValue(int64(x)), true
	case int16:
		return intValue(int64(x)), true
	case int32:
		return intValue(int64(x)), true
	case uint8:
		return intValue(int64(x)), true
	case uint16:
		return intValue(int64(x)), true
	case uint32:
		return int64(x), true
	case uint:
		return unsigned(uint64(x)), true
	case uint64:
		return unsigned(x), true
	}
	return nil, false
}

// unsigned is x as an int64, or its text when it does not fit.
func unsigned(x uint64) any {
	if x > math.MaxInt64 {
		return fmt.Sprint(x)
	}
	return int64(x)
}

// intValue marks an integer that came from a narrow Go type, so its column
// can be an int rather than a bigint when every value fits.
type intValue int64

func kindOf(v any) columnType {
	switch x := v.(type) {
	case intValue:
		if int64(x) < math.MinInt32 || int64(x) > math.MaxInt32 {
			return columnBigInt
		}
		return columnInt
	case int64:
		return columnBigInt
	case bool:
		return columnBit
	case float32:
		return columnReal
	case float64:
		return columnFloat
	case time.Time:
		return columnDateTime2
	case []byte:
		return columnVarBinary
	default:
		return columnNVarChar
	}
}

// convert turns a normalised value into the Go type its column encodes.
func convert(v any, typ columnType) any {
	if v == nil {
		return nil
	}
	if iv, ok := v.(intValue); ok {
		v = int64(iv)
	}
	if x, ok := asColumn(v, typ); ok {
		return x
	}
	switch x := v.(type) {
	case string:
		return x
	case time.Time:
		return x.Format(time.RFC3339Nano)
	default:
		return fmt.Sprint(x)
	}
}

// asColumn returns v as the Go type a column of typ encodes, when it is
// one already (a float32 widens to a float column).
func asColumn(v any, typ columnType) (any, bool) {
	var ok bool
	switch typ {
	case columnInt, columnBigInt:
		_, ok = v.(int64)
	case columnReal:
		_, ok = v.(float32)
	case columnFloat:
		if f, is := v.(float32); is {
			return float64(f), true
		}
		_, ok = v.(float64)
	case columnBit:
		_, ok = v.(bool)
	case columnDateTime2:
		_, ok = v.(time.Time)
	case columnVarBinary:
		_, ok = v.([]byte)
	}
	return v, ok
}

// colMetadata appends the COLMETADATA token describing rs.
func (t *tokenWriter) colMetadata(rs resultSet) {
	t.byte(tokenColMetadata)
	t.uint16(uint16(len(rs.columns)))
	for _, c := range rs.columns {
		t.uint32(0) // UserType
		t.uint16(colFlagNullable)
		switch c.typ {
		case columnInt:
			t.byte(typeIntN)
			t.byte(4)
		case columnBigInt:
			t.byte(typeIntN)
			t.byte(8)
		case columnBit:
			t.byte(typeBitN)
			t.byte(1)
		case columnReal:
			t.byte(typeFltN)
			t.byte(4)
		case columnFloat:
			t.byte(typeFltN)
			t.byte(8)
		case columnDateTime2:
			t.byte(typeDateTime2N)
			t.byte(7) // scale
		case columnVarBinary:
			t.byte(typeBigVarBin)
			t.uint16(maxLength(c))
		default:
			t.byte(typeNVarChar)
			t.uint16(maxLength(c))
			t.buf = append(t.buf, collationLatin1[:]...)
		}
		t.bVarChar(c.name)
	}
}

func maxLength(c column) uint16 {
	if c.max {
		return plpMarker
	}
	return shortLenMax
}

// nbcRow appends one NBCROW token: a bitmap of the NULL columns, then the
// values of the others.
func (t *tokenWriter) nbcRow(rs resultSet, row []any) {
	t.byte(tokenNBCRow)
	bitmap := make([]byte, (len(rs.columns)+7)/8)
	for j, v := range row {
		if v == nil {
			bitmap[j/8] |= 1 << (j % 8)
		}
	}
	t.buf = append(t.buf, bitmap...)
	for j, v := range row {
		if v == nil {
			continue
		}
		c := rs.columns[j]
		switch c.typ {
		case columnInt:
			t.byte(4)
			t.uint32(uint32(int32(v.(int64))))
		case columnBigInt:
			t.byte(8)
			t.uint64(uint64(v.(int64)))
		case columnBit:
			t.byte(1)
			if v.(bool) {
				t.byte(1)
			} else {
				t.byte(0)
			}
		case columnReal:
			t.byte(4)
			t.uint32(math.Float32bits(v.(float32)))
		case columnFloat:
			t.byte(8)
			t.uint64(math.Float64bits(v.(float64)))
		case columnDateTime2:
			t.byte(8)
			t.dateTime2(v.(time.Time))
		case columnVarBinary:
			t.sized(c, v.([]byte))
		default:
			t.sized(c, encodeUCS2(v.(string)))
		}
	}
}

// sized appends a USHORTLEN value, or a PLP one for a max column.
func (t *tokenWriter) sized(c column, b []byte) {
	if !c.max {
		t.uint16(uint16(len(b)))
		t.buf = append(t.buf, b...)
		return
	}
	t.uint64(uint64(len(b)))
	if len(b) > 0 {
		t.uint32(uint32(len(b)))
		t.buf = append(t.buf, b...)
	}
	t.uint32(0) // PLP terminator
}

// unixSecondsAtYear1 is 0001-01-01T00:00:00Z in Unix seconds, day 0 of datetime2.
const unixSecondsAtYear1 = -62135596800

// dateTime2 appends a datetime2(7) value: 100 ns ticks since midnight in
// five bytes, then days since 0001-01-01 in three. The instant is sent in
// UTC, which is the zone the driver reads datetime2 values in by default.
func (t *tokenWriter) dateTime2(v time.Time) {
	seconds := v.Unix() - unixSecondsAtYear1
	if seconds < 0 {
		seconds, v = 0, time.Unix(unixSecondsAtYear1, 0)
	}
	days := seconds / 86400
	ticks := uint64(seconds%86400)*10_000_000 + uint64(v.Nanosecond()/100)
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], ticks)
	t.buf = append(t.buf, b[:5]...)
	t.buf = append(t.buf, byte(days), byte(days>>8), byte(days>>16))
}
