package gormcrl

import (
	"reflect"

	"gorm.io/gorm"
)

// resultErrorField is where the Error field of the result that GORM's
// generics API (gorm.G) reads is: the index of Statement.Result and that
// of its Error, or nil when this GORM has none (before v1.31.2). It is
// found once by reflection and never changed, so that gormcrl compiles and
// works with every GORM from v1.30.0 on and does not raise its users' GORM
// version for a field their version may lack.
var resultField, resultErrorField = func() ([]int, []int) {
	f, ok := reflect.TypeFor[gorm.Statement]().FieldByName("Result")
	if !ok || f.Type.Kind() != reflect.Pointer || f.Type.Elem().Kind() != reflect.Struct {
		return nil, nil
	}
	e, ok := f.Type.Elem().FieldByName("Error")
	if !ok || !e.IsExported() || e.Type != reflect.TypeFor[error]() {
		return nil, nil
	}
	return f.Index, e.Index
}()

// setResultError sets the error the generics API reports for stmt to err,
// as GORM's own callbacks do, when stmt has a Result with such a field.
func setResultError(stmt *gorm.Statement, err error) {
	if resultErrorField == nil || stmt == nil {
		return
	}
	r := reflect.ValueOf(stmt).Elem().FieldByIndex(resultField)
	if r.IsNil() {
		return
	}
	f := r.Elem().FieldByIndex(resultErrorField)
	if err == nil {
		f.SetZero()
		return
	}
	f.Set(reflect.ValueOf(err))
}
