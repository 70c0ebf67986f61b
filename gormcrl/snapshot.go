package gormcrl

import (
	"maps"
	"reflect"

	"gorm.io/gorm"
	"gorm.io/gorm/schema"
)

// A failed attempt may have written to the value of a Create, Update or
// Delete before the server rolled its transaction back: the primary key and
// the columns read back through OUTPUT INSERTED / RETURNING, CreatedAt and
// UpdatedAt, soft-delete times, values set by hooks. A retry must start from
// the value as the caller passed it (a primary key left set by a rolled-back
// INSERT would be inserted explicitly), so the whole-unit retry takes a
// snapshot first and puts it back before each retry. A value it cannot put
// back safely is not retried at all.

// snapshot returns a function that puts the operation's value (Dest, and
// Model when it is another value) back as it is now, or false when the
// operation must not be retried: its value is of a shape this package does
// not snapshot, or GORM would save associations with it (their rows and
// keys are other values, written by nested statements).
func snapshot(stmt *gorm.Statement, op operation) (func(), bool) {
	if op != opDelete && savesAssociations(stmt, op == opCreate) {
		return nil, false
	}
	return snapshotValues(stmt)
}

// snapshotValues is snapshot without the associations: what one statement
// writes to the value, for a retry of that statement alone (the rows of
// associations are written by statements of their own).
func snapshotValues(stmt *gorm.Statement) (func(), bool) {
	var restores []func()
	for i, v := range []any{stmt.Dest, stmt.Model} {
		if v == nil || (i == 1 && sameValue(stmt.Model, stmt.Dest)) {
			continue
		}
		r, ok := snapshotValue(reflect.ValueOf(v))
		if !ok {
			return nil, false
		}
		if r != nil {
			restores = append(restores, r)
		}
	}
	return func() {
		for _, r := range restores {
			r()
		}
	}, true
}

func sameValue(a, b any) bool {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	if va.Kind() == reflect.Pointer && vb.Kind() == reflect.Pointer {
		return va.Pointer() == vb.Pointer() && va.Type() == vb.Type()
	}
	return false
}

// snapshotValue handles the shapes GORM writes to: a struct, a slice or
// array of structs or of pointers to structs, through pointers; maps of
// column names and slices of them. A value GORM cannot write to (a struct
// passed by value) needs nothing. It returns a nil restore when there is
// nothing to put back.
func snapshotValue(v reflect.Value) (func(), bool) {
	if r, isMap := snapshotMapValue(v.Interface()); isMap {
		return r, true
	}
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			if v.CanSet() { // GORM allocates it: put the nil back
				return func() { v.Set(reflect.Zero(v.Type())) }, true
			}
			return nil, true
		}
		v = v.Elem()
	}
	// The elements of a slice are addressable even when the slice value is
	// not: a slice is handled below through its backing array.
	if !v.CanAddr() && v.Kind() != reflect.Slice {
		// A struct or an array passed by value: GORM cannot write to it.
		return nil, v.Kind() == reflect.Struct || v.Kind() == reflect.Array
	}
	switch v.Kind() {
	case reflect.Struct:
		return snapshotStruct(v), true
	case reflect.Slice, reflect.Array:
		return snapshotElems(v)
	}
	return nil, false
}

// snapshotMapValue snapshots a map of column names, a slice of them, or a
// pointer to either; isMap is false for a value of another type.
func snapshotMapValue(x any) (restore func(), isMap bool) {
	switch m := x.(type) {
	case map[string]any:
		return snapshotMaps([]map[string]any{m}), true
	case []map[string]any:
		return snapshotMaps(m), true
	case *map[string]any:
		if m == nil {
			return nil, true
		}
		old := *m
		r := snapshotMaps([]map[string]any{old})
		return func() { *m = old; r() }, true
	case *[]map[string]any:
		if m == nil {
			return nil, true
		}
		old := *m
		r := snapshotMaps(old)
		return func() { *m = old; r() }, true
	}
	return nil, false
}

// snapshotElems snapshots a slice or an array of structs or of pointers to
// structs, and the slice header when it can be set (GORM may append).
func snapshotElems(v reflect.Value) (func(), bool) {
	var header reflect.Value
	if v.Kind() == reflect.Slice && v.CanSet() {
		header = reflect.New(v.Type()).Elem()
		header.Set(v)
	}
	n := v.Len()
	restores := make([]func(), 0, n)
	for i := 0; i < n; i++ {
		r, ok := snapshotElem(v.Index(i))
		if !ok {
			return nil, false
		}
		restores = append(restores, r)
	}
	return func() {
		if header.IsValid() {
			v.Set(header)
		}
		for _, r := range restores {
			r()
		}
	}, true
}

// snapshotElem snapshots one element of a slice or an array: a struct, or
// a pointer to a struct (the pointer itself and what it points to).
func snapshotElem(e reflect.Value) (func(), bool) {
	switch {
	case e.Kind() == reflect.Struct:
		return snapshotStruct(e), true
	case e.Kind() == reflect.Pointer && e.Type().Elem().Kind() == reflect.Struct:
		p := reflect.New(e.Type()).Elem()
		p.Set(e)
		if e.IsNil() {
			return func() { e.Set(p) }, true
		}
		r := snapshotStruct(e.Elem())
		return func() { e.Set(p); r() }, true
	}
	return nil, false
}

func snapshotMaps(ms []map[string]any) func() {
	olds := make([]map[string]any, len(ms))
	for i, m := range ms {
		olds[i] = maps.Clone(m)
	}
	return func() {
		for i, m := range ms {
			if m == nil {
				continue
			}
			clear(m)
			maps.Copy(m, olds[i])
		}
	}
}

