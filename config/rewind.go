package config

import "reflect"

// Rewind is where a read into a slice began: Get and Select (sqlxcrl) and
// GORM's Find append the rows they scan to the slice their destination
// points to, so before a retry of a read whose rows failed part-way the
// rows of the failed attempt must go. The zero value, and the Rewind of a
// destination that is not a pointer to a slice, do nothing.
type Rewind struct {
	slice reflect.Value
	n     int
}

// RewindOf notes the length of the slice dest points to.
func RewindOf(dest any) Rewind {
	v := reflect.ValueOf(dest)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Slice {
		return Rewind{}
	}
	return Rewind{slice: v.Elem(), n: v.Elem().Len()}
}

// Reset cuts the slice back to the length RewindOf noted.
func (r Rewind) Reset() {
	if r.slice.IsValid() {
		r.slice.SetLen(r.n)
	}
}
