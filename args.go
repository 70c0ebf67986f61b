package crl

import (
	"database/sql/driver"
	"time"
)

// knownValue converts the value of an argument that the driver leaves to
// database/sql (its NamedValueChecker answered driver.ErrSkip, or it has
// none) as database/sql's default converter
// (driver.DefaultParameterConverter) would, for the built-in types whose
// result that converter fixes without methods or reflection: the types
// driver.IsValue accepts stay as they are (nil, int64, float64, bool,
// []byte, string, time.Time), a signed integer becomes its int64, a
// float32 its float64. Any other type, named types of those kinds
// included (they may have a Value method), is answered driver.ErrSkip,
// and database/sql converts it as before. Same result, without the
// converter's type assertions and reflection: on a driver that converts
// nothing itself (lib/pq, the benchmarks' in-memory driver) the layer's
// check costs a statement less than database/sql's default does.
func knownValue(nv *driver.NamedValue) error {
	// The commonest arguments first, each a compare of the type word
	// (a type switch of many cases searches by the types' hashes).
	if v, ok := nv.Value.(int); ok {
		nv.Value = int64(v)
		return nil
	}
	switch v := nv.Value.(type) {
	case nil, int64, string, float64, bool, []byte, time.Time:
	case int32:
		nv.Value = int64(v)
	case int16:
		nv.Value = int64(v)
	case int8:
		nv.Value = int64(v)
	case float32:
		nv.Value = float64(v)
	default:
		return driver.ErrSkip
	}
	return nil
}
