package gormcrl_test

import (
	"database/sql"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/crl-go/crl/mssqltest"
)

// FoundOrder is an Order whose AfterFind hook runs a statement of its own
// on a Session made from the hook's *gorm.DB: it inherits the statement
// loop of the query still running.
type FoundOrder struct {
	ID   int64
	Name string
}

func (FoundOrder) TableName() string { return "orders" }

func (o *FoundOrder) AfterFind(tx *gorm.DB) error {
	return tx.Session(&gorm.Session{}).Exec(audit).Error
}

// TestStatementPoolTakenOffAfterEachStatement shows that the statement
// loop a query runs under (one pool shared by the DB's statements) is on
// every statement while it runs, nested ones included, and off the
// statement afterwards, so that a *gorm.DB reused later sees its own pool.
func TestStatementPoolTakenOffAfterEachStatement(t *testing.T) {
	s := mssqltest.NewServer(t)
	db, clock := open(t, s, nil)
	s.Handle(selectFirst, mssqltest.Error(1205), orderRow(7, "pen"))
	s.Handle(audit, mssqltest.Error(1205), mssqltest.Affected(1))

	sess := db.Session(&gorm.Session{})
	for i := 1; i <= 2; i++ {
		var o FoundOrder
		res := sess.First(&o, 7)
		require.NoError(t, res.Error)
		assert.Equal(t, FoundOrder{ID: 7, Name: "pen"}, o)
		_, isDB := res.Statement.ConnPool.(*sql.DB)
		assert.True(t, isDB, "run %d: the statement's pool afterwards is %T, want the *sql.DB", i, res.Statement.ConnPool)
		_, isDB = sess.Statement.ConnPool.(*sql.DB)
		assert.True(t, isDB, "run %d: the session's pool is %T", i, sess.Statement.ConnPool)
	}
	// The first run of each statement failed with 1205 and was retried:
	// the query and the hook's statement, in both runs (the last reply
	// repeats, so the second run succeeds at once).
	assert.Equal(t, 3, s.Count(selectFirst), "query executions")
	assert.Equal(t, 3, s.Count(audit), "hook statement executions")
	wantSleeps(t, clock, 10*time.Millisecond, 10*time.Millisecond)
}