// snapshotStruct copies an addressable struct, and what it reaches that
// GORM or a hook can change in place: the values its non-nil exported
// pointer fields point to (GORM writes through a *time.Time UpdatedAt or a
// pre-allocated *int64 ID instead of replacing it), the entries of its
// maps and the elements of its slices (a BeforeCreate hook that adds a
// map entry or sets a slice element), through embedded and nested structs,
// to a small depth. A retry starts from the value as the caller passed it.
func snapshotStruct(v reflect.Value) func() {
	old := reflect.New(v.Type()).Elem()
	old.Set(v)
	var nested []func()
	collectNested(v, &nested, 0)
	return func() {
		v.Set(old)
		for _, r := range nested {
			r()
		}
	}
}

// maxNesting bounds how deep collectNested follows pointers, maps and
// slices (and so a cycle through pointers).
const maxNesting = 4

// collectNested appends to out a restore of what the exported fields of
// the struct v reach: pointed-to values, map entries, slice elements.
func collectNested(v reflect.Value, out *[]func(), depth int) {
	if depth > maxNesting {
		return
	}
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		if sf := t.Field(i); sf.IsExported() || sf.Anonymous {
			collectValue(v.Field(i), out, depth)
		}
	}
}

// collectValue appends to out a restore of what f reaches, by its kind.
func collectValue(f reflect.Value, out *[]func(), depth int) {
	switch f.Kind() {
	case reflect.Struct:
		collectNested(f, out, depth+1)
	case reflect.Pointer:
		collectPointee(f, out, depth)
	case reflect.Map:
		collectMap(f, out)
	case reflect.Slice:
		collectSlice(f, out, depth)
	}
}

// collectPointee restores what the pointer f points to, and what that
// reaches.
func collectPointee(f reflect.Value, out *[]func(), depth int) {
	if f.IsNil() || !f.Elem().CanSet() {
		return
	}
	target := f.Elem()
	old := reflect.New(target.Type()).Elem()
	old.Set(target)
	*out = append(*out, func() { target.Set(old) })
	if depth < maxNesting {
		collectValue(target, out, depth+1)
	}
}

// collectMap restores the entries of the map m in place.
func collectMap(m reflect.Value, out *[]func()) {
	if m.IsNil() {
		return
	}
	old := reflect.MakeMapWithSize(m.Type(), m.Len())
	for it := m.MapRange(); it.Next(); {
		old.SetMapIndex(it.Key(), it.Value())
	}
	*out = append(*out, func() {
		m.Clear()
		for it := old.MapRange(); it.Next(); {
			m.SetMapIndex(it.Key(), it.Value())
		}
	})
}

// collectSlice restores the elements of the slice f in its backing array
// as the caller passed it, and what its struct and pointer elements reach.
func collectSlice(f reflect.Value, out *[]func(), depth int) {
	if f.IsNil() || f.Len() == 0 {
		return
	}
	s := f.Slice(0, f.Len())
	old := reflect.MakeSlice(s.Type(), s.Len(), s.Len())
	reflect.Copy(old, s)
	*out = append(*out, func() { reflect.Copy(s, old) })
	if depth >= maxNesting {
		return
	}
	for i := 0; i < s.Len(); i++ {
		if e := s.Index(i); e.Kind() == reflect.Struct || e.Kind() == reflect.Pointer {
			collectValue(e, out, depth+1)
		}
	}
}

// savesAssociations reports whether GORM's association callbacks would
// write associated rows for this Create or Update: the schema has a
// relationship that the statement's Select/Omit does not leave out and
// whose field holds a value (GORM skips zero ones), or a map value names
// one. Delete only removes associations named by Select, and writes to no
// value, so it is never in the way.
func savesAssociations(stmt *gorm.Statement, isCreate bool) bool {
	sch := stmt.Schema
	if sch == nil || !hasRelations(sch) {
		return false
	}
	selected, restricted := stmt.SelectAndOmitColumns(isCreate, !isCreate)
	for _, rels := range [][]*schema.Relationship{sch.Relationships.BelongsTo, sch.Relationships.HasOne,
		sch.Relationships.HasMany, sch.Relationships.Many2Many} {
		for _, rel := range rels {
			if v, ok := selected[rel.Name]; (ok && !v) || (!ok && restricted) {
				continue
			}
			for _, value := range []any{stmt.Dest, stmt.Model} {
				if holdsRelation(stmt, rel, value) {
					return true
				}
			}
		}
	}
	return false
}

func hasRelations(sch *schema.Schema) bool {
	r := &sch.Relationships
	return len(r.BelongsTo)+len(r.HasOne)+len(r.HasMany)+len(r.Many2Many) > 0
}

// holdsRelation reports whether value (a struct, a slice of them, a map)
// holds a non-zero value for rel.
func holdsRelation(stmt *gorm.Statement, rel *schema.Relationship, value any) bool {
	switch m := value.(type) {
	case nil:
		return false
	case map[string]any:
		_, ok := m[rel.Name]
		return ok
	case []map[string]any:
		for _, e := range m {
			if _, ok := e[rel.Name]; ok {
				return true
			}
		}
		return false
	}
	v := reflect.Indirect(reflect.ValueOf(value))
	for v.Kind() == reflect.Pointer && !v.IsNil() {
		v = v.Elem()
	}
	model := stmt.Schema.ModelType
	nonZero := func(e reflect.Value) bool {
		e = reflect.Indirect(e)
		if !e.IsValid() || e.Type() != model {
			return false
		}
		_, zero := rel.Field.ValueOf(stmt.Context, e)
		return !zero
	}
	switch v.Kind() {
	case reflect.Struct:
		return nonZero(v)
	case reflect.Slice, reflect.Array:
		for i := 0; i < v.Len(); i++ {
			if nonZero(v.Index(i)) {
				return true
			}
		}
	}
	return false
}
