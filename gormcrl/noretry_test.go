package gormcrl_test

import (
	"context"
	"testing"
	"time"

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

// A context given crl.WithoutRetry is NoRetry for every operation run
// with it: a read, a write (its implicit transaction) and
// gormcrl.Transaction run once, with and without the plugin.
func TestWithoutRetryContextIsNoRetry(t *testing.T) {
	for _, way := range []struct {
		name string
		open func(t *testing.T, s *mssqltest.Server) *gorm.DB
	}{
		{"crl.Open, no plugin", openOverCrl},
		{"gormcrl.Open", func(t *testing.T, s *mssqltest.Server) *gorm.DB { db, _ := open(t, s, nil); return db }},
	} {
		t.Run(way.name, func(t *testing.T) {
			s := mssqltest.NewServer(t)
			db := way.open(t, s).WithContext(crl.WithoutRetry(context.Background()))
			s.Handle(selectFirst, mssqltest.Error(1205), orderRow(7, "pen"))
			var o Order
			requireDeadlock(t, db.First(&o, 7).Error)
			require.Equal(t, 1, s.Count(selectFirst), "SELECTs")

			s.Handle(insertOrder, mssqltest.Error(1205), idRow(8))
			// Without the plugin GORM's error unwraps to the ROLLBACK's 3903
			// (go-mssqldb's answer for a victim's transaction), the deadlock
			// kept as text.
			require.ErrorContains(t, db.Create(&Order{Name: "pen"}).Error, "deadlocked")
			require.Equal(t, 1, s.Count(insertOrder), "INSERTs")

			s.Handle(updateOrder, mssqltest.Error(1205), mssqltest.Affected(1))
			runs := 0
			requireDeadlock(t, gormcrl.Transaction(db, func(tx *gorm.DB) error {
				runs++
				return tx.Exec(updateOrder, "cup", 7).Error
			}))
			require.Equal(t, 1, runs, "Transaction's runs")
			require.Equal(t, 1, s.Count(updateOrder), "UPDATEs")
		})
	}
}

// NoRetry reaches the read callbacks of the plugin however it was
// registered (Open; db.Use over a pool crl opened; Open with a copy of
// another DB's gorm.Config, whose plugin stays the one in the shared
// Plugins; db.Use over GORM's own pool, which the plugin opens again), on
// the query, row and raw
// processors, on a session made before the clause was first used and
// after WithContext replaced the context: each runs once. The same
// statements without the clause are retried.
func TestNoRetryReachesEveryRead(t *testing.T) {
	for _, way := range []struct {
		name string
		open func(t *testing.T, s *mssqltest.Server) *gorm.DB
	}{
		{"gormcrl.Open", func(t *testing.T, s *mssqltest.Server) *gorm.DB { db, _ := open(t, s, nil); return db }},
		{"db.Use over crl.Open", func(t *testing.T, s *mssqltest.Server) *gorm.DB {
			db := openOverCrl(t, s)
			require.NoError(t, db.Use(gormcrl.New()))
			return db
		}},
		{"a copy of another DB's gorm.Config, as dbresolver's sources", func(t *testing.T, s *mssqltest.Server) *gorm.DB {
			first, _ := open(t, s, nil)
			cfg := *first.Config // its Plugins, the map, hold first's plugin
			db, _ := open(t, s, &cfg)
			require.Same(t, first.Plugins[gormcrl.PluginName], db.Plugins[gormcrl.PluginName], "the plugin registered")
			return db
		}},
		{"Initialize called directly", func(t *testing.T, s *mssqltest.Server) *gorm.DB {
			db := openOverCrl(t, s)
			require.NoError(t, gormcrl.New().Initialize(db))
			return db
		}},
		{"db.Use over a DSN", func(t *testing.T, s *mssqltest.Server) *gorm.DB {
			db, err := gorm.Open(sqlserver.Open(s.DSN()), &gorm.Config{Logger: logger.Discard})
			require.NoError(t, err)
			require.NoError(t, db.Use(gormcrl.New(gormcrl.WithRetryExec(deadlockRules),
				config.WithClock(coretest.NewClock(time.Time{})), config.WithTxReplay(false))))
			t.Cleanup(func() {
				if sqlDB, err := db.DB(); err == nil {
					_ = sqlDB.Close()
				}
			})
			return db
		}},
	} {
		t.Run(way.name, func(t *testing.T) {
			s := mssqltest.NewServer(t)
			db := way.open(t, s)
			earlier := db.Session(&gorm.Session{})
			for _, st := range []struct {
				query string
				reply mssqltest.Reply
				run   func(db *gorm.DB) error
			}{
				{selectFirst, orderRow(7, "pen"), func(db *gorm.DB) error { var o Order; return db.First(&o, 7).Error }},
				{selectAll, orderRow(7, "pen"), func(db *gorm.DB) error { var o []Order; return db.Raw(selectAll).Scan(&o).Error }},
				{updateOrder, mssqltest.Affected(1), func(db *gorm.DB) error { return db.Exec(updateOrder, "cup", 7).Error }},
			} {
				s.Handle(st.query, mssqltest.Error(1205), st.reply)
				requireDeadlock(t, st.run(earlier.Clauses(gormcrl.NoRetry).WithContext(context.Background())))
				require.Equal(t, 1, s.Count(st.query), st.query)
				s.Handle(st.query, mssqltest.Error(1205), st.reply)
				require.NoError(t, st.run(db), st.query)
				require.Equal(t, 3, s.Count(st.query), st.query)
			}
		})
	}
}
