package gormcrl_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/crl-go/crl"
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
