package gormcrl_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/driver/sqlserver"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/crl-go/crl"
	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/core/coretest"
	"github.com/crl-go/crl/gormcrl"
	"github.com/crl-go/crl/mssqltest"
)

// openOverCrl opens GORM over a pool crl.Open opened, without the plugin:
// the dialector is GORM's own, given the *sql.DB.
func openOverCrl(t *testing.T, s *mssqltest.Server) *gorm.DB {
	t.Helper()
	// Replay off: the helpers' own re-runs are under test.
	pool, err := crl.Open("sqlserver", s.DSN(), config.WithClock(coretest.NewClock(time.Time{})), crl.WithRetryExec(deadlockRules),
		config.WithTxReplay(false))
	require.NoError(t, err)
	t.Cleanup(func() { _ = pool.Close() })
	db, err := gorm.Open(sqlserver.New(sqlserver.Config{Conn: pool}), &gorm.Config{Logger: logger.Discard})
	require.NoError(t, err)
	return db
}

// Inside gormcrl.Transaction, tx.Statement.ConnPool is GORM's own
// *sql.Tx, over a crl pool with and without the plugin: code that checks
// it (a nested-transaction test) works as under db.Transaction.
func TestTransactionHandsGORMsOwnTx(t *testing.T) {
	for _, way := range []struct {
		name string
		open func(t *testing.T, s *mssqltest.Server) *gorm.DB
	}{
		{"crl.Open, no plugin", openOverCrl},
		{"gormcrl.Open", func(t *testing.T, s *mssqltest.Server) *gorm.DB { db, _ := open(t, s, nil); return db }},
	} {
		t.Run(way.name, func(t *testing.T) {
			s := mssqltest.NewServer(t)
			db := way.open(t, s)
			s.Handle(updateOrder, mssqltest.Error(1205), mssqltest.Affected(1))
			runs := 0
			err := gormcrl.Transaction(db, func(tx *gorm.DB) error {
				runs++
				_, isTx := tx.Statement.ConnPool.(*sql.Tx)
				assert.True(t, isTx, "ConnPool is %T", tx.Statement.ConnPool)
				if err := tx.Exec(audit).Error; err != nil {
					return err
				}
				return tx.Exec(updateOrder, "cup", 7).Error
			})
			require.NoError(t, err)
			assert.Equal(t, 2, runs, "re-run whole after the deadlock")
			assert.Equal(t, [][]string{{audit, updateOrder}}, s.Committed())
		})
	}
}

// A nested transaction (a savepoint) whose statement is the deadlock
// victim: the filter is checked against that statement, not the ROLLBACK
// TO SAVEPOINT that GORM sends after it and that fails too (the server
// already rolled the transaction back).
func TestTransactionFilterSeesTheStatementNotTheSavepointRollback(t *testing.T) {
	s := mssqltest.NewServer(t)
	pool, err := crl.Open("sqlserver", s.DSN(), config.WithClock(coretest.NewClock(time.Time{})),
		crl.WithRetryExec("{1205:3,0:update}"), config.WithTxReplay(false)) // the helper's own re-run
	require.NoError(t, err)
	defer pool.Close()
	db, err := gorm.Open(sqlserver.New(sqlserver.Config{Conn: pool}), &gorm.Config{Logger: logger.Discard})
	require.NoError(t, err)
	s.Handle(updateOrder, mssqltest.Error(1205), mssqltest.Affected(1))
	runs := 0
	err = gormcrl.Transaction(db, func(tx *gorm.DB) error {
		runs++
		return tx.Transaction(func(inner *gorm.DB) error {
			return inner.Exec(updateOrder, "cup", 7).Error
		})
	})
	require.NoError(t, err)
	assert.Equal(t, 2, runs)
}

// crl.Retry around GORM's own db.Transaction re-runs the unit after a
// deadlock: the driver layer finds the pool and the failed statement
// through the context.
func TestRetryAroundGORMsOwnTransaction(t *testing.T) {
	s := mssqltest.NewServer(t)
	db := openOverCrl(t, s)
	s.Handle(updateOrder, mssqltest.Error(1205), mssqltest.Affected(1))
	runs := 0
	err := crl.Retry(context.Background(), func(ctx context.Context) error {
		runs++
		return db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			if err := tx.Exec(audit).Error; err != nil {
				return err
			}
			return tx.Exec(updateOrder, "cup", 7).Error
		})
	})
	require.NoError(t, err)
	assert.Equal(t, 2, runs)
	assert.Equal(t, [][]string{{audit, updateOrder}}, s.Committed())
}

// GORM's statements over a crl pool without the plugin are retried by the
// driver layer.
func TestGORMOverACrlPoolRetriesStatements(t *testing.T) {
	s := mssqltest.NewServer(t)
	db := openOverCrl(t, s)
	s.Handle(selectFirst, mssqltest.Error(1205), orderRow(7, "pen"))
	var o Order
	require.NoError(t, db.First(&o, 7).Error)
	assert.Equal(t, "pen", o.Name)
	assert.Equal(t, 2, s.Count(selectFirst))
}

// A dialector whose DriverName is a crl.Register name opens its pool with
// crl inside.
func TestDialectorOverARegisteredName(t *testing.T) {
	s := mssqltest.NewServer(t)
	name, err := crl.Register("sqlserver", crl.WithRetryExec(deadlockRules), config.WithClock(coretest.NewClock(time.Time{})))
	require.NoError(t, err)
	db, err := gorm.Open(sqlserver.New(sqlserver.Config{DriverName: name, DSN: s.DSN()}), &gorm.Config{Logger: logger.Discard})
	require.NoError(t, err)
	sqlDB, err := db.DB()
	require.NoError(t, err)
	defer sqlDB.Close()
	s.Handle(selectFirst, mssqltest.Error(1205), orderRow(7, "pen"))
	var o Order
	require.NoError(t, db.First(&o, 7).Error)
	assert.Equal(t, 2, s.Count(selectFirst))
	_, ok := crl.RuntimeOf(sqlDB)
	assert.True(t, ok)
}

// A closure that commits its own transaction is told so; nothing is
// retried (issue 28, item 11).
func TestTransactionClosureThatCommitsIsToldSo(t *testing.T) {
	s := mssqltest.NewServer(t)
	db := openOverCrl(t, s)
	runs := 0
	err := gormcrl.Transaction(db, func(tx *gorm.DB) error {
		runs++
		return tx.Commit().Error
	})
	assert.ErrorIs(t, err, crl.ErrClosureEndedTx)
	assert.Equal(t, 1, runs)
}

// Over a pool crl opened, a statement keeps GORM's own ConnPool (the
// *sql.DB) in its callbacks and hooks: the driver layer retries it.
func TestStatementKeepsItsConnPoolOverACrlPool(t *testing.T) {
	s := mssqltest.NewServer(t)
	db, _ := open(t, s, nil)
	sqlDB, err := db.DB()
	require.NoError(t, err)
	var seen []gorm.ConnPool
	require.NoError(t, db.Callback().Query().Before("gorm:query").Register("test:see_pool", func(tx *gorm.DB) {
		seen = append(seen, tx.Statement.ConnPool)
	}))
	s.Handle(selectFirst, mssqltest.Error(1205), orderRow(7, "pen"))
	var o Order
	require.NoError(t, db.First(&o, 7).Error)
	assert.Equal(t, 2, s.Count(selectFirst))
	require.NotEmpty(t, seen)
	for _, p := range seen {
		assert.Same(t, sqlDB, p, "ConnPool is %T", p)
	}
}
