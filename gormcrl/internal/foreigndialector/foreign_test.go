// Package foreigndialector_test shows gormcrl.Open on a dialector this
// project has never seen and does not import: the pure-Go SQLite dialector
// github.com/glebarez/sqlite. It is a module of its own (with a replace of
// crl), so that crl's go.mod, and so every user's module graph, requires no
// SQLite; .ci/run vets and tests it.
package foreigndialector_test

import (
	"database/sql/driver"
	"path/filepath"
	"testing"
	"time"

	"github.com/glebarez/sqlite"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/core/coretest"
	"github.com/crl-go/crl/gormcrl"
)

type item struct {
	ID   int64
	Name string
}

func TestSQLiteDialector(t *testing.T) {
	clock := coretest.NewClock(time.Time{})
	dsn := filepath.Join(t.TempDir(), "crl.db")
	d := sqlite.Open(dsn)
	db, err := gorm.Open(gormcrl.Open(d, config.WithClock(clock), gormcrl.WithRetryExec("{badconn:2,10ms}")),
		&gorm.Config{Logger: logger.Discard})
	require.NoError(t, err)

	// db.Dialector is still SQLite's own, with the retrying pool as its Conn.
	sd, ok := db.Dialector.(*sqlite.Dialector)
	require.True(t, ok, "db.Dialector is %T", db.Dialector)
	require.NotNil(t, sd.Conn, "Conn is the retrying pool")
	assert.Nil(t, d.(*sqlite.Dialector).Conn, "the caller's dialector is unchanged")
	_, registered := db.Plugins[gormcrl.PluginName]
	assert.True(t, registered, "the plugin is registered")

	require.NoError(t, db.AutoMigrate(&item{}))
	require.NoError(t, db.Create(&item{Name: "pen"}).Error)
	var got item
	require.NoError(t, db.First(&got).Error)
	assert.Equal(t, "pen", got.Name)

	// The plugin's whole-transaction retry runs on SQLite: a closure whose
	// first attempt fails with a broken connection runs again.
	calls := 0
	err = gormcrl.Transaction(db, func(tx *gorm.DB) error {
		calls++
		if calls == 1 {
			return driver.ErrBadConn
		}
		return tx.Create(&item{Name: "ink"}).Error
	})
	require.NoError(t, err)
	assert.Equal(t, 2, calls, "the transaction ran twice")
	assert.Equal(t, []time.Duration{10 * time.Millisecond}, clock.Sleeps(), "one wait of the rule")
	var n int64
	require.NoError(t, db.Model(&item{}).Count(&n).Error)
	assert.Equal(t, int64(2), n, "no write lost or doubled")

	// A DSN that carries a retry setting that SQLite's DSN form cannot
	// hold is an error, not passed on.
	_, err = gorm.Open(gormcrl.Open(sqlite.Open(dsn+"?retryExec={1205:3,1}")), &gorm.Config{Logger: logger.Discard})
	assert.ErrorContains(t, err, "retryExec")
}

// A GORM library whose own tests run on SQLite, over the dialector's own
// pool (crl did not open it): gormcrl.Transaction, with or without the
// plugin, runs the closure once, exactly as db.Transaction, commits, and
// returns the closure's error as it is; settings for such a pool are
// refused, naming crl.OpenDB.
func TestSQLiteOwnPoolRunsOnce(t *testing.T) {
	db, err := gorm.Open(sqlite.Open(filepath.Join(t.TempDir(), "own.db")), &gorm.Config{Logger: logger.Discard})
	require.NoError(t, err)
	require.NoError(t, db.AutoMigrate(&item{}))

	for _, use := range []bool{false, true} {
		if use {
			require.NoError(t, db.Use(gormcrl.New()))
		}
		calls := 0
		require.NoError(t, gormcrl.Transaction(db, func(tx *gorm.DB) error {
			calls++
			return tx.Create(&item{Name: "pen"}).Error
		}))
		assert.Equal(t, 1, calls, "runs of the closure (plugin: %v)", use)

		calls = 0
		err = gormcrl.Transaction(db, func(*gorm.DB) error { calls++; return driver.ErrBadConn })
		assert.Same(t, driver.ErrBadConn, err, "the closure's error as it is (plugin: %v)", use)
		assert.Equal(t, 1, calls, "runs of the closure (plugin: %v)", use)
	}
	var n int64
	require.NoError(t, db.Model(&item{}).Count(&n).Error)
	assert.Equal(t, int64(2), n, "both commits")

	other, err := gorm.Open(sqlite.Open(filepath.Join(t.TempDir(), "other.db")), &gorm.Config{Logger: logger.Discard})
	require.NoError(t, err)
	err = other.Use(gormcrl.New(gormcrl.WithRetryExec("{badconn:2,10ms}")))
	assert.ErrorContains(t, err, "crl.OpenDB")
}
