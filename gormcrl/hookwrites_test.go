package gormcrl_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/crl-go/crl/mssqltest"
)

// Tagged has fields that a hook changes in place: a map and a slice, and
// a pointer GORM or a hook may write through.
type Tagged struct {
	ID    int64
	Name  string
	Tags  map[string]string `gorm:"serializer:json"`
	Notes []string          `gorm:"serializer:json"`
	Meta  *TagMeta          `gorm:"serializer:json"`
}

// TagMeta is what Tagged.Meta points to.
type TagMeta struct{ Version int }

// BeforeCreate adds an entry to the map, changes the slice's first
// element and bumps Meta's version: run again on the value as it was
// left, it would do more.
func (t *Tagged) BeforeCreate(*gorm.DB) error {
	if t.Tags != nil {
		t.Tags[fmt.Sprint(len(t.Tags))] = "hook"
	}
	if len(t.Notes) > 0 {
		t.Notes[0] += "!"
	}
	t.Meta.Version++
	return nil
}

// A unit re-run after a deadlock starts from the value as the caller
// passed it: what the failed attempt wrote through its pointer is put
// back. A value that holds a map or a non-empty slice, which a hook may
// change in place, is not put back simply: its unit runs once, and the
// deadlock is returned.
func TestRetryStartsFromTheValueAsPassed(t *testing.T) {
	s := mssqltest.NewServer(t)
	db, _ := open(t, s, nil)
	const insertTagged = `INSERT INTO "taggeds" ("name","tags","notes","meta") OUTPUT INSERTED."id" VALUES (@p1,@p2,@p3,@p4);`
	s.Handle(insertTagged, mssqltest.Error(1205), idRow(1))
	v := &Tagged{Name: "pen", Meta: &TagMeta{}}
	require.NoError(t, db.Create(v).Error, "statements: %q", s.Statements())
	assert.Equal(t, 2, s.Count(insertTagged), "re-run once")
	assert.Equal(t, 1, v.Meta.Version, "the version the failed attempt bumped was put back")
	assert.Equal(t, int64(1), v.ID)

	for _, v := range []*Tagged{
		{Name: "map", Tags: map[string]string{}, Meta: &TagMeta{}},
		{Name: "slice", Notes: []string{"a"}, Meta: &TagMeta{}},
	} {
		s.Handle(insertTagged, mssqltest.Error(1205), idRow(2))
		before := s.Count(insertTagged)
		requireDeadlock(t, db.Create(v).Error, v.Name)
		assert.Equal(t, before+1, s.Count(insertTagged), "%s: not re-run", v.Name)
	}
}

// A Save with associations that loses a deadlock is not retried (its
// associated values cannot be put back), and its error unwraps to the
// deadlock 1205 first, though go-mssqldb v1.8's answer to GORM's ROLLBACK
// of the victim's transaction, 3903, is the error GORM wraps (issue 28,
// item 8; the root module requires go-mssqldb v1.8.2).
func TestSaveWithAssociationsKeepsTheDeadlocksNumber(t *testing.T) {
	s := mssqltest.NewServer(t)
	db, _ := open(t, s, nil)
	const updateInvoice = `UPDATE "invoices" SET "number"=@p1 WHERE "id" = @p2`
	s.Handle(updateInvoice, mssqltest.Error(1205))
	inv := Invoice{ID: 5, Number: "A-1", Lines: []Line{{ID: 1, InvoiceID: 5, Item: "pen"}}}
	err := db.Save(&inv).Error
	requireDeadlock(t, err, "statements: %q", s.Statements())
	assert.Equal(t, 1, s.Count(updateInvoice), "not retried")
	assert.Contains(t, err.Error(), "deadlock victim", "GORM's message")
}
