package gormcrl

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
		restore := restorable(t, it)
		mutate(it)
		restore()
		assert.Zero(t, it.ID, "ID")
		assert.Equal(t, "a", it.Name, "Name")
		assert.Zero(t, it.Version, "Version")
		assert.Same(t, want.UpdatedAt, it.UpdatedAt, "UpdatedAt is the caller's pointer")
		assert.True(t, at.Equal(t0), "the time UpdatedAt points at is put back: %v", at)
	})
	t.Run("slices of structs", func(t *testing.T) {
		for _, byPointer := range []bool{false, true} {
			vals := []snapItem{{Name: "a"}, {Name: "b"}}
			var v any = vals
			if byPointer {
				v = &vals
			}
			restore := restorable(t, v)
			mutate(&vals[0])
			restore()
			assert.Zero(t, vals[0].ID, "%T: ID", v)
			assert.Nil(t, vals[0].UpdatedAt, "%T: UpdatedAt", v)
			assert.Equal(t, "a", vals[0].Name, "%T: Name", v)
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
			restore := restorable(t, v)
			mutate(ptrs[0])
			ptrs[1] = &snapItem{ID: 1}
			restore()
			assert.Same(t, first, ptrs[0], "%T: the first pointer", v)
			assert.Zero(t, first.ID, "%T: ID", v)
			assert.Equal(t, "c", first.Name, "%T: Name", v)
			assert.Nil(t, ptrs[1], "%T: the nil pointer", v)
		}
	})
	t.Run("maps", func(t *testing.T) {
		m := map[string]any{"name": "a"}
		restore := restorable(t, m)
		m["id"] = int64(7)
		m["name"] = "b"
		restore()
		assert.Equal(t, map[string]any{"name": "a"}, m)
	})
	t.Run("by value", func(t *testing.T) {
		r, ok := snapshotValue(nil, snapItem{})
		assert.True(t, ok, "a struct passed by value is restorable")
		assert.Empty(t, r, "a struct passed by value needs nothing")
	})
	t.Run("not put back simply", func(t *testing.T) {
		n := 3
		var nilItem *snapItem
		for _, v := range []any{&n, []int{1}, map[int]string{}, &nilItem, &tagged{Tags: map[string]string{"a": "b"}}, &tagged{Notes: []string{"a"}}} {
			_, ok := snapshotValue(nil, v)
			assert.False(t, ok, "%T is not restorable", v)
		}
		_, ok := snapshotValue(nil, &tagged{Tags: map[string]string{}})
		assert.False(t, ok, "an empty map a hook may fill is not restorable")
		_, ok = snapshotValue(nil, &tagged{Notes: []string{}, Blob: []byte("x")})
		assert.True(t, ok, "an empty slice and bytes are restorable")
	})
}

// tagged has fields a hook may change in place.
type tagged struct {
	Tags  map[string]string
	Notes []string
	Blob  []byte
}

// restorable returns the restore of v, which must be restorable.
func restorable(t *testing.T, v any) func() {
	t.Helper()
	rs, ok := snapshotValue(nil, v)
	require.True(t, ok, "%T restorable", v)
	return func() {
		for _, r := range rs {
			r()
		}
	}
}
