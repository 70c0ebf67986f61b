package gormcrl_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/crl-go/crl/mssqltest"
)

// Tagged has fields that a hook changes in place: a map, a slice, and a
// struct behind a pointer that holds a map.
type Tagged struct {
	ID    int64
	Name  string
	Tags  map[string]string `gorm:"serializer:json"`
	Notes []string          `gorm:"serializer:json"`
	Meta  *TagMeta          `gorm:"serializer:json"`
}

// TagMeta is what Tagged.Meta points to.
type TagMeta struct {
	Labels map[string]int
}

// BeforeCreate adds an entry to each map and changes the slice's first
// element: run again on the value as it was left, it would add more.
func (t *Tagged) BeforeCreate(*gorm.DB) error {
	t.Tags[fmt.Sprint(len(t.Tags))] = "hook"
	t.Notes[0] += "!"
	t.Meta.Labels[fmt.Sprint(len(t.Meta.Labels))] = 1
	return nil
}

// A unit retried after a deadlock starts from the value as the caller
// passed it: a hook's writes into maps, slices and pointed-to structs of
// the failed attempt are gone (issue 28, item 6).
func TestRetryStartsFromTheValueAsPassed(t *testing.T) {
	s := mssqltest.NewServer(t)
	db, _ := open(t, s, nil)
	const insertTagged = `INSERT INTO "taggeds" ("name","tags","notes","meta") OUTPUT INSERTED."id" VALUES (@p1,@p2,@p3,@p4);`
	s.Handle(insertTagged, mssqltest.Error(1205), idRow(1))
	v := &Tagged{Name: "pen", Tags: map[string]string{}, Notes: []string{"a"}, Meta: &TagMeta{Labels: map[string]int{}}}
	require.NoError(t, db.Create(v).Error, "statements: %q", s.Statements())
	assert.Equal(t, 2, s.Count(insertTagged), "retried once")
	assert.Equal(t, map[string]string{"0": "hook"}, v.Tags)
	assert.Equal(t, []string{"a!"}, v.Notes)
	assert.Equal(t, map[string]int{"0": 1}, v.Meta.Labels)
	assert.Equal(t, int64(1), v.ID)
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
