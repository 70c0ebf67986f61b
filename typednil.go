package crl

import "reflect"

// isNil reports whether v is nil or holds a nil pointer, map, slice,
// channel, function or interface: (*mssql.Connector)(nil) is a non-nil
// driver.Connector whose first method call panics. WrapConnector checks
// the user's connector with it.
func isNil(v any) bool {
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
