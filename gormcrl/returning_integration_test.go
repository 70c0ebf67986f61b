package gormcrl_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/driver/mysql"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

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
	dsn := os.Getenv("CRL_MYSQL_DSN")
	if dsn == "" {
		t.Skip("CRL_MYSQL_DSN is not set")
	}
	db, err := gorm.Open(gormcrl.Open(mysql.Open(dsn+"&innodb_lock_wait_timeout=1"),
		gormcrl.WithRetryExec("{1205,1213:3,0:insert,update}")), &gorm.Config{Logger: logger.Discard})
	require.NoError(t, err)
	table := fmt.Sprintf("crl_returning_%d", time.Now().UnixNano()%1e9)
	tdb := func() *gorm.DB { return db.Table(table) }
	require.NoError(t, tdb().Migrator().CreateTable(&returningItem{}))
	defer func() { _ = tdb().Migrator().DropTable(table) }()
	sqlDB, err := db.DB()
	require.NoError(t, err)
	var version string
	require.NoError(t, sqlDB.QueryRow("SELECT VERSION()").Scan(&version))

	// Another transaction holds the key: the INSERT waits and times out.
	ctx := context.Background()
	holder, err := sqlDB.BeginTx(ctx, nil)
	require.NoError(t, err)
	_, err = holder.ExecContext(ctx, "INSERT INTO "+table+" (id, name) VALUES (1, 'holder')")
	require.NoError(t, err)
	released := make(chan error, 1)
	go func() {
		time.Sleep(1500 * time.Millisecond) // after the first attempt's time-out
		released <- holder.Rollback()
	}()

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
