package gormcrl

import (
	"reflect"
	"testing"
	"time"
)

type snapItem struct {
	ID        int64
	Name      string
	UpdatedAt *time.Time
	Base
}

type Base struct{ Version int }

func TestSnapshotValueRestores(t *testing.T) {
	t0 := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	mutate := func(it *snapItem) {
		it.ID = 99
		it.Name = "changed"
		it.Version = 5
		if it.UpdatedAt != nil {
			*it.UpdatedAt = time.Now() // GORM writes through a non-nil pointer
		} else {
			now := time.Now()
			it.UpdatedAt = &now
		}
	}
	t.Run("struct pointer", func(t *testing.T) {
		at := t0
		it := &snapItem{Name: "a", UpdatedAt: &at}
		want := *it
		restore, ok := snapshotValue(reflect.ValueOf(it))
		if !ok {
			t.Fatal("not restorable")
		}
		mutate(it)
		restore()
		if it.ID != 0 || it.Name != "a" || it.Version != 0 || it.UpdatedAt != want.UpdatedAt || !at.Equal(t0) {
			t.Fatalf("got %+v (UpdatedAt %v)", it, at)
		}
	})
	t.Run("slices of structs", func(t *testing.T) {
		for _, byPointer := range []bool{false, true} {
			vals := []snapItem{{Name: "a"}, {Name: "b"}}
			var v any = vals
			if byPointer {
				v = &vals
			}
			restore, ok := snapshotValue(reflect.ValueOf(v))
			if !ok {
				t.Fatalf("%T not restorable", v)
			}
			mutate(&vals[0])
			restore()
			if vals[0].ID != 0 || vals[0].UpdatedAt != nil || vals[0].Name != "a" {
				t.Fatalf("%T: got %+v", v, vals[0])
			}
		}
	})
	t.Run("slices of pointers", func(t *testing.T) {
		for _, byPointer := range []bool{false, true} {
			first := &snapItem{Name: "c"}
			ptrs := []*snapItem{first, nil}
			var v any = ptrs
			if byPointer {
				v = &ptrs
			}
			restore, ok := snapshotValue(reflect.ValueOf(v))
			if !ok {
				t.Fatalf("%T not restorable", v)
			}
			mutate(ptrs[0])
			ptrs[1] = &snapItem{ID: 1}
			restore()
			if ptrs[0] != first || first.ID != 0 || first.Name != "c" || ptrs[1] != nil {
				t.Fatalf("%T: got %+v, %+v", v, ptrs[0], ptrs[1])
			}
		}
	})
	t.Run("maps", func(t *testing.T) {
		m := map[string]any{"name": "a"}
		restore, ok := snapshotValue(reflect.ValueOf(m))
		if !ok {
			t.Fatal("not restorable")
		}
		m["id"] = int64(7)
		m["name"] = "b"
		restore()
		if !reflect.DeepEqual(m, map[string]any{"name": "a"}) {
			t.Fatalf("got %v", m)
		}
	})
	t.Run("nil pointer GORM allocates", func(t *testing.T) {
		var it *snapItem
		restore, ok := snapshotValue(reflect.ValueOf(&it))
		if !ok {
			t.Fatal("not restorable")
		}
		it = &snapItem{ID: 7}
		restore()
		if it != nil {
			t.Fatalf("got %+v, want nil", it)
		}
	})
	t.Run("by value", func(t *testing.T) {
		if r, ok := snapshotValue(reflect.ValueOf(snapItem{})); !ok || r != nil {
			t.Fatal("a struct passed by value needs nothing")
		}
	})
	t.Run("unknown shapes", func(t *testing.T) {
		n := 3
		for _, v := range []any{&n, []int{1}, map[int]string{}} {
			if _, ok := snapshotValue(reflect.ValueOf(v)); ok {
				t.Fatalf("%T: restorable, want not", v)
			}
		}
	})
}
