// Package typednil tells a nil interface value from one that holds a nil
// pointer, map, slice, channel or function: (*mssql.Connector)(nil) is a
// non-nil driver.Connector whose first method call panics. It is the one
// check behind every entry point that takes a user's connector or
// dialector (config.WrapConnector, gormcrl.OpenDB).
package typednil

import "reflect"

// Is reports whether v is nil or holds a nil pointer, map, slice,
// channel, function or interface.
func Is(v any) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Chan, reflect.Func, reflect.Interface, reflect.UnsafePointer:
		return rv.IsNil()
	}
	return false
}
