package crl

import (
	"database/sql/driver"
	"encoding/json"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

type (
	namedInt    int
	namedString string
	valuerInt   int
)

func (v valuerInt) Value() (driver.Value, error) { return fmt.Sprint("valuer:", int(v)), nil }

// knownArgs are values of every type knownValue converts, at their
// limits; otherArgs values of other types, of the same kinds among them,
// that it leaves to database/sql.
var (
	knownArgs = []any{
		nil, int64(math.MinInt64), int64(math.MaxInt64), "s", "", 2.5, math.Inf(-1), true, false,
		[]byte("b"), []byte(nil), time.Date(2026, 12, 7, 21, 30, 0, 5, time.UTC),
		math.MinInt, math.MaxInt, int32(math.MinInt32), int16(math.MaxInt16), int8(math.MinInt8),
		float32(1.5), float32(math.MaxFloat32), float32(math.SmallestNonzeroFloat32),
	}
	otherArgs = []any{
		uint(7), uint8(8), uint16(16), uint32(32), uint64(64), namedInt(9), namedString("n"),
		valuerInt(10), json.RawMessage(`{}`), new(int), (*int)(nil),
	}
)

// knownValue gives the value and the type database/sql's default
// converter gives, for every type it converts; any other type it answers
// driver.ErrSkip and leaves as it is (database/sql converts it).
func TestKnownValueConvertsAsDatabaseSQL(t *testing.T) {
	for _, v := range knownArgs {
		want, err := driver.DefaultParameterConverter.ConvertValue(v)
		assert.NoError(t, err)
		nv := driver.NamedValue{Ordinal: 1, Value: v}
		assert.NoError(t, knownValue(&nv), "%T", v)
		assert.Equal(t, want, nv.Value, "%T(%v)", v, v)
		assert.Equal(t, fmt.Sprintf("%T", want), fmt.Sprintf("%T", nv.Value), "%T(%v)", v, v)
	}
	for _, v := range append(otherArgs, uint64(1)<<63, [2]byte{1, 2}) {
		nv := driver.NamedValue{Ordinal: 1, Value: v}
		assert.ErrorIs(t, knownValue(&nv), driver.ErrSkip, "%T", v)
		assert.Equal(t, v, nv.Value, "%T: left as it was", v)
	}
}
