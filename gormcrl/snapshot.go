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
// UpdatedAt, soft-delete times, values set by hooks. A re-run must start
// from the value as the caller passed it (a primary key left set by a
// rolled-back INSERT would be inserted explicitly), so the unit takes a
// snapshot first and puts it back before each re-run. A value it cannot
// put back simply is not re-run at all.

// snapshot returns a function that puts the operation's value (Dest, and
// Model when it is another value) back as it is now, or false when the
// operation must not be re-run: GORM would save associations with it
// (their rows and keys are other values, written by nested statements),
// or the value is of a shape this package does not put back.
//
// Put back: a struct (through a pointer) and what its non-nil pointer
// fields point to (GORM writes through a pre-allocated *int64 ID or a
// *time.Time UpdatedAt), in the struct, in those it holds by value and in
// those its pointers reach, to maxPointers deep; a slice or array of such
// structs or of pointers to them, and the slice itself; a map[string]any
// or []map[string]any of column names. A struct passed by value needs
// nothing (GORM cannot write to it). Not re-run: a struct that reaches,
// outside its associations, a non-nil map or a non-empty slice other than
// bytes (a hook may change them in place) or a pointer deeper than that,
// and any other shape.
func snapshot(stmt *gorm.Statement, op operation) (func(), bool) {
	if op != opDelete && savesAssociations(stmt, op == opCreate) {
		return nil, false
	}
	var restores []func()
	for i, v := range []any{stmt.Dest, stmt.Model} {
		if v == nil || i == 1 && reflect.ValueOf(v).Kind() == reflect.Pointer && v == stmt.Dest {
			continue
		}
		r, ok := snapshotValue(stmt.Schema, v)
		if !ok {
			return nil, false
		}
		restores = append(restores, r...)
	}
	return func() {
		for _, r := range restores {
			r()
		}
	}, true
}

// snapshotValue returns the restores of one value (see snapshot).
func snapshotValue(sch *schema.Schema, x any) ([]func(), bool) {
	switch m := x.(type) {
	case map[string]any:
		return snapshotMaps([]map[string]any{m}), true
	case []map[string]any:
		return snapshotMaps(m), true
	}
	v := reflect.ValueOf(x)
	switch {
	case v.Kind() == reflect.Pointer && !v.IsNil():
		v = v.Elem()
	case v.Kind() != reflect.Slice: // a slice's elements are addressable
		return nil, v.Kind() == reflect.Struct || v.Kind() == reflect.Array
	}
	var out []func()
	ok := false
	switch v.Kind() {
	case reflect.Struct:
		ok = snapshotStruct(sch, v, &out)
	case reflect.Slice, reflect.Array:
		ok = snapshotElems(sch, v, &out)
	}
	return out, ok
}

// snapshotElems snapshots a slice or an array of structs or of pointers
// to structs, and the slice header when it can be set (GORM may append).
func snapshotElems(sch *schema.Schema, v reflect.Value, out *[]func()) bool {
	if v.Kind() == reflect.Slice && v.CanSet() {
		saveValue(v, out)
	}
	for i := 0; i < v.Len(); i++ {
		e := v.Index(i)
		if e.Kind() == reflect.Pointer {
			saveValue(e, out)
			if e.IsNil() {
				continue
			}
			e = e.Elem()
		}
		if e.Kind() != reflect.Struct || !snapshotStruct(sch, e, out) {
			return false
		}
	}
	return true
}

// snapshotStruct snapshots the addressable struct v and what its fields
// reach (see reaches).
func snapshotStruct(sch *schema.Schema, v reflect.Value, out *[]func()) bool {
	saveValue(v, out)
	return fieldsReach(sch, v, out, 0)
}

// maxPointers is how many pointers deep a value is put back; a value that
// reaches deeper (a cycle included) is not re-run.
const maxPointers = 3

// fieldsReach is reaches for each exported field of the struct v (and
// each struct it embeds), but the associations of the model (depth 0).
func fieldsReach(sch *schema.Schema, v reflect.Value, out *[]func(), depth int) bool {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		if !sf.IsExported() && !sf.Anonymous || depth == 0 && sch != nil && sch.Relationships.Relations[sf.Name] != nil {
			continue
		}
		if !reaches(sch, v.Field(i), out, depth) {
			return false
		}
	}
	return true
}

// reaches snapshots what f, held by a value being put back, reaches: a
// struct's fields, what a non-nil pointer points to (GORM writes through
// it), depth pointers deep so far. False for a non-nil map or a non-empty
// slice other than bytes, which a hook may change in place, and for a
// pointer deeper than maxPointers.
func reaches(sch *schema.Schema, f reflect.Value, out *[]func(), depth int) bool {
	switch f.Kind() {
	case reflect.Struct:
		return fieldsReach(sch, f, out, depth)
	case reflect.Pointer:
		if f.IsNil() || !f.Elem().CanSet() {
			return true
		}
		saveValue(f.Elem(), out)
		return depth < maxPointers && reaches(sch, f.Elem(), out, depth+1)
	case reflect.Map:
		return f.IsNil()
	case reflect.Slice:
		return f.Len() == 0 || f.Type().Elem().Kind() == reflect.Uint8
	}
	return true
}

// saveValue appends to out a restore of the settable v as it is now.
func saveValue(v reflect.Value, out *[]func()) {
	old := reflect.New(v.Type()).Elem()
	old.Set(v)
	*out = append(*out, func() { v.Set(old) })
}

func snapshotMaps(ms []map[string]any) []func() {
	out := make([]func(), 0, len(ms))
	for _, m := range ms {
		old := maps.Clone(m)
		out = append(out, func() {
			clear(m)
			maps.Copy(m, old)
		})
	}
	return out
}

// savesAssociations reports whether GORM's association callbacks would
// write associated rows for this Create or Update: the schema has a
// relationship that the statement's Select/Omit does not leave out and
// whose field holds a value (GORM skips zero ones), or a map value names
// one. Delete only removes associations named by Select, and writes to no
// value, so it is never in the way.
func savesAssociations(stmt *gorm.Statement, isCreate bool) bool {
	sch := stmt.Schema
	if sch == nil || len(sch.Relationships.Relations) == 0 {
		return false
	}
	r := &sch.Relationships
	selected, restricted := stmt.SelectAndOmitColumns(isCreate, !isCreate)
	for _, rels := range [][]*schema.Relationship{r.BelongsTo, r.HasOne, r.HasMany, r.Many2Many} {
		for _, rel := range rels {
			if v, ok := selected[rel.Name]; (ok && !v) || (!ok && restricted) {
				continue
			}
			if holdsRelation(stmt, rel, stmt.Dest) || holdsRelation(stmt, rel, stmt.Model) {
				return true
			}
		}
	}
	return false
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
	nonZero := func(e reflect.Value) bool {
		for e.Kind() == reflect.Pointer && !e.IsNil() {
			e = e.Elem()
		}
		if e.Type() != stmt.Schema.ModelType {
			return false
		}
		_, zero := rel.Field.ValueOf(stmt.Context, e)
		return !zero
	}
	v := reflect.ValueOf(value)
	for v.Kind() == reflect.Pointer && !v.IsNil() {
		v = v.Elem()
	}
	if v.Kind() == reflect.Slice || v.Kind() == reflect.Array {
		for i := 0; i < v.Len(); i++ {
			if nonZero(v.Index(i)) {
				return true
			}
		}
		return false
	}
	return nonZero(v)
}
