package gormcrl_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/crl-go/crl/conformance"
	"github.com/crl-go/crl/gormcrl"
)

type returningItem struct {
	ID   int64 `gorm:"primaryKey"`
	Name string
}

// GORM's Create on MariaDB ≥ 10.5 is INSERT … RETURNING, whose error (here a
// lock wait time-out, 1205) arrives while the rows are read, not from the
// query call. It is the statement that failed: a rule whose filter names
// insert retries the Create. Before, the failure was not recorded, the
// filter saw "", and the Create failed at once.
func TestRealReturningErrorRecorded(t *testing.T) {
	d := conformance.DatabaseNamed(t, "mariadb")
	db, err := openGorm(d.Driver, d.With("innodb_lock_wait_timeout=1"), gormcrl.WithRetryExec("{1205,1213:3,0:insert,update}"))
	require.NoError(t, err)
	table := conformance.Table("crl_returning")
	tdb := func() *gorm.DB { return db.Table(table) }
	require.NoError(t, tdb().Migrator().CreateTable(&returningItem{}))
	defer func() { _ = tdb().Migrator().DropTable(table) }()
	sqlDB, err := db.DB()
	require.NoError(t, err)
	var version string
	require.NoError(t, sqlDB.QueryRow("SELECT VERSION()").Scan(&version))

	// Another transaction holds the key: the INSERT waits and times out.
	// It lets go after the first attempt's time-out.
	released := conformance.Hold(t, sqlDB, "INSERT INTO "+table+" (id, name) VALUES (1, 'holder')", 1500*time.Millisecond)

	start := time.Now()
	// Two rows: the first is inserted and returned, then the second waits
	// for the lock; the error follows a row that was already sent.
	items := []returningItem{{ID: 2, Name: "mine"}, {ID: 1, Name: "mine"}}
	err = tdb().Create(&items).Error
	require.NoError(t, <-released)
	require.NoError(t, err, "MariaDB %s", version)
	assert.Greater(t, time.Since(start), time.Second, "the first attempt did not wait for the lock")

	var names []string
	require.NoError(t, tdb().Order("id").Pluck("name", &names).Error)
	assert.Equal(t, []string{"mine", "mine"}, names)
}
