package gormcrl_test

import (
	"database/sql"
	"errors"
	"fmt"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/driver/mysql"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/conformance"
	"github.com/crl-go/crl/core/coretest"
	"github.com/crl-go/crl/gormcrl"
)

// foreignDialector is GORM's dialector of d's family over a pool of the
// user's (a Conn, no DSN): one crl did not open.
func foreignDialector(d conformance.Database, pool *sql.DB) gorm.Dialector {
	if d.Driver == "mysql" {
		return mysql.New(mysql.Config{Conn: pool})
	}
	return postgres.New(postgres.Config{Conn: pool})
}

// openForeign opens a *gorm.DB over a new sql.Open pool of d, and
// db.Use(plugin) on it, returning Use's error.
func openForeign(t *testing.T, d conformance.Database, plugin *gormcrl.Plugin) (*gorm.DB, error) {
	t.Helper()
	pool, err := sql.Open(d.Driver, d.DSN)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, pool.Close()) })
	db, err := gorm.Open(foreignDialector(d, pool), &gorm.Config{Logger: logger.Discard})
	require.NoError(t, err)
	return db, db.Use(plugin)
}

// Over a pool crl did not open, on MariaDB and PostgreSQL: settings given
// to New are refused with config.ErrForeignPoolSettings, naming
// crl.OpenDB; an observer given alone is accepted and told once per
// handle, at db.Use, that nothing there is retried (two handles over two
// pools, two events; none per statement or transaction); and
// gormcrl.Transaction runs its closure once, commits, and returns the
// closure's error as it is.
func TestForeignPoolObserverAndTransaction(t *testing.T) {
	conformance.EachDatabase(t, func(t *testing.T, d conformance.Database) {
		obs := &coretest.Observer{}
		_, err := openForeign(t, d, gormcrl.New(gormcrl.WithRetryExec("{deadlock:3,10ms}"), config.WithObserver(obs)))
		require.ErrorIs(t, err, config.ErrForeignPoolSettings)
		assert.ErrorContains(t, err, "crl.OpenDB")
		assert.ErrorContains(t, err, "gormcrl: retryExec given for")
		assert.Empty(t, obs.Snapshot().Reloads, "a refused plugin tells nobody")

		first, err := openForeign(t, d, gormcrl.New(config.WithObserver(obs)))
		require.NoError(t, err)
		second, err := openForeign(t, d, gormcrl.New(config.WithObserver(obs)))
		require.NoError(t, err)
		reloads := obs.Snapshot().Reloads
		require.Len(t, reloads, 2, "one event per handle")
		for _, e := range reloads {
			assert.Empty(t, e.Path)
			assert.ErrorIs(t, e.Err, config.ErrForeignPool)
			assert.ErrorContains(t, e.Err, "gormcrl: the "+first.Dialector.Name()+" pool")
		}

		table := fmt.Sprintf("gormcrl_foreign_obs_%d", time.Now().UnixNano())
		require.NoError(t, first.Table(table).Migrator().CreateTable(&pluginRow{}))
		t.Cleanup(func() { _ = first.Migrator().DropTable(table) })
		for _, db := range []*gorm.DB{first, second} {
			runs := 0
			require.NoError(t, gormcrl.Transaction(db, func(tx *gorm.DB) error {
				runs++
				return tx.Table(table).Create(&pluginRow{Name: "pen"}).Error
			}))
			assert.Equal(t, 1, runs, "runs of the closure")

			mine := errors.New("mine")
			runs = 0
			err := gormcrl.Transaction(db, func(tx *gorm.DB) error {
				runs++
				require.NoError(t, tx.Table(table).Create(&pluginRow{Name: "ink"}).Error)
				return mine
			})
			assert.ErrorIs(t, err, mine)
			assert.Same(t, mine, err, "the closure's error itself")
			assert.Equal(t, 1, runs, "runs of the closure")

			var rows []pluginRow
			require.NoError(t, db.Table(table).Find(&rows).Error)
		}
		var n int64
		require.NoError(t, first.Table(table).Where("name = ?", "pen").Count(&n).Error)
		assert.Equal(t, int64(2), n, "each handle's first transaction committed")
		require.NoError(t, first.Table(table).Where("name = ?", "ink").Count(&n).Error)
		assert.Zero(t, n, "each handle's second transaction rolled back")
		assert.Len(t, obs.Snapshot().Reloads, 2, "no event per statement or transaction")
		assert.Empty(t, obs.Snapshot().Retries, "nothing retried")
	})
}

// gormcrl.Open over a dialector that keeps a pool of the user's (a Conn,
// no DSN) applies the same rule as the plugin, on MariaDB and
// PostgreSQL: settings refused with config.ErrForeignPoolSettings, an
// observer alone told once that nothing there is retried.
func TestOpenOverAForeignPool(t *testing.T) {
	conformance.EachDatabase(t, func(t *testing.T, d conformance.Database) {
		open := func() *sql.DB {
			pool, err := sql.Open(d.Driver, d.DSN)
			require.NoError(t, err)
			t.Cleanup(func() { _ = pool.Close() }) // gorm.Open closes it on an error
			return pool
		}
		quiet := &gorm.Config{Logger: logger.Discard}

		_, err := gorm.Open(gormcrl.Open(foreignDialector(d, open()), gormcrl.WithRetryExec("{deadlock:3,10ms}")), quiet)
		require.ErrorIs(t, err, config.ErrForeignPoolSettings)
		assert.ErrorContains(t, err, "crl.OpenDB")

		obs := &coretest.Observer{}
		db, err := gorm.Open(gormcrl.Open(foreignDialector(d, open()), config.WithObserver(obs)), quiet)
		require.NoError(t, err)
		var one int
		require.NoError(t, db.Raw("SELECT 1").Scan(&one).Error)
		reloads := obs.Snapshot().Reloads
		require.Len(t, reloads, 1, "one event, at Open")
		assert.ErrorIs(t, reloads[0].Err, config.ErrForeignPool)
	})
}

// A setting refused over a pool of the caller's (gormcrl.Open with
// options over a dialector given a Conn) is gorm.Open's error, and the
// caller's pool stays open: GORM closes the pool it sees when a
// dialector's Initialize fails, and the refusal takes it out of sight
// first. Without options the same dialector opens, over the same pool.
func TestRefusalLeavesTheCallersPoolOpen(t *testing.T) {
	conformance.EachDatabase(t, func(t *testing.T, d conformance.Database) {
		pool, err := sql.Open(d.Driver, d.DSN)
		require.NoError(t, err)
		t.Cleanup(func() { assert.NoError(t, pool.Close()) })
		_, err = gorm.Open(gormcrl.Open(foreignDialector(d, pool), gormcrl.WithRetryExec("{deadlock:3,10ms}")),
			&gorm.Config{Logger: logger.Discard})
		require.ErrorIs(t, err, config.ErrForeignPoolSettings)
		require.NoError(t, pool.Ping(), "the caller's pool is still open")

		db, err := gorm.Open(gormcrl.Open(foreignDialector(d, pool)), &gorm.Config{Logger: logger.Discard})
		require.NoError(t, err)
		var one int
		require.NoError(t, db.Raw("SELECT 1").Scan(&one).Error)
		assert.Equal(t, 1, one)
	})
}
